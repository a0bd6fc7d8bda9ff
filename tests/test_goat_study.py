"""The Goat in the evaluation layer (RULES G1-G5): ``evaluate.py --goat`` tournaments, their
records and replays, and the Goat study (``evaluate.py goat``,
:mod:`odin_lab.evaluation.goat_study`).

The study's per-hand facts (who was dealt the Goat, whether it was left in a hand) are checked
against a live game in which the penalties the engine charged tell whether the Goat cost its 5
(G4); the CLI is run in-process as a user types it."""

from __future__ import annotations

import json

import pytest

from agents import make
from odin_env.cards import GOAT_BIT
from odin_env.observation import observe
from odin_env.rules import Config, Game
from odin_env.spec import GOAT_PLAY, GOAT_TAKE
from odin_lab.commands.evaluate import main
from odin_lab.evaluation.goat_study import goat_cell
from odin_lab.evaluation.records import describe_action, goat_hands, load_records, replay
from odin_lab.evaluation.tournament import play_tournament


def _live_hands(config: Config, seed: int, specs: list[str]) -> list[tuple[int, bool]]:
    """Play the game of ``seed`` live: per hand, the seat dealt the Goat and whether the engine
    charged the Goat's 5 (the hand's penalties exceed the coloured cards left by 5)."""
    game, agents = Game(config, seed=seed), [make(s) for s in specs]
    out: list[tuple[int, bool]] = []
    while True:
        game.play_forced()
        if game.is_over:
            return out
        if len(out) == len(game.history):
            out.append((next(s for s, h in enumerate(game.hands) if h & GOAT_BIT), False))
        coloured = [(h & ~GOAT_BIT).bit_count() for h in game.hands]
        seat = game.current
        game.apply(agents[seat].act(observe(game, seat), game.legal_mask()))
        if len(game.history) == len(out):  # that decision ended the hand: seat went out
            charged = sum(game.history[-1]) - (sum(coloured) - coloured[seat])
            assert charged in (0, 5)
            out[-1] = (out[-1][0], charged == 5)


def test_g1_g4_goat_hands_names_the_holder_and_the_goat_left_as_the_engine_charged_it():
    config = Config(players=3, threshold=10, goat=True)
    specs = ["greedy", "shaper", "planner"]
    records = play_tournament(specs, config, 12, seed=8, rotate=False, progress=False)
    kinds = set()
    for record in records:
        got = goat_hands(record, config)
        assert got == _live_hands(config, record.seed, specs)
        assert len(got) == len(record.hands)
        kinds |= {kept for _, kept in got}
    assert kinds == {False, True}  # both outcomes met
    cell = goat_cell(records, config)
    assert cell["hands"] == sum(len(r.hands) for r in records)
    held = sum(
        r.hands[h][seat] == 0 for r in records for h, (seat, _) in enumerate(goat_hands(r, config))
    )
    assert cell["holder_rate"] == held / cell["hands"]
    assert cell["winner_total"] <= cell["loser_total"] and cell["fair_share"] == 1 / 3


def test_a_goat_tournament_writes_records_that_replay_and_resume(tmp_path):
    out = tmp_path / "t"
    args = [
        "tournament",
        "--agents",
        "planner",
        "greedy",
        "greedy",
        "--goat",
        "--games",
        "30",
        "--seed",
        "4",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    summary = json.loads((out / "tournament.json").read_text())
    assert summary["config"]["goat"] is True
    records = load_records(out / "tournament.json")
    assert records.config.goat and len(records.games) == 30
    plays = [a for g in records.games for a in g.actions if a >= GOAT_PLAY]
    assert plays and all(replay(g, records.config).is_over for g in records.games)
    game = Game(records.config, seed=1)
    assert describe_action(game, GOAT_TAKE) == "take Goat"
    assert describe_action(game, GOAT_PLAY) == "play Goat"
    # As Ctrl-C leaves it after 4 of the 10 deals: --resume replays and checks those, plays
    # the rest, and writes the very file the whole run wrote.
    whole = (out / "tournament.json").read_bytes()
    partial = json.loads(whole)
    partial["game_records"], partial["partial"] = partial["game_records"][:12], True
    (out / "tournament.json").write_text(json.dumps(partial))
    assert main([*args, "--resume"]) == 0
    assert (out / "tournament.json").read_bytes() == whole


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["tournament", "--agents", "dmc", "greedy", "--goat"], "agent 'dmc': goat: "),
        (["goat", "--agent", "linear"], "agent 'linear': goat: "),
        (["goat", "--players", "1"], "players must be 2-6"),
        (["goat", "--goat"], "unrecognized arguments: --goat"),
    ],
)
def test_goat_input_that_cannot_be_played_is_one_line_and_exit_2(args, says, tmp_path, capsys):
    out = tmp_path / "out"
    try:
        code = main([*args, "--out", str(out)])
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert not out.exists()


def test_the_goat_study_writes_its_files_the_same_whatever_the_workers(tmp_path, capsys):
    one, two = tmp_path / "one", tmp_path / "two"
    base = ["goat", "--games", "24", "--players", "2", "4", "--seed", "3", "--no-progress"]
    assert main([*base, "--out", str(one)]) == 0
    table = capsys.readouterr().out
    assert "the Goat: planner in every seat, 24 games per row" in table
    assert main([*base, "--out", str(two), "--workers", "2"]) == 0
    for name in ("goat.json", "goat.csv", "goat.png"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    cells = json.loads((one / "goat.json").read_text())["cells"]
    assert [(c["players"], c["goat"]) for c in cells] == [
        (2, False),
        (2, True),
        (4, False),
        (4, True),
    ]
    assert all(c["games"] == 24 for c in cells)
    assert cells[0]["holder_rate"] is None and 0 <= cells[1]["holder_rate"] <= 1
