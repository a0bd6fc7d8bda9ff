"""The docs: the site builds in strict mode, the README stays a front door, and every command the
README and the getting-started page show runs as written.

The site (``mkdocs.yml``, ``docs/``, ``docs/hooks.py``) is built with ``mkdocs build --strict``:
a broken link, a missing anchor or a page left out of the nav is a warning, so the build fails
(checked on a copy with one of each). Its generated parts are checked against their sources: the
figures' tables against the JSON of ``benchmarks/results/`` and ``research/results/``, the models
page against the model cards.

Commands: each fenced ``bash`` or ``python`` block of README.md and docs/getting-started.md has a
marker comment on the line before it, ``<!-- check: parse -->`` or ``<!-- check: run -->``,
optionally with smaller sizes for the test: ``<!-- check: run; train.py --total-steps 2048 -->``.
Every command of every block is parsed by its own program's argument parser (``make``: a dry
run); the ``run`` blocks are then run, in order, in a fresh folder, and a Python block's output
must be what the page says it prints.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "docs" / "getting-started.md"]
BLOCK = re.compile(
    r"(?:<!-- check: (?P<mode>run|parse)(?:; (?P<sizes>[^>]*?))? -->\n)?"
    r"```(?P<lang>[a-z]*)\n(?P<body>.*?)```",
    re.DOTALL,
)
CODE = ("bash", "python", "sh", "console")
SCRIPTS = {"train.py": "train", "evaluate.py": "evaluate", "play.py": "play"}
CONSOLE = {"odin-train": "train", "odin-evaluate": "evaluate", "odin-play": "play"}
BUILD_SECONDS = 300


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of ``config`` into ``site``."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [
        sys.executable,
        "-m",
        "mkdocs",
        "build",
        "--strict",
        "-f",
        str(config),
        "-d",
        str(site),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=BUILD_SECONDS, env=env)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module's tests."""
    out = tmp_path_factory.mktemp("site")
    built = mkdocs_build(ROOT / "mkdocs.yml", out)
    assert built.returncode == 0, built.stderr[-4000:]
    return out


