"use strict";
// The page of odin-lab's web app: a game against the lab's agents, and the replay viewer.
// Everything shown comes from the server. During play the server sends only what the person's
// seat may see, so this page never holds another seat's hidden cards. A move is sent only when
// the selection is exactly one of the legal actions the server listed.
//
// The page's scripts are classic scripts sharing one global scope, loaded in this order:
// explain.js (why a selection is not a legal move), coach.js (hints and the game review),
// replay.js (the replay viewer and its move log), keys.js (the keyboard), then this file, which
// holds the shared helpers and the game in play, and starts the page last.

const $ = (id) => document.getElementById(id);
const COLOURS = { R: "red", Y: "yellow", G: "green", B: "blue", P: "purple", O: "orange" };
const ORDER = "RYGBPO";
const GOAT = "Goat"; // the Grumpy Goat's name (RULES G1-G5): no colour, the number 0
const ME = 0; // the person's seat (webapp.sessions.HUMAN)

const state = {
  agents: null, game: null, view: null, final: null, record: null,
  selected: new Set(), queue: [], busy: false,
  hint: null, // the coach's answer for a turn of the person: {turn, data} (coach.js)
  hintPending: false, // a hint is being computed: the button waits
  files: {}, // the records files listed, by key (replay.js)
  replay: null, frame: 0, // the replay open and the frame shown
  moveItems: [], trickOf: [], tricks: [], // the replay's move log: per frame, per trick
  review: null, // the review shown beside the replay's moves (coach.js)
};
window.odin = state; // for the browser test and the console

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const cardKey = (names) => [...names].sort().join(" ");

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || `the server answered ${response.status}`);
  return data;
}

function screen(id) {
  for (const name of ["setup", "play", "replays"]) $(name).hidden = name !== id;
  // A button left focused on a hidden screen would still take the keys (keys.js).
  const focused = document.activeElement;
  if (focused && focused.closest("[hidden]")) focused.blur();
}

// -- cards ---------------------------------------------------------------------------------

function card(name, extra) {
  const goat = name === GOAT;
  const tile = el("span", `card ${goat ? "c-goat" : `c-${name[0]}`}${extra ? " " + extra : ""}`);
  tile.dataset.card = name;
  tile.title = goat
    ? "the Grumpy Goat: number 0, joins cards of any one colour; 5 points if left in a hand"
    : `${COLOURS[name[0]]} ${name.slice(1)}`;
  tile.append(el("b", "", goat ? "0" : name.slice(1)), el("i", "", goat ? "goat" : name[0]));
  return tile;
}

function cardRow(names, extra) {
  const row = el("span", "cards");
  for (const name of names) row.append(card(name, extra));
  return row;
}

function backs(count) {
  const row = el("span", "backs");
  for (let i = 0; i < count; i++) row.append(el("span", "back"));
  return row;
}

function sorted(names, by) {
  const key = (n) => n === GOAT ? 100 // the Goat last, whatever the order
    : by === "value"
    ? Number(n.slice(1)) * 10 + ORDER.indexOf(n[0])
    : ORDER.indexOf(n[0]) * 10 + Number(n.slice(1));
  return [...names].sort((a, b) => key(a) - key(b));
}

// -- drawing a table (play and replay) -----------------------------------------------------

function seatPanel(view, seat, showHand) {
  const s = view.seats[seat];
  const panel = el("div", "seat");
  panel.dataset.seat = seat;
  if (view.phase !== "over" && view.current === seat) panel.classList.add("current");
  if (view.table && view.table.owner === seat) panel.classList.add("owner");
  if (view.winners.includes(seat)) panel.classList.add("winner");
  const head = el("div", "seat-head");
  head.append(el("strong", "", s.name), el("span", "total", `total ${s.total}`));
  panel.append(head);
  if (view.table && view.table.owner === seat) panel.append(el("div", "tag", "played the table's combo"));
  if (showHand && s.hand !== null) {
    panel.append(cardRow(sorted(s.hand, $("sort").value), "small"));
  } else {
    const row = el("div", "count");
    row.append(backs(s.hand_size), el("span", "muted", `${s.hand_size} card${s.hand_size === 1 ? "" : "s"}`));
    panel.append(row);
  }
  if (s.known.length && !(showHand && s.hand !== null)) {
    const known = el("div", "known", "holds ");
    known.append(cardRow(s.known, "small"));
    panel.append(known);
  }
  return panel;
}

