"""The layout's rules, checked on the code itself: imports run down (CLIs -> training ->
evaluation -> files -> agents -> odin_env), no circles between modules, the environment loads
nothing of the lab's beyond itself, files stay readable."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = [
    "odin_env",
    "agents",
    "odin_lab.files",
    "odin_lab.evaluation",
    "odin_lab.training",
    "odin_lab.webapp",
    "odin_lab.commands",
]
"""Bottom to top: a package (or a module, ``odin_lab.files``) may import only itself and the ones
before it, except as below."""
CLI = "odin_lab.cli"
"""The CLIs' shared helpers: they sit on top, with the command-line tools."""
CLI_LEVEL = {"odin_lab.webapp", "odin_lab.commands"}
"""Packages at the command-line tools' level (``python -m odin_lab.webapp``): they may import
``odin_lab.cli``."""
NOT_BELOW = {
    "odin_lab.webapp": {"odin_lab.training"},
    "odin_lab.commands": {"odin_lab.webapp"},
}
"""Packages a package may not import although they sit below it (the web app plays, it does
not train)."""


def layer(name: str) -> str | None:
    """The layer a module belongs to (the longest layer name it starts with), or None."""
    for package in sorted(LAYERS, key=len, reverse=True):
        if name == package or name.startswith(package + "."):
            return package
    return None


def modules() -> dict[str, Path]:
    found = {}
    for package in LAYERS:
        module = ROOT / (package.replace(".", "/") + ".py")
        for path in [module] if module.is_file() else sorted(module.with_suffix("").rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    found[CLI] = ROOT / "odin_lab" / "cli.py"
    for script in ("train", "evaluate", "play"):
        found[script] = ROOT / f"{script}.py"
    for path in sorted((ROOT / "examples").glob("*.py")):  # on top, like the CLIs
        found[f"examples.{path.stem}"] = path
    return found


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The lab's modules that ``path`` imports, at any depth of its code."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                out.add(name)
    return out


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(path, set(found)) - {name} for name, path in found.items()}


def test_every_import_runs_down_the_layers():
    upward = []
    for name, targets in graph().items():
        if layer(name) is None:
            continue  # the CLIs sit on top
        mine = LAYERS.index(layer(name))
        for target in targets:
            top = layer(target)
            if target == CLI and layer(name) in CLI_LEVEL:
                continue
            if top is None or LAYERS.index(top) > mine or top in NOT_BELOW.get(layer(name), ()):
                upward.append(f"{name} -> {target}")
    assert upward == []


def test_no_import_circles_between_modules():
    edges = graph()
    # A package's __init__ re-exports its modules; an arrow into the package is one into them.
    circles = []
    for start in edges:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in edges.get(node, ()):
                if nxt == start and len(path) > 1 and not any(p in LAYERS for p in path):
                    circles.append(" -> ".join([*path, nxt]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert circles == []


def test_the_environment_loads_nothing_outside_itself_and_its_libraries():
    """Importing the env modules in a fresh interpreter loads no torch, no SB3, no agents."""
    code = (
        "import sys, json\n"
        "import odin_env, odin_env.env, odin_env.single_agent, odin_env.batched\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    tops = {name.split(".")[0] for name in json.loads(done.stdout)}
    allowed_libraries = {"numpy", "numba", "llvmlite", "gymnasium", "pettingzoo"}
    ours = {"odin_env"}
    third_party = tops - set(sys.stdlib_module_names) - ours - {"_distutils_hack"}
    strays = {
        name for name in third_party if not name.startswith("_") and name not in allowed_libraries
    }
    # What gymnasium and numba pull in themselves is theirs; ours and the heavy ones must not be.
    assert not strays & {"torch", "stable_baselines3", "sb3_contrib", "agents", "odin_lab"}
    # (numba imports scipy itself when present, so scipy is numba's, not ours)
    assert not strays & {"matplotlib", "openskill", "tqdm", "tensorboard"}
    assert not strays & {"fastapi", "uvicorn"}
    assert "agents" not in tops and "torch" not in tops


def sized() -> dict[str, Path]:
    """Every module of the layers and CLIs, and every script of research/ and benchmarks/."""
    scripts = sorted((ROOT / "research").glob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py"))
    return {**modules(), **{str(p.relative_to(ROOT)): p for p in scripts}}


@pytest.mark.parametrize("name", sorted(sized()))
def test_no_module_is_over_500_lines(name):
    assert len(sized()[name].read_text().splitlines()) <= 500
