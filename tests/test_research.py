"""``research/``'s rule (research/README.md): a study imports the lab's packages, never another
study, and nothing imports a study."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUDIES = {path.stem for path in (ROOT / "research").glob("*.py")}


def imported(path: Path) -> set[str]:
    """The top-level names of what ``path`` imports, at any depth of its code."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_study_imports_another_and_nothing_imports_a_study():
    assert {"teacher_gap", "teacher_fit"} <= STUDIES
    code = [ROOT / f"{name}.py" for name in ("train", "evaluate", "play")]
    for folder in ("odin_env", "agents", "odin_lab", "benchmarks", "examples", "research"):
        code += sorted((ROOT / folder).rglob("*.py"))
    found = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in code
        for name in sorted(imported(path) & (STUDIES | {"research"}))
    ]
    assert found == []
