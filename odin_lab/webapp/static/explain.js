"use strict";
// Why a selection of cards is not a legal move, in the words of the rules (docs/rules.md, the
// page's rules.html). The server's list of legal actions decides what may be sent; this file
// only explains a refusal, so that "not legal" comes with the rule that makes it so.

const RULES_PAGE = "/static/rules.html";

const valueOf = (name) => (name === GOAT ? 0 : Number(name.slice(1)));

// R4: one card, or cards that share one colour, or cards that share one value. G2: the Goat
// joins cards of one colour (as a 0), never cards of one value.
function isCombo(names) {
  const coloured = names.filter((n) => n !== GOAT);
  if (coloured.length < names.length) return coloured.every((n) => n[0] === coloured[0][0]);
  return names.length > 0 && (
    names.every((n) => n[0] === names[0][0]) || names.every((n) => valueOf(n) === valueOf(names[0])));
}

// R5: the values from highest to lowest, read as a decimal number.
function comboNumber(names) {
  return Number(names.map(valueOf).sort((a, b) => b - a).join(""));
}

const cardsText = (names) => sorted(names, "colour").join(" ");
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// A sentence and a link to the rule it comes from, as nodes for the hint line.
function withRule(text, rule) {
  const link = el("a", "", `rule ${rule.toUpperCase()}`);
  link.href = `${RULES_PAGE}#${rule}`;
  link.target = "_blank";
  link.rel = "noopener";
  return [document.createTextNode(`Not a legal move: ${text} (`), link, document.createTextNode(")")];
}

// Why the cards `names` are no legal action of `view` (the person's turn, lead or follow).
function whyIllegal(names, view) {
  const chosen = cardsText(names);
  if (!isCombo(names)) {
    const goat = names.includes(GOAT) ? " The Goat joins cards of one colour only." : "";
    return withRule(`${chosen} is not a combo: a combo's cards share one colour or one value.${goat}`, "r4");
  }
  if (view.phase === "lead") return whyNotLead(names, view);
  if (view.phase === "follow" && view.table) return whyNotBeat(names, view.table);
  return withRule("pick one card of the beaten combo to keep.", "r10");
}

function whyNotLead(names, view) {
  const hand = view.seats[ME].hand;
  const whole = isCombo(hand);
  let text = "you may lead one card, or your whole hand if it is one combo";
  if (!whole) text += `; your hand (${plural(hand.length, "card")}) is not one combo, so lead one card`;
  else text += `: one card, or all ${hand.length} of yours, not ${names.length}`;
  return withRule(text + ".", "r8");
}

function whyNotBeat(names, table) {
  const size = table.cards.length;
  const mine = names.length;
  const number = comboNumber(names);
  const ways = `${plural(size, "card")} with a number above ${table.number}, or exactly ${size + 1} cards`;
  let text;
  if (mine === size) text = `${cardsText(names)} (${number}) does not beat ${table.number}: as many cards need a higher number. Play ${ways}.`;
  else if (mine < size) text = `fewer cards never beat the table. Play ${ways}.`;
  else text = `${plural(mine, "card")} is too many: only ${ways} beat the table.`;
  return withRule(text, "r7");
}

// The reminder shown on the person's turn while nothing illegal is selected.
function turnHelp(view) {
  if (view.phase === "lead") {
    const whole = isCombo(view.seats[ME].hand) && view.seats[ME].hand.length > 1;
    return whole
      ? "Lead one card, or your whole hand: it is one combo and would take you out."
      : "Lead one card (your whole hand is not one combo).";
  }
  if (view.phase === "follow") {
    const size = view.table.cards.length;
    return `Beat ${view.table.number}: ${plural(size, "card")} with a higher number, or exactly ${size + 1} cards. Or pass.`;
  }
  if (view.phase === "take") return "You beat it: click the card of the beaten combo you want to keep.";
  return "";
}
