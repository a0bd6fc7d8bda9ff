"""The search player (``agents.search``): it sees only the observation, samples the unseen cards
consistently with it, is deterministic for a seed, and plays better than the policy it rolls out;
its specs, and the one line that refuses a retired option."""

from __future__ import annotations

import numpy as np
import pytest

from agents.hand import see
from agents.registry import make
from agents.search import SearchAgent
from agents.worlds import position as _position
from agents.worlds import sample_hands as _sample_hands
from odin_env.cards import cards_of
from odin_env.observation import observe
from odin_env.rules import Config, Game
from odin_env.scoring import win_chance
from odin_lab.evaluation.tournament import play_deals


def _midgame(config: Config, seed: int, steps: int) -> Game:
    game = Game(config, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        game.play_forced()
        if game.is_over:
            break
        game.apply(game.legal[rng.integers(len(game.legal))])
    game.play_forced()
    return game


def _relaid(game: Game, seat: int, rng: np.random.Generator) -> Game:
    """The same position with the cards ``seat`` has not seen dealt anew among the others."""
    n = game.config.players
    hidden = [game.hands[s] & ~game.known[s] for s in range(n)]
    pool = [c for s in range(n) if s != seat for c in cards_of(hidden[s])]
    pool += cards_of(game.set_aside)
    rng.shuffle(pool)
    hands = []
    for s in range(n):
        if s == seat:
            hands.append(cards_of(game.hands[s]))
            continue
        count = hidden[s].bit_count()
        hands.append(cards_of(game.known[s]) + pool[:count])
        pool = pool[count:]
    table = cards_of(int(_table_bits(game))) if game.table >= 0 else None
    following = table is not None and not game.take_from
    return Game.from_position(
        game.config,
        hands,
        game.current,
        table=table,
        owner=game.owner if following else None,
        take_from=cards_of(game.take_from) if game.take_from else None,
        passes=game.passes,
        discard=cards_of(game.discard),
        known=[cards_of(k) for k in game.known],
        totals=game.totals,
    )


def _table_bits(game: Game) -> int:
    from odin_env.combos import COMBO_BITS

    return COMBO_BITS[game.table]


@pytest.mark.parametrize(
    "players,spec",
    [
        (2, "search:48"),
        (4, "search:48"),
        (5, "search:48"),
        (4, "search:256:race"),
        (3, "search:128:race"),
    ],
)
def test_the_decision_depends_only_on_what_the_seat_sees(players: int, spec: str) -> None:
    """Two positions that differ only in the other seats' hidden cards: same observation, same
    action for the same seed (and the hidden cards really differ), the shortlist's network and
    the race included."""
    config = Config(players=players, threshold=15)
    rng = np.random.default_rng(players)
    checked = 0
    for seed in range(12):
        game = _midgame(config, seed, steps=3 + 5 * seed)
        if game.is_over or len(game.legal) < 2:
            continue
        seat = game.current
        other = _relaid(game, seat, rng)
        if other.hands == game.hands:
            continue
        obs, mask = observe(game, seat), game.legal_mask()
        assert np.array_equal(obs, observe(other, seat))
        actions = []
        for position in (game, other):
            agent = make(spec)
            agent.reset(seat, seed=seed)
            actions.append(agent.act(observe(position, seat), position.legal_mask()))
        assert actions[0] == actions[1]
        assert mask[actions[0]] == 1
        checked += 1
    assert checked >= 6


def test_same_seed_same_action_and_forced_decisions_are_answered_at_once() -> None:
    config = Config(players=4)
    game = _midgame(config, 3, steps=20)
    obs, mask = observe(game, game.current), game.legal_mask()
    first = SearchAgent(seed=11, rollouts=64).act(obs, mask)
    assert SearchAgent(seed=11, rollouts=64).act(obs, mask) == first
    only = np.zeros_like(mask)
    only[first] = 1
    assert SearchAgent(seed=0, rollouts=64).act(obs, only) == first
    with pytest.raises(ValueError, match="no legal action"):
        SearchAgent(seed=0).act(obs, np.zeros_like(mask))
    with pytest.raises(ValueError, match="rollouts must be"):
        SearchAgent(rollouts=0)


@pytest.mark.parametrize("players", [3, 4, 6])
def test_sampled_worlds_agree_with_everything_public(players: int) -> None:
    """Each world keeps the observer's hand, every hand size and known card, and deals only
    cards the observer has not seen; over many worlds every unseen card lands in some hand."""
    config = Config(players=players)
    game = _midgame(config, 8, steps=17)
    seat = game.current
    obs, mask = observe(game, seat), game.legal_mask()
    position, _, unseen, needs = _position(obs, mask)
    seen = see(obs, mask)
    worlds = _sample_hands(position, unseen, needs, 300, np.random.default_rng(0))
    public = seen.hand | seen.discard | seen.table | seen.take
    for row in worlds:
        assert row[0] == game.hands[seat]
        union = 0
        for k in range(players):
            assert int(row[k]).bit_count() == game.hands[(seat + k) % players].bit_count()
            assert row[k] & game.known[(seat + k) % players] == game.known[(seat + k) % players]
            assert union & int(row[k]) == 0
            union |= int(row[k])
        assert (union & ~seen.hand) & public == 0
    dealt = np.bitwise_or.reduce(worlds[:, 1:].ravel())
    if sum(needs):
        assert all(dealt >> c & 1 for c in unseen.tolist())


def test_win_chance_is_exact_at_the_end_and_a_distribution_before() -> None:
    over = win_chance(np.array([[15, 3, 3, 9]]), 15)
    assert over.tolist() == [[0.0, 0.5, 0.5, 0.0]]
    before = win_chance(np.array([[2, 5, 9, 12]]), 15)[0]
    assert before.sum() == pytest.approx(1.0)
    assert list(before) == sorted(before, reverse=True) and before[0] > 0.25


def test_search_beats_the_policy_it_plays_out() -> None:
    """Against ``greedy`` (its own playout policy) at 2 players, rotated seats: the search
    must win clearly more than half (Wilson lower bound above 50%)."""
    from odin_lab.evaluation.stats import wilson

    config = Config(players=2, threshold=5)
    records = play_deals([make("search:48"), make("greedy")], config, 12, seed=2024)
    wins = sum((0 in [r.agents[w] for w in r.winners]) / len(r.winners) for r in records)
    low, _ = wilson(wins, len(records))
    assert low > 0.5, (wins, len(records))


def test_budgets_by_spec_and_a_time_budget_that_stops() -> None:
    from agents.registry import check_spec

    plain = make("search")
    assert (plain.rollouts, plain.ms, plain.race) == (512, None, False)
    assert make("search:64").rollouts == 64 and make("search:race").race
    timed = make("search:5ms")
    assert timed.ms == 5 and make("search:5ms:race").race
    bad_specs = "search:0 search:ms search:-3 search:5s search:x search:race:64 search:64:rac"
    for bad in [*bad_specs.split(), "search:64:race:race", "search:64:"]:
        with pytest.raises(ValueError, match="search:N .*search:Nms"):
            check_spec(bad)
    for kwargs in ({"rollouts": 0}, {"ms": 0}, {"ms": "5"}, {"policy": "search"}):
        with pytest.raises(ValueError, match="must be"):
            SearchAgent(**kwargs)
    game = _midgame(Config(players=4), 9, steps=12)
    obs, mask = observe(game, game.current), game.legal_mask()
    import time

    start = time.perf_counter()
    assert mask[timed.act(obs, mask)] == 1
    assert time.perf_counter() - start < 2.0  # one round at least, then it stops


RETIRED = "deep 512:net:one 64:model 5ms:post netplay 64:net:netself netleaf:race penalty"


@pytest.mark.parametrize("spec", [f"search:{rest}" for rest in RETIRED.split()])
def test_a_retired_option_is_one_line_naming_its_findings_and_commit(spec: str) -> None:
    """Each option that did not pay is refused, alone or among others, in one line that says
    where its figures are and the commit where its commands still run; ``:net`` and ``:one``
    also say that the plain search now shortlists with the one-pass network."""
    from agents.registry import RETIRED_SEARCH_OPTIONS

    with pytest.raises(ValueError) as refused:
        make(spec)
    line = str(refused.value)
    assert "\n" not in line and f"agent spec {spec!r}" in line
    assert "docs/findings/search.md" in line and "commit 282f95f" in line
    named = [o for o in spec.split(":") if o in RETIRED_SEARCH_OPTIONS]
    assert named and all(f":{o}" in line for o in named)
    assert ("one-pass network" in line) == bool({"net", "one"} & set(named))


def test_the_docs_show_the_search_specs_as_the_code_describes_them() -> None:
    """docs/agents.md's table of the search specs is :func:`agents.registry.search_table`, made
    from the one description that the CLIs' help and the refusals are made from."""
    from pathlib import Path

    from agents.registry import SEARCH_SPECS, search_table, spec_help

    page = (Path(__file__).resolve().parents[1] / "docs" / "agents.md").read_text()
    assert f"\n{search_table()}\n" in page
    assert all(f"{form} ({meaning})" in spec_help() for form, meaning in SEARCH_SPECS.items())
