"""Agents from outside the lab (``agents.outside``): a file agent, a module agent, a factory and
an installed package's entry point play wherever an agent is named, also in worker processes,
with the same records as in one process; every bad spec is one line and exit code 2."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from training_inprocess import evaluate_main

from agents.heuristics import Greedy
from agents.registry import check_spec, has_batch_form, make, outside_names
from odin_env.rules import Config
from odin_lab.evaluation.records import replay_steps
from odin_lab.evaluation.tournament import play_tournament
from odin_lab.webapp.__main__ import code_agents
from odin_lab.webapp.__main__ import main as web_main
from odin_lab.webapp.app import create_app

ROOT = Path(__file__).resolve().parents[1]

LOWEST = '''
import numpy as np

class Lowest:
    """The lowest legal action: deterministic, so replays can check every decision."""

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])

class LowestBatched(Lowest):
    """The same, for a whole batch at once."""

    name = "lowest-batched"

    def act_batch(self, obs, mask):
        return np.argmax(mask != 0, axis=1)
'''

SEEDED = '''
import numpy as np

class Seeded:
    """Uniform over the legal actions, its randomness from reset(seat, seed) alone."""

    def __init__(self, seed=None):
        self.made_with = seed
        self.rng = np.random.default_rng(seed)

    def reset(self, seat, seed=None):
        self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask):
        legal = np.flatnonzero(action_mask)
        return int(legal[self.rng.integers(legal.size)])

def seeded(seed=None):
    return Seeded(seed)

def bare():
    return Seeded(99)

ONE = Seeded(5)
NOT_AN_AGENT = 3

class NoAct:
    pass

def returns_a_string():
    return "hello"

class Illegal:
    def act(self, observation, action_mask):
        return 3641  # no such action

class Nothing:
    def act(self, observation, action_mask):
        return None
'''


@pytest.fixture
def outside(tmp_path, monkeypatch):
    """A file agent under ``tmp_path/mine`` and a module ``seeded_agents`` on ``sys.path``;
    the current folder is ``tmp_path``."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "lowest.py").write_text(LOWEST)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "seeded_agents.py").write_text(SEEDED)
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def lowest_played_every_decision(records, config: Config, agent: int) -> int:
    """How many decisions agent ``agent`` made, after checking it played the lowest legal
    action at each (the records' actions replayed through the rules)."""
    made = 0
    for record in records:
        for step in replay_steps(record, config)[:-1]:
            if record.agents[step.seat] == agent and not step.forced:
                assert step.action == min(step.game.legal)
                made += 1
    return made


def test_a_file_agent_and_a_module_agent_give_the_same_records_on_one_or_two_workers(outside):
    specs = ["mine/lowest.py:Lowest", "seeded_agents:Seeded", "greedy"]
    config = Config(players=3, threshold=8)
    one = play_tournament(specs, config, 6, seed=11, workers=1, progress=False, chunk=2)
    two = play_tournament(specs, config, 6, seed=11, workers=2, progress=False, chunk=2)
    assert one == two and len(one) == 6 * 3
    assert lowest_played_every_decision(one, config, agent=0) > 0
    # The module agent draws from reset(seat, seed): another tournament seed, other games.
    other = play_tournament(specs, config, 6, seed=12, workers=1, progress=False, chunk=2)
    assert [r.actions for r in other] != [r.actions for r in one]


def test_an_outside_agent_with_act_batch_plays_the_batched_engine_alike(outside):
    specs = ["mine/lowest.py:LowestBatched", "greedy"]
    config = Config(players=2, threshold=8)
    assert has_batch_form(specs[0]) and not has_batch_form("mine/lowest.py:Lowest")
    batched = play_tournament(specs, config, 8, seed=3, engine="batched", progress=False)
    single = play_tournament(specs, config, 8, seed=3, engine="single", progress=False)
    assert batched == single
    assert lowest_played_every_decision(batched, config, agent=0) > 0


