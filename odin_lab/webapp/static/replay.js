"use strict";
// The replay viewer: a recorded game as frames (frame 0 the deal, frame k the state after
// decision k), stepped through from every hand open or from one seat's view, with a log of every
// move beside it: move k of the log is frame k.

async function listRecords(select) {
  $("rec-error").textContent = "";
  const data = await api("GET", "/api/records");
  state.files = Object.fromEntries(data.files.map((f) => [f.file, f]));
  const files = $("rec-file");
  files.replaceChildren();
  for (const f of data.files) {
    const label = f.error ? `${f.file} (cannot replay)` : `${f.file} · ${f.games} game${f.games === 1 ? "" : "s"} · ${f.specs.join(", ")}`;
    const option = new Option(label, f.file);
    option.disabled = Boolean(f.error);
    option.title = f.error || "";
    files.append(option);
  }
  if (select) files.value = select;
  seatChoices();
  if (!data.files.length) $("rec-error").textContent = "No records files yet: finish a game, or start the server with --records DIR.";
}

// The View choices for the file picked in the list, before it is opened: the seat chosen stays
// chosen (a seat's view hides the other hands; falling back to every hand open would spoil
// them), or becomes seat 0 when this file's games have fewer seats.
function seatChoices() {
  const entry = state.files[$("rec-file").value];
  const r = state.replay;
  if (!entry || !entry.players || (r && r.file === entry.file)) return;
  const select = $("rec-seat");
  const chosen = select.value;
  select.replaceChildren(new Option("all hands open", "all"));
  for (let s = 0; s < entry.players; s++) select.append(new Option(`as seat ${s}`, String(s)));
  select.value = chosen === "all" || Number(chosen) < entry.players ? chosen : "0";
}

async function openReplay(file, game, seat, frame) {
  try {
    const query = new URLSearchParams({ file, game, seat });
    const data = await api("GET", `/api/replay?${query}`);
    const same = state.replay && state.replay.file === data.file && state.replay.game === data.game;
    state.replay = data;
    // A review belongs to one game of one file, and from one seat's view only its own is shown:
    // another seat's would name the cards that seat held.
    const hidden = state.review && data.viewer !== null && state.review.seat !== data.viewer;
    if (!same || hidden) state.review = null;
    const seats = $("rec-seat");
    seats.replaceChildren(new Option("all hands open", "all"));
    data.names.forEach((name, s) => seats.append(new Option(`as ${name}`, String(s))));
    seats.value = seat;
    $("rec-file").value = file;
    $("rec-game").value = game;
    $("rec-game").max = data.games - 1;
    $("rp-slider").max = data.frames.length - 1;
    $("rec-error").textContent = "";
    $("replay").hidden = false;
    buildMoveLog(data);
    reviewChoices(data); // coach.js
    drawReview();
    showFrame(frame || 0);
  } catch (error) {
    $("rec-error").textContent = error.message;
  }
}

// The log of every move, built once per replay; showFrame marks the current move and its trick.
// A trick starts with a lead, so its moves run from one lead to the move before the next.
function buildMoveLog(r) {
  const log = $("rp-log");
  log.replaceChildren();
  state.moveItems = [null]; // frame k's entry; the deal (frame 0) has none
  state.trickOf = [0];
  state.tricks = [[]];
  let hand = 0;
  for (let k = 1; k < r.frames.length; k++) {
    const before = r.frames[k - 1].view;
    const event = r.frames[k].event;
    if (before.hand_number !== hand) {
      hand = before.hand_number;
      log.append(el("li", "hand-head", `Hand ${hand}`));
    }
    if (before.phase === "lead") state.tricks.push([]);
    const item = moveItem(k, event);
    state.moveItems.push(item);
    state.trickOf.push(state.tricks.length - 1);
    state.tricks[state.tricks.length - 1].push(item);
    log.append(item);
  }
}

