"use strict";
// The keyboard. In a game: 1-9 pick the card in that place of the hand as drawn (a hand never
// holds more than 9 cards, rule R12), or on a take the card of the beaten combo in that place;
// Enter plays or takes the selection, P passes, Escape clears, H asks for a hint, S switches the
// sort. In a replay: the arrows step, Home and End jump to the deal and the end, C goes to the
// next costliest decision of the review. The page's help lines (#keys-help) list the same keys.

function wireKeys() {
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return; // the browser's own shortcuts
    if (event.target.matches("input, select, textarea")) return; // typing a seed, a game number
    const done = !$("play").hidden ? gameKey(event) : !$("replays").hidden && replayKey(event);
    if (done) event.preventDefault();
  });
}

// A key during a game; true when it did something.
function gameKey(event) {
  if (!$("over").hidden) return false;
  const key = event.key.toLowerCase();
  // Enter plays a legal selection whatever has the focus (after a click on Hint, say); else a
  // focused button or link takes Enter, as the browser does.
  if (key === "enter") return press("submit");
  if (/^[1-9]$/.test(key)) return pickByPlace(Number(key) - 1);
  if (key === "p") return press("pass");
  if (key === "escape") return press("clear");
  if (key === "h") return press("hint-button");
  if (key === "s") {
    $("sort").value = $("sort").value === "colour" ? "value" : "colour";
    $("sort").dispatchEvent(new Event("change"));
    return true;
  }
  return false;
}

function press(id) {
  const button = $(id);
  if (button.disabled) return false;
  button.click();
  return true;
}

function pickByPlace(place) {
  if (!myTurn()) return false;
  const take = state.view.phase === "take";
  const names = take ? state.view.take_from : handOrder();
  if (place >= names.length) return false;
  pick(names[place], take);
  return true;
}

// A key in the replay viewer; true when it did something.
function replayKey(event) {
  if (!state.replay) return false;
  const step = { ArrowLeft: -1, ArrowRight: 1 }[event.key];
  if (step) showFrame(state.frame + step);
  else if (event.key === "Home") showFrame(0);
  else if (event.key === "End") showFrame(Infinity);
  else if (event.key.toLowerCase() === "c") nextCostliest();
  else return false;
  return true;
}