def text_of(html_file: Path) -> str:
    """A built page's text, tags removed."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", html_file.read_text()))


# The site -------------------------------------------------------------------------------------


def test_site_builds_strict_with_every_page(site: Path) -> None:
    pages = sorted(p.relative_to(ROOT / "docs") for p in (ROOT / "docs").rglob("*.md"))
    for page in pages:
        built = (
            page.with_suffix("") / "index.html"
            if page.name != "index.md"
            else page.with_suffix(".html")
        )
        assert (site / built).is_file(), f"{page} has no page in the site"
    for name in (
        "getting-started",
        "environment",
        "agents",
        "training",
        "evaluation",
        "replays",
        "webapp",
        "ray",
        "benchmarks",
        "models",
        "rules",
        "model-format",
        "records",
        "own-agent",
    ):
        assert (site / name / "index.html").is_file(), name


def test_benchmark_tables_come_from_the_json(site: Path) -> None:
    import json

    page = text_of(site / "benchmarks" / "index.html")
    results = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
    assert results, "no benchmark JSON committed"
    for path in results:
        data = json.loads(path.read_text())
        assert data["command"] in page, f"{path.name}: its command is not on the page"
    env = json.loads((ROOT / "benchmarks" / "results" / "env_throughput.json").read_text())
    median = env["rates"][0]["median"]
    assert f"{median:,.0f}" in page  # a figure of the table, formatted from the JSON
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        assert f"benchmarks/{script.name}" in page, f"{script.name} is not on the page"


def test_any_page_shows_a_studys_figures_and_cites_only_committed_ones() -> None:
    """A marker names a JSON of ``benchmarks/results/`` or ``research/results/`` (never a name
    in both); its tables carry the file's command. Outside the Benchmarks page (whose speed
    figures a machine may not have made yet) every marker names a committed file."""
    import json

    spec = importlib.util.spec_from_file_location("hooks", ROOT / "docs" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    speed, studies = ({p.stem for p in folder.glob("*.json")} for folder in hooks.RESULTS)
    assert studies and not speed & studies, f"in both folders: {sorted(speed & studies)}"
    for folder in hooks.RESULTS:
        for path in sorted(folder.glob("*.json")):
            command = json.loads(path.read_text())["command"]
            assert command in hooks.benchmark_markdown(path.stem), path.name
    assert "No figures committed yet" in hooks.benchmark_markdown("no_such_study")
    for page in sorted((ROOT / "docs").rglob("*.md")):
        if page.name == "benchmarks.md":
            continue
        for kind, name in hooks.MARKER.findall(page.read_text()):
            if kind == "benchmark":
                assert name in speed | studies, f"{page.name} cites {name}.json, not committed"


def test_models_page_comes_from_the_model_cards(site: Path) -> None:
    import json

    page = text_of(site / "models" / "index.html")
    cards = sorted((ROOT / "agents" / "models").glob("*.json"))
    assert cards
    for path in cards:
        card = json.loads(path.read_text())
        assert path.stem in page
        assert card["evaluation"]["command"] in page
        for command in card["made_by"]:
            assert command.split("#")[0].strip() in page


def test_api_reference_is_generated_from_the_docstrings(site: Path) -> None:
    from odin_env import batched, rules

    page = text_of(site / "reference" / "odin_env" / "index.html")
    for documented in (rules.Config, batched.BatchedGames, batched):
        first_line = documented.__doc__.strip().splitlines()[0].replace("``", "")
        assert first_line in page, documented
    for package in ("odin_env", "agents", "odin_lab"):
        page = text_of(site / "reference" / package / "index.html")
        assert f"{package}." in page
        assert not re.search(r":(func|class|meth|mod):", page), f"{package}: Sphinx role markup"


def test_strict_build_fails_on_a_broken_link_and_an_orphan_page(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    for name in ("odin_env", "agents", "odin_lab", "benchmarks", "research"):
        (copy / name).symlink_to(ROOT / name)
    # The API pages without their generated modules (the slow part of a build; the site
    # fixture's build checks them): the same config and checks, a fraction of the time.
    for page in (copy / "docs" / "reference").glob("*.md"):
        page.write_text(re.sub(r"^<!-- api: \S+ -->$", "", page.read_text(), flags=re.M))
    (copy / "docs" / "orphan.md").write_text("# Not in the nav\n")
    with open(copy / "docs" / "agents.md", "a") as f:
        f.write("\nSee [a missing page](no-such-page.md) and [an anchor](rules.md#no-such-rule).\n")
    built = mkdocs_build(copy / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert "orphan.md" in built.stderr
    assert "no-such-page.md" in built.stderr
    assert "no-such-rule" in built.stderr


# The README -----------------------------------------------------------------------------------


def test_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 10_240, f"README.md is {len(readme.encode())} bytes"
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", readme), "a dated note"
    assert not re.search(r"\d-core|core machine|load average", readme), "a machine description"
    assert re.search(r"!\[[^\]]+\]\(docs/[^)]+\.png\)", readme), "no picture"
    order = [readme.index(s) for s in ("make run", "play.py", "make test")]
    assert order == sorted(order), "Quick start: make run, then playing, then make test"
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README links to a missing {target}"


# Commands -------------------------------------------------------------------------------------


def blocks(page: Path) -> list[dict]:
    """The fenced code blocks of ``page`` with their marker (mode None: no marker)."""
    return [m.groupdict() for m in BLOCK.finditer(page.read_text())]


def commands(body: str) -> list[list[str]]:
    """The commands of a shell block, split, comments dropped; ``\\`` continues a line."""
    lines = body.replace("\\\n", " ").splitlines()
    return [argv for line in lines if (argv := shlex.split(line, comments=True))]


def program(argv: list[str]) -> tuple[str | None, list[str]]:
    """The lab command ``argv`` runs (train, evaluate, play, web) and its arguments."""
    if Path(argv[0]).name in CONSOLE:
        return CONSOLE[Path(argv[0]).name], argv[1:]
    if argv[0] == "odin-web":
        return "web", argv[1:]
    if Path(argv[0]).name.startswith("python") and len(argv) > 1:
        if argv[1] in SCRIPTS:
            return SCRIPTS[argv[1]], argv[2:]
        if argv[1:3] == ["-m", "odin_lab.webapp"]:
            return "web", argv[3:]
    return None, argv


def parse(argv: list[str]) -> None:
    """Check one command without running it: its program's argument parser takes it, ``make``
    knows the target, an installed extra or script exists."""
    name, args = program(argv)
    if name is not None:
        if name == "web":
            from odin_lab.webapp.__main__ import parser
        else:
            parser = __import__(f"odin_lab.commands.{name}", fromlist=["parser"]).parser
        try:
            parser().parse_args(args)
        except SystemExit as stop:
            pytest.fail(f"{shlex.join(argv)}: its parser refused it (exit {stop.code})")
    elif argv[0] == "make":
        # As from a shell, also under `make test` (no parent make's flags).
        env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
        dry = subprocess.run(
            ["make", "-n", *argv[1:]], cwd=ROOT, capture_output=True, text=True, env=env
        )
        assert dry.returncode == 0, f"{shlex.join(argv)}: {dry.stderr}"
    elif argv[0] == "source":
        # .venv/: the environment make creates, the one running the tests under make test
        venv = Path(sys.prefix) / Path(argv[1]).relative_to(".venv")
        assert (ROOT / argv[1]).is_file() or venv.is_file(), shlex.join(argv)
    elif argv[1:4] == ["-m", "pip", "install"]:
        pyproject = (ROOT / "pyproject.toml").read_text()
        for target in argv[4:]:
            for extra in re.findall(r"\[([^\]]*)\]", target):
                for e in extra.split(","):
                    declared = re.search(rf"^{re.escape(e.strip())}\s*=\s*\[", pyproject, re.M)
                    assert declared, f"{shlex.join(argv)}: no extra {e!r} in pyproject.toml"
    else:
        pytest.fail(f"{shlex.join(argv)}: the docs test knows no way to check this command")


def sized(argv: list[str], sizes: str | None) -> list[str]:
    """``argv`` with the sizes the marker gives for its program (``train.py --total-steps 2048;
    evaluate.py --games 40``): a flag present takes the new value, one absent is added."""
    argv = list(argv)
    for part in (sizes or "").split(";"):
        words = shlex.split(part)
        if not words or words[0] not in argv[:2] and Path(argv[0]).name != words[0]:
            continue
        for flag, value in zip(words[1::2], words[2::2]):
            if flag in argv:
                argv[argv.index(flag) + 1] = value
            else:
                argv += [flag, value]
    return argv


def run(argv: list[str], cwd: Path, stdin: str = "quit\n") -> subprocess.CompletedProcess:
    """Run one command as the page shows it, from ``cwd``: ``python``/``.venv/bin/python`` is
    this interpreter; ``train.py`` and the others are links to the repository's."""
    if Path(argv[0]).name.startswith("python"):
        argv = [sys.executable, *argv[1:]]
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "NO_COLOR": "1", "PATH": path}
    return subprocess.run(
        argv, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=600, env=env
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_block_is_marked_and_parses(page: Path) -> None:
    found = 0
    for block in blocks(page):
        if block["lang"] not in CODE:
            continue  # output, shown as text
        assert block["mode"], f"{page.name}: a {block['lang']} block without a check marker"
        found += 1
        if block["lang"] == "python":
            compile(block["body"], page.name, "exec")
            continue
        for argv in commands(block["body"]):
            parse(argv)
    assert found >= 3


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_run_blocks_run_as_written(page: Path, tmp_path: Path) -> None:
    for script in SCRIPTS:
        (tmp_path / script).symlink_to(ROOT / script)
    text = page.read_text()
    ran = 0
    for block in blocks(page):
        if block["mode"] != "run":
            continue
        if block["lang"] == "python":
            (tmp_path / "block.py").write_text(block["body"])
            done = run([sys.executable, "block.py"], tmp_path)
            assert done.returncode == 0, done.stderr[-3000:]
            assert done.stdout.strip() in text, f"{page.name} does not show what it prints"
            ran += 1
            continue
        for argv in commands(block["body"]):
            argv = sized(argv, block["sizes"])
            done = run(argv, tmp_path)
            assert done.returncode == 0, f"{shlex.join(argv)}:\n{done.stderr[-3000:]}"
            ran += 1
    assert ran >= 2
