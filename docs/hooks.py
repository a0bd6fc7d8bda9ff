"""MkDocs hooks: the pages' generated parts, so that no figure is copied into the docs by hand.

A page asks for a generated part with a marker on a line of its own:

- ``<!-- benchmark: NAME -->``: the figures of ``NAME.json`` in ``benchmarks/results/`` (a
  speed benchmark's) or ``research/results/`` (a study's), as tables, with the command that made
  them; any page may show either. Without the file, a note saying how to make it.
- ``<!-- models -->``: the bundled models, from their model cards ``agents/models/*.json``.
- ``<!-- api: PACKAGE -->``: one mkdocstrings block (``::: module``) per public module of the
  package, found in its folder at build time (no import).

The docstrings are written for reading in the source, with Sphinx roles (``:func:`name```);
:class:`SphinxRoles`, a Griffe extension that ``mkdocs.yml`` names too, shows those names as code.

``mkdocs.yml`` names this file under ``hooks``; ``tests/test_docs.py`` builds the site.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).resolve().parent.parent
RESULTS = (ROOT / "benchmarks" / "results", ROOT / "research" / "results")
"""Where a marker's JSON is looked for (a name is in one of them; tests/test_docs.py checks)."""
MODELS = ROOT / "agents" / "models"
FRACTIONS = re.compile(r"win|share|ci_|collecting")
"""Keys whose values are fractions of 1, shown as percentages."""
MARKER = re.compile(r"^<!-- (benchmark|models|api)(?::\s*(\S+))? -->$", re.MULTILINE)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace every marker of the page by its generated Markdown."""

    def expand(match: re.Match) -> str:
        kind, name = match.group(1), match.group(2)
        if kind == "benchmark":
            return benchmark_markdown(name)
        if kind == "models":
            return models_markdown()
        return api_markdown(name)

    return MARKER.sub(expand, markdown)


# Benchmarks ------------------------------------------------------------------------------------


def benchmark_markdown(name: str) -> str:
    """The figures of ``NAME.json`` of :data:`RESULTS`: the command, scalars, then each list of
    rows as its own table."""
    path = next((p for p in (folder / f"{name}.json" for folder in RESULTS) if p.is_file()), None)
    if path is None:
        return (
            f"*No figures committed yet:* the command above writes `{name}.json`, and `make docs`"
            " then shows them here."
        )
    data = json.loads(path.read_text())
    parts = []
    command = data.get("command")
    if command:
        parts.append(f"The figures below were made by:\n\n```bash\n{command}\n```")
    scalars = {}
    tables = []
    for key, value in data.items():
        if key == "command":
            continue
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            tables.append((key, value))
        else:
            scalars.update(_flatten(key, value))
    if scalars:
        rows = [[_label(k), _cell(v, k)] for k, v in scalars.items()]
        parts.append(_table(["", "value"], rows))
    for key, rows in tables:
        columns = list(dict.fromkeys(k for row in rows for k in row))
        body = [[_cell(row.get(c, ""), c) for c in columns] for row in rows]
        parts.append(f"*{_label(key)}*\n\n" + _table([_label(c) for c in columns], body))
    return "\n\n".join(parts)


def _flatten(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(_flatten(f"{key}: {k}", v))
        return out
    return {key: value}


def _label(key: str) -> str:
    return key.replace("_per_s", "/s").replace("_", " ")


def _cell(value: Any, key: str = "") -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and FRACTIONS.search(key):
        return f"{100 * value:.1f}%"
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:.2f}"
        return f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k} {_cell(v)}" for k, v in value.items())
    return str(value).replace("|", "\\|")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# The bundled models ----------------------------------------------------------------------------


def models_markdown() -> str:
    """One section per model card ``agents/models/*.json``: what it is, how it was made and
    chosen, and its evaluation as a table."""
    return "\n\n".join(_model_section(path) for path in sorted(MODELS.glob("*.json")))


def _model_section(path: Path) -> str:
    card = json.loads(path.read_text())
    name = path.stem
    parts = [f"## `{name}`", f"File: `{card.get('model', path.with_suffix('.safetensors'))}`."]
    for key in ("what", "why"):
        if key in card:
            parts.append(f"**{key.capitalize()}.** {card[key]}")
    if "made_by" in card:
        commands = "\n".join(card["made_by"])
        parts.append(f"**Made by:**\n\n```bash\n{commands}\n```")
    if "one_command" in card:
        parts.append(f"**In one command:** `{card['one_command']}`")
    times = card.get("training_wall_time_s")
    if times:
        rows = [[what, f"{seconds / 60:.1f} min"] for what, seconds in times.items()]
        parts.append(_table(["training step", "wall time"], rows))
    selection = card.get("selection")
    if isinstance(selection, str):
        parts.append(f"**Chosen:** {selection}")
    elif isinstance(selection, dict):
        parts.append(_selection(selection))
    if "evaluation" in card:
        parts.append(_evaluation(card["evaluation"]))
    return "\n\n".join(parts)


def _selection(selection: dict, title: str = "Chosen") -> str:
    """How a model was chosen: ``how``, then a table of its candidates, each a list of
    ``[rate, low, high]`` or, when the selection names its ``columns``, one rate per column
    (``None``: not measured); then ``chosen``, and any nested selection (a member's) below."""
    how, columns = selection.get("how", ""), selection.get("columns")
    if columns:
        rows = [
            [what, *("-" if v is None else f"{100 * v:.1f}%" for v in entry)]
            for what, entry in selection.items()
            if what != "columns" and isinstance(entry, list) and len(entry) == len(columns)
        ]
        table = _table(["candidate", *columns], rows)
    else:
        rows = [
            [what, _rate(entry[0], entry[1:])]
            for what, entry in selection.items()
            if isinstance(entry, list) and len(entry) == 3
        ]
        table = _table(["candidate", "win rate [95% CI]"], rows)
    text = f"**{title}** by {how}\n\n" + table
    if isinstance(selection.get("chosen"), str):
        text += f"\n\nChosen: {selection['chosen']}."
    for what, entry in selection.items():
        if isinstance(entry, dict):
            text += "\n\n" + _selection(entry, f"{what.capitalize()}: chosen")
    return text


def _evaluation(evaluation: dict) -> str:
    rows = []
    for what, entry in evaluation.items():
        if isinstance(entry, dict) and "win_rate" in entry:
            total = entry.get("mean_total", "")
            rows.append(
                [
                    what.replace("_", " "),
                    f"{entry['games']:,}",
                    _rate(entry["win_rate"], entry.get("ci95")),
                    str(total),
                ]
            )
    parity = evaluation.get("parity")
    text = f"**Evaluated** by `{evaluation.get('command', '')}`"
    if parity is not None:
        text += f" (parity {100 * parity:.1f}%)"
    return text + ":\n\n" + _table(["against", "games", "win rate [95% CI]", "mean total"], rows)


def _rate(rate: float, interval: list[float] | None) -> str:
    text = f"**{100 * rate:.1f}%**"
    if interval:
        text += f" [{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"
    return text


# API reference ---------------------------------------------------------------------------------


def api_markdown(package: str) -> str:
    """``::: package.module`` for the package and each public module under it, in name order."""
    folder = ROOT / package.replace(".", "/")
    names = [package]
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if any(p.startswith("_") for p in parts):
            continue  # __init__ (the package itself), __main__, private modules
        names.append(".".join(parts))
    return "\n\n".join(f"::: {name}" for name in names)


class SphinxRoles(griffe.Extension):
    """``:func:`name``` (and the other Sphinx roles, ``~`` included) in a docstring as ``name`` in
    code, so that the API reference shows names, not role markup."""

    ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|obj|exc|const):`~?([^`]+)`")

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the roles of each object's docstring as it is loaded."""
        if obj.docstring is not None:
            obj.docstring.value = self.ROLE.sub(r"`\1`", obj.docstring.value)