function tableZone(view, takeClickable) {
  const zone = el("div");
  const names = view.seats.map((s) => s.name);
  if (view.phase === "over") {
    zone.append(el("div", "label", "The game is over"));
  } else if (view.table) {
    zone.append(el("div", "label", `On the table: ${view.table.number}, by ${names[view.table.owner]}`));
    zone.append(cardRow(view.table.cards, "big"));
  } else {
    zone.append(el("div", "label", `${names[view.current]} to lead a new trick`));
    zone.append(el("div", "empty-table"));
  }
  if (view.take_from.length) {
    const take = el("div", "take");
    const taker = view.current === view.viewer && names[view.current] === "You"
      ? "You beat it: take one card of" : `${names[view.current]} beat it and takes one of`;
    take.append(el("div", "label", taker));
    take.append(cardRow(view.take_from, takeClickable ? "big pickable" : "big"));
    zone.append(take);
  }
  const discard = el("div", "discard");
  discard.append(el("span", "label", `Discard (${view.discard.length})`));
  discard.append(cardRow(view.discard, "tiny"));
  zone.append(discard);
  return zone;
}

function scoreTable(table, view) {
  table.replaceChildren();
  const head = el("tr");
  head.append(el("th", "", "Hand"));
  view.seats.forEach((s) => {
    // "planner (seat 2)" is shown as "planner" over "seat 2", so that narrow columns fit.
    // A name too long for its column ends in an ellipsis; the seat under it tells them apart.
    const [agent, seat] = s.name.split(" (");
    const cell = el("th");
    cell.append(el("span", "agent", agent));
    cell.title = s.name;
    if (seat) cell.append(el("small", "", ` ${seat.replace(")", "")}`));
    head.append(cell);
  });
  table.append(head);
  view.history.forEach((penalties, h) => {
    const row = el("tr");
    row.append(el("td", "", String(h + 1)));
    penalties.forEach((p) => row.append(el("td", "", String(p))));
    table.append(row);
  });
  const low = Math.min(...view.seats.map((s) => s.total));
  const total = el("tr", "totals");
  total.append(el("td", "", "Total"));
  view.seats.forEach((s) => total.append(el("td", s.total === low ? "low" : "", String(s.total))));
  table.append(total);
}

// -- a new game ----------------------------------------------------------------------------

async function setup() {
  state.agents = await api("GET", "/api/agents");
  const players = $("players");
  for (const n of state.agents.players) players.append(new Option(`${n} players`, n));
  players.value = "4";
  players.onchange = drawOpponents;
  $("goat").onchange = drawOpponents;
  $("threshold").value = state.agents.threshold;
  $("threshold").max = state.agents.max_threshold;
  const notes = Object.entries(state.agents.notes).map(([a, text]) => `${a}: ${text}`);
  $("agent-note").textContent = notes.join(" · ");
  drawOpponents();
}

function drawOpponents() {
  const box = $("opponents");
  const before = [...box.querySelectorAll("select")].map((s) => s.value);
  box.replaceChildren();
  for (let seat = 1; seat < Number($("players").value); seat++) {
    const select = el("select");
    select.id = `opponent-${seat}`;
    // With the Goat, only the agents that play it are offered.
    const offered = $("goat").checked ? state.agents.goat : state.agents.agents;
    for (const name of offered) select.append(new Option(name, name));
    const first = state.agents.defaults[seat - 1];
    select.value = offered.includes(before[seat - 1]) ? before[seat - 1]
      : offered.includes(first) ? first : "planner";
    const label = el("label", "", `Seat ${seat} `);
    label.append(select);
    box.append(label);
  }
}

async function startGame(event) {
  event.preventDefault();
  $("setup-error").textContent = "";
  const players = Number($("players").value);
  const body = { players, threshold: Number($("threshold").value), opponents: [] };
  for (let seat = 1; seat < players; seat++) body.opponents.push($(`opponent-${seat}`).value);
  if ($("seed").value !== "") body.seed = Number($("seed").value);
  if ($("goat").checked) body.goat = true;
  Object.assign(state, { game: null, view: null }); // the previous game's view is gone
  try {
    begin(await api("POST", "/api/games", body), []);
  } catch (error) {
    $("setup-error").textContent = error.message;
  }
}

function begin(data, log) {
  Object.assign(state, { game: data.game_id, view: null, record: null, queue: [], hint: null });
  state.selected.clear();
  $("log").replaceChildren();
  for (const text of log) addLog({ text, seat: -1 });
  $("over").hidden = true;
  $("announce").replaceChildren();
  $("play-error").textContent = "";
  $("threshold-note").textContent = `to ${data.view.threshold}`;
  showNotes(data);
  history.replaceState(null, "", `#play/${data.game_id}`);
  screen("play");
  receive(data);
}

