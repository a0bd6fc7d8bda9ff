"""One table for a person and the agents (``odin_lab.evaluation.table``): the terminal's
session and the web app's game are the same game for the same seed and the same moves of the
person, agents seeded as a tournament's deal 0; the record replays; hints are kept."""

from __future__ import annotations

import warnings

import pytest

from agents import make
from odin_env.observation import observe
from odin_env.rules import Config
from odin_lab.evaluation.narrate import Style
from odin_lab.evaluation.play import Session
from odin_lab.evaluation.records import iter_steps, replay
from odin_lab.evaluation.table import HUMAN, Table
from odin_lab.evaluation.tournament import agent_seed
from odin_lab.webapp.sessions import PlaySession


def terminal_game(config: Config, opponents: list[str], seed: int, tmp_path) -> Session:
    """A whole game in ``play.py``'s session, the person typing menu number 2 when there is a
    play beyond the first entry, else 1."""
    said: list[str] = []

    def read(prompt: str) -> str:
        return "2" if len(session.game.legal) > 2 else "1"

    session = Session(
        config, 0, opponents, seed, tmp_path / "t.json", Style(False), read, said.append
    )
    session.run()
    assert said and session.game.is_over
    return session


@pytest.mark.parametrize(
    ("players", "opponents", "seed"),
    [(2, ["random"], 3), (3, ["random", "greedy"], 8), (4, ["random", "search:16", "planner"], 5)],
)
def test_the_same_seed_gives_the_same_game_in_the_terminal_and_the_web_app(
    players, opponents, seed, tmp_path
):
    config = Config(players=players, threshold=5)
    terminal = terminal_game(config, opponents, seed, tmp_path)
    record = terminal.table.record()
    steps = [s for s in iter_steps(record, config) if s.action >= 0 and not s.forced]
    assert replay(record, config).is_over  # the record replays to the end
    mine = [step.action for step in steps if step.seat == 0]  # the person's moves, in order
    assert 0 < len(mine) < len(terminal.actions) == len(steps)
    web = PlaySession.start("g", config, opponents, seed)
    web.advance()
    for action in mine:
        web.move(action, web.turn)
    assert web.game.is_over
    assert web.actions == terminal.actions  # every agent's move too
    assert web.game.totals == terminal.game.totals and web.record() == record


def test_agents_are_seeded_as_a_tournaments_deal_0():
    """The agent in seat ``s`` acts as ``make(spec)`` reset with ``agent_seed(seed, 0, 0, s)``
    (a random agent shows it: another seed plays otherwise)."""
    config = Config(players=3, threshold=5)
    table = Table.against(config, 1, ["random", "random"], seed=11)
    twins = {}
    for s in (0, 2):
        twin = make("random", seed=agent_seed(11, 0, 0, s))
        twin.reset(s, agent_seed(11, 0, 0, s))
        twins[s] = twin
    other = make("random")
    other.reset(0, agent_seed(12, 0, 0, 0))
    differs = 0
    while not table.is_over:
        chosen = table.next_move()
        if chosen is None:
            table.apply(table.game.legal[-1])
            continue
        action, forced = chosen
        game = table.game
        if not forced:
            obs, mask = observe(game, game.current), game.legal_mask()
            assert twins[game.current].act(obs, mask) == action
            if game.current == 0:
                differs += other.act(obs, mask) != action
        table.apply(action, forced)
    assert table.specs == ("random", HUMAN, "random") and differs > 0


def test_the_table_refuses_what_is_not_the_persons_to_do():
    table = Table.against(Config(players=2, threshold=3), 0, ["random"], seed=2)
    while (chosen := table.next_move()) is not None:
        table.apply(*chosen)
    assert table.person_to_move and table.next_move() is None
    before = (table.game.snapshot(), list(table.actions), table.turn, table.moves)
    with pytest.raises(ValueError, match="not legal"):
        table.apply(3633)
    assert (table.game.snapshot(), list(table.actions), table.turn, table.moves) == before
    table.apply(table.game.legal[0])
    assert table.moves == 1 and table.turn == before[2] + 1
    while not table.is_over:
        chosen = table.next_move()
        table.apply(*(chosen or (table.game.legal[0], False)))
    with pytest.raises(ValueError, match="no decision of yours"):
        table.hint(rollouts=16)
    assert table.hints == []
    with pytest.raises(ValueError, match="one agent per seat"):
        Table(Config(players=2), 0, ["random", "random"], seed=0)


def test_agents_at_a_table_size_they_were_not_trained_for_are_noted_in_both_front_ends(tmp_path):
    """The bundled ppo has models for 2 and 4 players: at 5 it plays the 4-player one, which the
    table notes (one line per spec, its seats named) and the terminal says, with no warning."""
    config = Config(players=5, threshold=3)
    opponents = ["ppo", "random", "ppo", "greedy"]
    note = "ppo (seats 1, 3): its model was trained for 4 players, not 5: expect weaker play"
    assert Table.against(config, 0, opponents, seed=4).notes == [note]
    assert Table.against(Config(players=4), 2, ["ppo", "ppo", "random"], seed=4).notes == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would end the game here
        session = terminal_game(config, opponents, 4, tmp_path)
    said = session.write.__self__  # the list whose append the session writes with
    assert [line for line in said if line.startswith("note:")] == [f"note: {note}"]