def test_a_relative_file_path_resolves_from_where_it_was_given(outside, monkeypatch):
    from agents.registry import absolute_spec

    spec = "mine/lowest.py:Lowest"
    assert absolute_spec(spec) == f"{outside / 'mine' / 'lowest.py'}:Lowest"
    assert absolute_spec("seeded_agents:Seeded") == "seeded_agents:Seeded"
    assert absolute_spec("ppo:models/x.safetensors") == "ppo:models/x.safetensors"
    # Workers may run elsewhere: the parent makes the path absolute before they get it.
    config = Config(players=2, threshold=5)
    here = play_tournament([spec, "greedy"], config, 2, seed=1, workers=2, progress=False, chunk=1)
    monkeypatch.chdir(outside / "lib")
    absolute = [f"{outside}/mine/lowest.py:Lowest", "greedy"]
    assert play_tournament(absolute, config, 2, seed=1, progress=False) == here


def test_factories_are_called_with_seed_when_they_take_it_and_objects_are_used_as_they_are(
    outside,
):
    assert make("seeded_agents:Seeded", seed=7).made_with == 7  # a class
    assert make("seeded_agents:seeded", seed=8).made_with == 8  # a function taking seed
    assert make("seeded_agents:bare", seed=8).made_with == 99  # a function taking nothing
    import seeded_agents

    assert make("seeded_agents:ONE") is seeded_agents.ONE  # an agent object, as it is
    built = make("mine/lowest.py:Lowest")
    assert built.name == "mine/lowest.py:Lowest"  # named by its spec when it has no name
    assert make("mine/lowest.py:LowestBatched").name == "lowest-batched"
    # A file is loaded once per process, however many agents it makes.
    assert type(make("mine/lowest.py:Lowest")) is type(built)


def test_an_installed_package_adds_agents_by_entry_point_and_cannot_take_a_lab_name(
    tmp_path, monkeypatch
):
    site = tmp_path / "site"
    info = site / "odin_extra_agents-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: odin-extra-agents\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[odin_lab.agents]\nlowest = extra_agents:Lowest\ngreedy = extra_agents:Lowest\n"
    )
    (site / "extra_agents.py").write_text(LOWEST)
    monkeypatch.syspath_prepend(str(site))
    assert "lowest" in outside_names() and "greedy" not in outside_names()
    check_spec("lowest")
    assert type(make("lowest")).__name__ == "Lowest"
    assert isinstance(make("greedy"), Greedy)  # the lab's own names win
    config = Config(players=2, threshold=5)
    specs = ["lowest", "random"]
    one = play_tournament(specs, config, 2, seed=4, progress=False, chunk=1)
    two = play_tournament(specs, config, 2, seed=4, workers=2, progress=False, chunk=1)
    assert one == two
    assert lowest_played_every_decision(one, config, agent=0) > 0


BAD = [
    ("no_such_module_xyz:Agent", "module no_such_module_xyz does not import: ModuleNotFoundError"),
    ("broken_agents:Agent", "module broken_agents does not import: RuntimeError: cannot start"),
    ("seeded_agents:Missing", "seeded_agents has no attribute 'Missing'"),
    ("seeded_agents:NOT_AN_AGENT", "int 3 is not an agent"),
    ("seeded_agents:NoAct", "is not an agent"),
    ("seeded_agents:returns_a_string", "its factory returned str 'hello'"),
    ("mine/missing.py:Agent", "no such file mine/missing.py"),
    ("mine/broken.py:Agent", "file mine/broken.py does not import: SyntaxError"),
    ("search:1000000000000", "search:N (N playouts per decision, 1-100,000)"),
    ("search:60001ms", "search:Nms (N milliseconds per decision, 1-60,000)"),
    # An agent that makes a bad move is named, with the move (in a worker process too).
    ("seeded_agents:Illegal", "in seat 0 of deal 0 rotation 0 chose 3641: illegal action 3641"),
    ("seeded_agents:Nothing", "in seat 0 of deal 0 rotation 0 chose None: a NoneType, not an"),
]