// The server's notes on the agents (one that plays a table size it was not trained for), and a
// save it could not make (a full disk): said while the game goes on, not only at its end.
function showNotes(data) {
  const notes = (data.notes || []).map((text) => `Note: ${text}`);
  if (data.save_error && !data.over) notes.push(`Not saved: ${data.save_error}`);
  $("table-notes").replaceChildren(...notes.map((text) => el("div", "", text)));
  $("table-notes").hidden = !notes.length;
}

// -- playing: events one at a time, then the person's turn ---------------------------------

function receive(data) {
  state.queue.push(...data.events);
  state.final = data;
  if (!state.busy) playback();
}

async function playback() {
  state.busy = true;
  drawControls();
  while (state.queue.length) {
    const event = state.queue.shift();
    state.view = event.view;
    state.view.legal = [];
    draw();
    announce(event);
    addLog(event);
    const pause = Number($("speed").value) * (event.hand_end ? 2.5 : event.seat === ME ? 0.4 : 1);
    if (pause) await sleep(pause);
  }
  const data = state.final;
  state.busy = false;
  state.view = data.view;
  state.record = data.record;
  showNotes(data);
  draw();
  if (data.over) gameOver(data);
}

function announce(event) {
  const box = $("announce");
  box.replaceChildren(el("div", "last", event.text));
  if (event.hand_end) {
    const names = event.view.seats.map((s) => s.name);
    const end = el("div", "hand-end");
    end.append(el("strong", "", `Hand ${event.hand_end.hand} is over`));
    const list = el("ul");
    event.hand_end.penalties.forEach((p, s) => {
      list.append(el("li", "", `${names[s]}: +${p} (total ${event.hand_end.totals[s]})`));
    });
    end.append(list);
    box.append(end);
  }
}

function addLog(event) {
  const item = el("li", event.seat === ME ? "mine" : "", event.text);
  if (event.hand_end) {
    item.classList.add("hand-end");
    item.textContent += ` · penalties ${event.hand_end.penalties.join(" / ")}`;
  }
  $("log").append(item);
  // Scroll the log only: scrollIntoView would also scroll the page on a phone, where the log
  // sits below the table.
  $("log").scrollTop = $("log").scrollHeight;
}

function myTurn() {
  const v = state.view;
  return Boolean(v && !state.busy && v.phase !== "over" && v.current === ME && v.legal.length);
}

function selectedAction() {
  if (!myTurn() || !state.selected.size) return null;
  const key = cardKey(state.selected);
  return state.view.legal.find((a) => a.kind !== "pass" && cardKey(a.cards) === key) || null;
}

function draw() {
  const v = state.view;
  if (!v) return;
  const names = v.seats.map((s) => s.name);
  let status = `Hand ${v.hand_number} · threshold ${v.threshold} · `;
  if (v.phase === "over") status += "game over";
  else if (v.current !== ME) status += `${names[v.current]} to play`;
  else status += { lead: "your lead", follow: "your turn: beat the table or pass", take: "take a card" }[v.phase];
  $("status").textContent = status;
  const seats = $("seats");
  seats.replaceChildren();
  for (let s = 0; s < v.players; s++) if (s !== ME) seats.append(seatPanel(v, s, false));
  const zone = $("table-zone");
  zone.replaceChildren(tableZone(v, myTurn() && v.phase === "take"));
  zone.querySelectorAll(".pickable").forEach((tile, place) => {
    tile.onclick = () => pick(tile.dataset.card, true);
    tile.append(el("u", "key", String(place + 1))); // the number key that takes it
  });
  drawMe();
  drawControls();
  drawHint(); // coach.js: the hint's numbers on the cards and the moves, when asked for
  scoreTable($("scores"), v);
}

// The person's hand as drawn, left to right: the number keys pick cards in this order.
function handOrder() {
  return sorted(state.view.seats[ME].hand, $("sort").value);
}

function drawMe() {
  const v = state.view;
  const mine = v.seats[ME];
  const box = $("me");
  box.replaceChildren();
  box.classList.toggle("current", v.phase !== "over" && v.current === ME);
  const head = el("div", "seat-head");
  head.append(el("strong", "", "Your hand"), el("span", "total", `total ${mine.total}`));
  box.append(head);
  // On a follow, the cards of some play that beats the table are outlined. On a lead every
  // card may be led alone, so an outline would tell nothing: none is drawn.
  const playable = new Set();
  if (myTurn() && v.phase === "follow") {
    for (const a of v.legal) if (a.kind === "play") a.cards.forEach((c) => playable.add(c));
  }
  const row = el("div", "cards hand");
  handOrder().forEach((name, place) => {
    let extra = "";
    if (myTurn() && v.phase === "follow") extra = playable.has(name) ? "playable" : "dim";
    if (state.selected.has(name)) extra += " selected";
    const tile = card(name, extra);
    tile.append(el("u", "key", String(place + 1))); // the number key that picks it
    tile.onclick = () => pick(name, false);
    row.append(tile);
  });
  box.append(row);
}

