"use strict";
// The coach: the search's view of the person's moves. A hint (POST /api/games/{id}/hint) scores
// every candidate of the turn at hand from the person's observation alone: its chance to win
// the game and the penalty expected, the best marked. A review (POST /api/review) scores every
// decision of one seat of a recorded game: the value of the move made and of the search's best,
// and the loss between them; it is shown beside each move of the replay's log.

const LONGER_MS = 3000; // "Think longer": the server's default budget is 1 s, its most 5 s
const percent = (x) => `${Math.round(x * 100)}%`;
const points = (x) => x.toFixed(1);

// -- hints ---------------------------------------------------------------------------------

function hintShown() {
  return Boolean(state.hint && myTurn() && state.hint.turn === state.view.turn);
}

function drawHintButton() {
  const button = $("hint-button");
  button.disabled = !myTurn() || Boolean(state.hintPending);
  button.textContent = state.hintPending ? "Thinking…" : "Hint";
}

// Asks the server for a hint on the turn at hand, within `ms` milliseconds (its default when
// not given). The turn is sent too: a hint for a turn already played is refused (409).
async function askHint(ms) {
  if (!myTurn() || state.hintPending) return;
  const turn = state.view.turn;
  state.hintPending = true;
  drawHintButton();
  $("play-error").textContent = "";
  try {
    const data = await api("POST", `/api/games/${state.game}/hint`, ms ? { ms, turn } : { turn });
    state.hint = { turn, data };
  } catch (error) {
    $("play-error").textContent = error.message;
  } finally {
    state.hintPending = false;
    draw();
  }
}

// The server's label ("Y8 O8", "pass", "take O2") with its verb, as the buttons say it.
function moveLabel(c) {
  const text = c.kind === "play" ? `play ${c.label}` : c.label;
  return text[0].toUpperCase() + text.slice(1);
}

// The hint on the page: a list of every candidate (click one to select its cards), the chance to
// win on each card that is a candidate alone (a lead's card, a card to take) and on Pass, and a
// star on the cards of the best candidate.
function drawHint() {
  const box = $("coach");
  if (!hintShown()) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  const data = state.hint.data;
  const head = el("div", "coach-head", "The search's view of your moves");
  const layouts = data.worlds ? ` · ${data.worlds} layouts of the unseen cards` : "";
  head.append(el("small", "", `${layouts} · ${Math.round(data.elapsed_ms)} ms`));
  if (data.budget_ms < LONGER_MS) {
    const longer = el("button", "longer", "Think longer");
    longer.type = "button";
    longer.id = "hint-longer";
    longer.title = `ask again with ${LONGER_MS / 1000} s: more layouts, surer numbers`;
    longer.onclick = () => askHint(LONGER_MS);
    head.append(longer);
  }
  const list = el("ol", "candidates");
  for (const c of data.candidates) list.append(candidateRow(c)); // the server's order: best first
  const legend = el("small", "legend", "win: the chance to win the game after the move · "
    + "penalty: the points expected at the end of this hand");
  box.replaceChildren(head, list, legend);
  box.hidden = false;
  for (const c of data.candidates) markCards(c);
}

function candidateRow(c) {
  const row = el("li", c.best ? "candidate best" : "candidate");
  row.dataset.action = c.action;
  const button = el("button", "", "");
  button.type = "button";
  button.append(
    el("span", "star", c.best ? "\u2605" : ""),
    el("span", "what", moveLabel(c)),
    el("span", "win", `win ${percent(c.win)}`),
    el("span", "pen", `penalty ${points(c.penalty)}`),
  );
  button.title = c.best ? "the search's best move" : "";
  button.onclick = () => chooseCandidate(c);
  row.append(button);
  return row;
}

// Clicking a candidate selects its cards, as clicking them would; Pass stays the Pass button's.
function chooseCandidate(c) {
  state.selected = new Set(c.cards);
  draw();
  if (c.kind === "pass") $("pass").focus();
  else $("submit").focus();
}

function markCards(c) {
  const where = c.kind === "take" ? "#table-zone .pickable" : "#me .card";
  if (c.kind === "pass") {
    $("pass").textContent = `Pass · ${percent(c.win)}`;
    $("pass").classList.toggle("coach-best", c.best);
    return;
  }
  for (const name of c.cards) {
    const tile = document.querySelector(`${where}[data-card="${name}"]`);
    if (!tile) continue;
    if (c.best) tile.classList.add("coach-best");
    if (c.cards.length === 1) tile.append(el("span", "odds", percent(c.win)));
  }
}

// -- the review of a recorded game ---------------------------------------------------------

function wireReview() {
  $("rv-run").onclick = () => runReview(Number($("rv-seat").value));
}