REAL_PROCESS = {"no_such_module_xyz:Agent", "seeded_agents:Illegal"}
"""The bad specs tried with a real ``python evaluate.py``: one refused before any game, one
whose agent fails in play in a worker process (the script's exit code, and its stderr with
the workers' whole). The others: the command's ``main`` in this process, from the same folder
(a refusal is the command's; the script's start is seconds of imports)."""


@pytest.mark.parametrize(("spec", "says"), BAD)
def test_a_bad_outside_spec_is_one_line_and_exit_2_in_evaluate(outside, spec, says):
    (outside / "lib" / "broken_agents.py").write_text('raise RuntimeError("cannot start\\nmore")\n')
    (outside / "mine" / "broken.py").write_text("def oops(:\n")
    args = ["tournament", "--agents", spec, "greedy", "--games", "2", "--workers", "2",
            "--no-progress", "--out", "out"]  # fmt: skip
    if spec in REAL_PROCESS:
        done = subprocess.run(
            [sys.executable, str(ROOT / "evaluate.py"), *args],
            cwd=outside,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(outside / "lib")},
        )
    else:  # the fixture put lib/ on sys.path, as PYTHONPATH does, and made outside the cwd
        done = evaluate_main(*args, cwd=outside)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("evaluate.py tournament: error: ")
    assert says in done.stderr and spec in done.stderr
    # An agent that fails in play leaves its traceback (tests/test_player_failures.py), no more.
    played = "chose" in says
    assert (
        sorted(os.listdir(outside / "out")) == ["failure.txt"]
        if played
        else not (outside / "out").exists()
    )


def test_the_registry_refuses_bad_specs_with_a_value_error(outside):
    for spec, says in BAD[2:6]:
        with pytest.raises(ValueError, match=says):
            make(spec)
    with pytest.raises(ValueError, match="unknown agent spec 'greedy:x'"):
        check_spec("greedy:x")  # the lab's names take no argument (but ppo and search)


def test_the_web_app_offers_an_outside_agent_only_when_the_server_allows_code(outside):
    spec = "mine/lowest.py:Lowest"
    body = {"players": 2, "opponents": [spec], "threshold": 5, "seed": 1}
    plain = TestClient(create_app(outside / "web", outside / "records"))
    assert spec not in plain.get("/api/agents").json()["agents"]
    refused = plain.post("/api/games", json=body)
    assert refused.status_code == 400 and "unknown opponent" in refused.json()["error"]
    allowing = TestClient(create_app(outside / "web", outside / "records", code_agents=[spec]))
    offered = allowing.get("/api/agents").json()["agents"]
    assert spec in offered and "greedy" in offered
    assert allowing.post("/api/games", json=body).status_code == 200
    # The command offers none without the flag; with it, the specs it names.
    assert code_agents(None) == [] and code_agents([spec])[-1] == spec