function moveItem(k, event) {
  const item = el("li", "move");
  item.dataset.frame = k;
  item.append(el("span", "n", String(k)), el("span", "text", event.text));
  if (event.forced) item.classList.add("forced");
  if (event.trick_won_by !== null) item.classList.add("trick-end");
  if (event.hand_end) {
    item.classList.add("hand-end");
    item.querySelector(".text").textContent += ` · penalties ${event.hand_end.penalties.join(" / ")}`;
  }
  item.onclick = () => showFrame(k);
  return item;
}

// Marks frame k's move and the other moves of its trick, and scrolls the log (not the page) to it.
function markMove(k) {
  const log = $("rp-log");
  log.querySelectorAll(".current, .this-trick").forEach((item) => item.classList.remove("current", "this-trick"));
  if (k === 0) {
    log.scrollTop = 0;
    return;
  }
  for (const item of state.tricks[state.trickOf[k]]) item.classList.add("this-trick");
  const item = state.moveItems[k];
  item.classList.add("current");
  log.scrollTop = item.offsetTop - log.clientHeight / 2;
}

function showFrame(k) {
  const r = state.replay;
  if (!r) return;
  const last = r.frames.length - 1;
  state.frame = Math.max(0, Math.min(last, k));
  const { view, event } = r.frames[state.frame];
  $("rp-status").textContent = `Hand ${view.hand_number} · threshold ${view.threshold} · ${r.file} game ${r.game}`;
  let caption = event ? event.text : "The deal";
  if (event && event.hand_end) {
    const names = view.seats.map((seat) => seat.name);
    caption += ` · penalties ${event.hand_end.penalties.map((p, seat) => `${names[seat]} +${p}`).join(", ")}`;
  }
  if (event && event.game_over) caption += " · Game over.";
  $("rp-caption").textContent = caption;
  const seats = $("rp-seats");
  seats.replaceChildren();
  for (let s = 0; s < view.players; s++) seats.append(seatPanel(view, s, true));
  $("rp-table").replaceChildren(tableZone(view, false));
  scoreTable($("rp-scores"), view);
  $("rp-slider").value = state.frame;
  $("rp-counter").textContent = `${state.frame} / ${last}`;
  $("rp-first").disabled = $("rp-prev").disabled = state.frame === 0;
  $("rp-next").disabled = $("rp-last").disabled = state.frame === last;
  markMove(state.frame);
}

function showReplays(select) {
  screen("replays");
  history.replaceState(null, "", "#replays");
  return listRecords(select).catch((error) => ($("rec-error").textContent = error.message));
}

// The game-over panel's buttons: the finished game's replay, with every hand open (the game is
// over, nothing is left to spoil), and its review of the person's seat when asked for.
async function watchRecord(review) {
  const record = state.record;
  $("over").hidden = true;
  showReplays(record.file);
  await openReplay(record.file, record.game, "all", 0);
  if (review && state.replay) {
    $("rv-seat").value = String(ME);
    await runReview(ME); // coach.js
  }
}

function wireReplays() {
  // Open keeps the view chosen: a seat's view stays a seat's view.
  $("rec-open").onclick = () => openReplay($("rec-file").value, Number($("rec-game").value), $("rec-seat").value, 0);
  $("rec-refresh").onclick = () => listRecords($("rec-file").value);
  $("rec-file").onchange = seatChoices;
  $("rec-seat").onchange = () => {
    const r = state.replay;
    if (r && r.file === $("rec-file").value) openReplay(r.file, r.game, $("rec-seat").value, state.frame);
  };
  $("rp-first").onclick = () => showFrame(0);
  $("rp-prev").onclick = () => showFrame(state.frame - 1);
  $("rp-next").onclick = () => showFrame(state.frame + 1);
  $("rp-last").onclick = () => showFrame(Infinity);
  $("rp-slider").oninput = () => showFrame(Number($("rp-slider").value));
}