// The seats a review may be asked for. From one seat's view only that seat: another seat's
// review names the moves it could have made, and so the cards in its hand. The one offered
// first: the seat of the review shown, else the seat viewed, else the person's seat of a web
// game ("human"), else seat 0.
function reviewChoices(r) {
  const select = $("rv-seat");
  select.replaceChildren();
  r.names.forEach((name, s) => {
    const option = new Option(name, String(s));
    option.disabled = r.viewer !== null && s !== r.viewer;
    if (option.disabled) option.title = "its review would show its cards: view all hands open to review it";
    select.append(option);
  });
  const person = r.names.findIndex((name) => name.startsWith("human "));
  let seat = Math.max(person, 0);
  if (state.review) seat = state.review.seat;
  else if (r.viewer !== null) seat = r.viewer;
  select.value = String(seat);
}

async function runReview(seat) {
  const r = state.replay;
  if (!r) return;
  $("rv-error").textContent = "";
  $("rv-run").disabled = true;
  $("rv-run").textContent = "Reviewing…";
  $("rv-summary").textContent = "The search scores every decision of the seat: this takes a while.";
  try {
    const data = await api("POST", "/api/review", { file: r.file, game: r.game, seat });
    if (state.replay === r) state.review = data;
  } catch (error) {
    $("rv-error").textContent = error.message;
  } finally {
    $("rv-run").disabled = false;
    $("rv-run").textContent = "Review";
    drawReview();
  }
}

// A decision's move in the log: the review's `frame` counts every decision, forced ones
// included, from 0, so the move is the replay's frame after it.
const frameOfDecision = (d) => d.frame + 1;

// A review's label ("Y8 O8", "pass", "take O2") with its verb.
const spoken = (label) => (label === "pass" || label.startsWith("take ") ? label : `play ${label}`);

// The summary, the costliest decisions as buttons that jump to them, and one note beside each
// decision of the seat in the move log: a tick where the search agrees, else the win chance and
// the points lost against the search's best move, which it names.
function drawReview() {
  const rv = state.review;
  const r = state.replay;
  for (const old of $("rp-log").querySelectorAll(".rv")) old.remove();
  $("rp-log").querySelectorAll(".reviewed").forEach((item) => item.classList.remove("reviewed", "agreed", "lost", "costly"));
  $("rv-costliest").replaceChildren();
  if (!rv || !r) {
    $("rv-summary").textContent = "";
    return;
  }
  const s = rv.summary;
  let summary = `${r.names[rv.seat]}: ${s.decisions} decisions, ${percent(s.agreed)} as the search would, `
    + `${s.points_lost_per_hand.toFixed(2)} points lost per hand`;
  if (s.hinted) summary += `, ${s.hinted} after a hint`;
  $("rv-summary").textContent = summary;
  const costly = new Set(rv.costliest);
  for (const d of rv.decisions) noteDecision(d, costly.has(d.step));
  drawCostliest(rv);
}

function decisionNote(d) {
  const signed = (x) => `${x >= 0 ? "+" : "\u2212"}${Math.abs(x).toFixed(1)}`;
  let text = d.action === d.best_action ? "\u2713 the search's move"
    : `\u2212${percent(d.loss)} to win, ${signed(d.points_lost)} points · best: ${spoken(d.best_label)}`;
  if (d.hinted) text += " · hint asked";
  return text;
}

function noteDecision(d, costly) {
  const item = state.moveItems[frameOfDecision(d)];
  if (!item) return;
  item.classList.add("reviewed", d.action === d.best_action ? "agreed" : "lost");
  if (costly) item.classList.add("costly");
  const note = el("span", "rv", decisionNote(d));
  note.title = `win ${percent(d.value)} (best ${percent(d.best_value)}), `
    + `penalty ${d.penalty.toFixed(1)} (best ${d.best_penalty.toFixed(1)})`;
  item.append(note);
}

function drawCostliest(rv) {
  const box = $("rv-costliest");
  if (!rv.costliest.length) return;
  box.append(el("span", "label", "Costliest:"));
  const byStep = Object.fromEntries(rv.decisions.map((d) => [d.step, d]));
  for (const step of rv.costliest) {
    const d = byStep[step];
    const jump = el("button", "jump", `move ${frameOfDecision(d)} \u2212${percent(d.loss)}`);
    jump.type = "button";
    jump.dataset.frame = frameOfDecision(d);
    jump.title = `${spoken(d.label)}; the search: ${spoken(d.best_label)}`;
    jump.onclick = () => {
      showFrame(frameOfDecision(d));
      // On a phone the table is far above the review: bring its caption into sight.
      $("rp-caption").scrollIntoView({ block: "nearest" });
    };
    box.append(jump);
  }
}

// The key C: the next costliest decision after the frame shown (in move order), round again
// after the last.
function nextCostliest() {
  const rv = state.review;
  if (!rv || !rv.costliest.length) return;
  const byStep = Object.fromEntries(rv.decisions.map((d) => [d.step, d]));
  const frames = rv.costliest.map((step) => frameOfDecision(byStep[step])).sort((a, b) => a - b);
  showFrame(frames.find((k) => k > state.frame) ?? frames[0]);
}