function pick(name, fromTake) {
  if (!myTurn() || fromTake !== (state.view.phase === "take")) return;
  if (fromTake) state.selected.clear();
  if (state.selected.has(name)) state.selected.delete(name);
  else state.selected.add(name);
  $("play-error").textContent = "";
  draw();
}

function drawControls() {
  const action = selectedAction();
  const turn = myTurn();
  const v = state.view;
  const submit = $("submit");
  submit.disabled = !action;
  submit.textContent = action ? `${action.kind === "take" ? "Take" : "Play"} ${action.cards.join(" ")}` : "Play";
  $("pass").disabled = !(turn && v.legal.some((a) => a.kind === "pass"));
  $("pass").textContent = "Pass"; // a hint adds its chance to win (coach.js)
  $("pass").classList.remove("coach-best");
  $("clear").disabled = !state.selected.size;
  drawHintButton(); // coach.js
  const illegal = turn && state.selected.size > 0 && !action;
  const hint = $("hint");
  hint.replaceChildren();
  if (state.busy) hint.textContent = "The others are playing…";
  else if (illegal) hint.append(...whyIllegal([...state.selected], v)); // explain.js
  else if (turn) hint.textContent = turnHelp(v); // explain.js
  hint.classList.toggle("warn", illegal);
}

async function send(action) {
  if (!action || !myTurn()) return;
  state.busy = true;
  drawControls();
  try {
    const data = await api("POST", `/api/games/${state.game}/move`, { action: action.action, turn: state.view.turn });
    state.selected.clear();
    state.busy = false;
    receive(data);
  } catch (error) {
    state.busy = false;
    $("play-error").textContent = error.message;
    draw();
  }
}

function pass() {
  if (myTurn()) send(state.view.legal.find((a) => a.kind === "pass"));
}

function clearSelection() {
  state.selected.clear();
  draw();
}

function gameOver(data) {
  const v = data.view;
  const names = v.seats.map((s) => s.name);
  let title = v.winners.map((s) => names[s]).join(" and ") + (v.winners.length > 1 ? " share the win" : " wins");
  if (v.winners.length === 1 && v.winners[0] === ME) title = "You win!";
  $("over-title").textContent = `Game over: ${title}`;
  scoreTable($("over-scores"), v);
  $("over-saved").textContent = data.record ? savedText(data.record) : data.save_error || "";
  $("watch").disabled = $("over-review").disabled = !data.record;
  $("over").hidden = false;
}

// Where the finished game's record is: its path on the server's disk when the server says it,
// and the name under which the replay list shows it.
function savedText(record) {
  const listed = `listed under Replays as ${record.file}`;
  return record.path ? `Saved as ${record.path} (${listed})` : `Saved: ${listed}`;
}

// -- wiring --------------------------------------------------------------------------------

function wire() {
  $("new-game").onsubmit = startGame;
  $("nav-new").onclick = () => { screen("setup"); history.replaceState(null, "", "#"); };
  $("nav-replays").onclick = () => showReplays();
  $("submit").onclick = () => send(selectedAction());
  $("pass").onclick = pass;
  $("clear").onclick = clearSelection;
  $("hint-button").onclick = () => askHint(); // coach.js
  $("sort").onchange = () => { draw(); if (state.replay) showFrame(state.frame); };
  $("again").onclick = () => { $("over").hidden = true; screen("setup"); };
  $("watch").onclick = () => watchRecord(false); // replay.js
  $("over-review").onclick = () => watchRecord(true);
  wireReplays(); // replay.js
  wireReview(); // coach.js
  wireKeys(); // keys.js
}

async function main() {
  wire();
  try {
    await setup();
  } catch (error) {
    $("setup-error").textContent = error.message;
  }
  const resume = location.hash.match(/^#play\/([\w-]+)$/);
  if (resume) {
    try {
      const data = await api("GET", `/api/games/${resume[1]}`);
      begin(data, data.log);
    } catch (error) {
      $("setup-error").textContent = error.message;
    }
  } else if (location.hash === "#replays") {
    showReplays();
  }
}

main();