def test_the_web_command_refuses_a_bad_code_agent_with_one_line(outside, capsys):
    assert web_main(["--allow-code-agents", "seeded_agents:NOT_AN_AGENT"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--allow-code-agents: agent 'seeded_agents:NOT_AN_AGENT'" in err


def test_play_refuses_a_bad_outside_opponent_with_one_line(outside, capsys):
    """``play.py``'s command in this process (tests/test_play.py runs the script's refusals)."""
    from odin_lab.commands.play import main as play_main

    assert play_main(["--opponents", "seeded_agents:Missing"]) == 2
    assert capsys.readouterr().err == (
        "play.py: error: agent 'seeded_agents:Missing': seeded_agents has no attribute 'Missing'\n"
    )
    assert not (outside / "results").exists()  # no game began (nor was saved)


def test_the_help_says_an_outside_spec_runs_your_code(outside):
    done = evaluate_main("leaderboard", "--help", cwd=outside)  # the command, in this process
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "module:Name, path/to/file.py:Name" in text and "runs your code, by your choice" in text
    assert "a model file: read as data, never run as code" in text


def test_an_agent_is_any_object_with_act_and_needs_no_lab_import(tmp_path):
    (tmp_path / "plain.py").write_text(
        textwrap.dedent(
            """
            def first_legal(observation, action_mask):
                return int(action_mask.nonzero()[0][0])

            class Plain:
                act = staticmethod(first_legal)
            """
        )
    )
    agent = make(f"{tmp_path}/plain.py:Plain")
    mask = np.zeros(3634, dtype=np.int8)
    mask[[5, 9]] = 1
    assert agent.act(np.zeros(10, dtype=np.float32), mask) == 5


# -- docs/own-agent.md -------------------------------------------------------------------------

PAGE = ROOT / "docs" / "own-agent.md"
RUN_BLOCK = re.compile(r"<!-- check: run; (?P<sizes>[^>]*) -->\n```bash\n(?P<body>.*?)```", re.S)


def sized(argv: list[str], sizes: str) -> list[str]:
    """``argv`` at the marker's sizes (``evaluate.py --games 4; x.py --smoke``): for the script
    ``argv`` runs, a flag present takes the new value, one absent is added."""
    argv = list(argv)
    for part in sizes.split(";"):
        script, *words = shlex.split(part)
        if argv[1] != script:
            continue
        for i, word in enumerate(words):
            value = (
                words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else None
            )
            if not word.startswith("--"):
                continue
            if word in argv and value is not None:
                argv[argv.index(word) + 1] = value
            elif word not in argv:
                argv += [word] if value is None else [word, value]
    return argv


def test_the_own_agent_page_runs_as_written_at_a_tiny_size(tmp_path, monkeypatch):
    """The worked example: train and save the SB3 policy, wrap it (examples/my_agent.py), play
    it in a tournament and put it on the leaderboard, with the page's commands (the training
    script as a process; evaluate.py's commands through its main, in this process, from the same
    folder: the script's own start is tested elsewhere, and costs seconds of imports)."""
    from odin_lab.commands import evaluate

    found = RUN_BLOCK.search(PAGE.read_text())
    assert found, "docs/own-agent.md has no <!-- check: run; ... --> bash block"
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "evaluate.py").symlink_to(ROOT / "evaluate.py")
    commands = [shlex.split(line) for line in found["body"].splitlines() if line.strip()]
    assert [argv[1] for argv in commands] == ["examples/sb3_maskable_ppo.py", *["evaluate.py"] * 2]
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        argv = sized(argv, found["sizes"])
        if argv[1] == "evaluate.py":
            assert evaluate.main(argv[2:]) == 0, shlex.join(argv)
            continue
        done = subprocess.run(
            [sys.executable, *argv[1:]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{shlex.join(argv)}:\n{done.stderr[-3000:]}"
    spec = "examples/my_agent.py:SB3Agent"
    board = json.loads((tmp_path / "results" / "my-leaderboard" / "leaderboard.json").read_text())
    assert board["agents_specs"][0] == spec
    row = board["agents"][board["agents_specs"].index(spec)]  # rows in the specs' order
    assert row["tables"] == 10 and row["games"] == 10 * 4  # C(5, 3) tables of 4 games
    played = json.loads((tmp_path / "results" / "my-agent" / "tournament.json").read_text())
    assert played["agents_specs"] == [spec, "random", "random", "random"]
    assert played["games"] == 4


def test_a_factory_is_built_once_to_see_whether_it_batches(tmp_path, monkeypatch):
    """``has_batch_form`` of a factory spec, asked as every tournament of a study asks it:
    the factory runs once in the process, not once per question."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "counted.py").write_text(
        "import numpy as np\n"
        "MADE = []\n"
        "class _Lowest:\n"
        "    def act(self, observation, action_mask):\n"
        "        return int(np.flatnonzero(action_mask)[0])\n"
        "def make():\n"
        "    MADE.append(1)\n"
        "    return _Lowest()\n"
    )
    for _ in range(3):
        assert has_batch_form("counted.py:make") is False
    made_here = str(tmp_path / "counted.py")  # other tests load files named counted.py too
    module = next(m for m in list(sys.modules.values()) if getattr(m, "__file__", "") == made_here)
    assert len(module.MADE) == 1
