"""Every research notebook runs top to bottom in QUICK mode, in a kernel of this interpreter.

The notebook is read into memory and a cell setting ``QUICK = True`` is injected after its
``parameters`` cell (as papermill does); the committed files are never written. The committed
notebooks must keep the outputs of a full-size run (``QUICK = False``), figures included, so a
reader sees the results without running anything.

To refresh the committed outputs after a change (a full-size run, minutes per notebook):
``python tests/test_notebooks.py [NAME ...]`` (default: every notebook).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = [
    "01_quickstart.ipynb",
    "02_seat_effect.ipynb",
    "03_thresholds.ipynb",
    "04_strategies_and_training.ipynb",
    "05_goat.ipynb",
]
CELL_TIMEOUT_S = 240


class ThisInterpreter(KernelSpecManager):
    """Every kernel name resolves to an IPython kernel of ``sys.executable``: no dependence on
    the user's installed kernelspecs."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name=f"odin-lab tests ({sys.executable})",
            language="python",
            env={"MPLBACKEND": "Agg"},  # no display needed; the notebooks draw inline PNGs
        )


def parameters_index(nb: nbformat.NotebookNode) -> int:
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"expected one cell tagged 'parameters', found {len(tagged)}"
    return tagged[0]


def with_parameters(nb: nbformat.NotebookNode, **values: object) -> nbformat.NotebookNode:
    """A copy of ``nb`` with a cell setting ``values`` right after its parameters cell."""
    nb = nbformat.from_dict(nb)
    source = "\n".join(f"{name} = {value!r}" for name, value in values.items())
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(parameters_index(nb) + 1, cell)
    return nb


def execute(nb: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Run every cell in a fresh kernel of this interpreter; raises on the first error."""
    manager = KernelManager(kernel_spec_manager=ThisInterpreter(), kernel_name="odin-lab")
    client = NotebookClient(
        nb, km=manager, timeout=CELL_TIMEOUT_S, resources={"metadata": {"path": str(cwd)}}
    )
    return client.execute()


def outputs(nb: nbformat.NotebookNode, kind: str) -> list:
    """Outputs of ``kind`` (``text`` for printed text, ``image`` for PNG figures)."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if kind == "text" and out.get("name") == "stdout":
                found.append(out["text"])
            elif kind == "image" and "image/png" in out.get("data", {}):
                found.append(out["data"]["image/png"])
    return found


def committed(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / name, as_version=4)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_in_quick_mode_and_shows_figures(name):
    source = committed(name)
    quick = with_parameters(source, QUICK=True)
    quick.cells.append(nbformat.v4.new_code_cell("import sys\nprint(sys.executable, end='')"))
    ran = execute(quick, cwd=NOTEBOOKS)
    # Ran in this interpreter, in QUICK mode, and every code cell produced what it should.
    assert ran.cells[-1].outputs[0]["text"] == sys.executable
    assert ran.cells[parameters_index(ran) + 1].source == "QUICK = True"
    assert all(c.get("execution_count") for c in ran.cells if c.cell_type == "code")
    assert outputs(ran, "image"), f"{name} drew no figure"
    assert outputs(ran, "text"), f"{name} printed no result"
    # The committed file is untouched by the run.
    assert committed(name) == source


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_keeps_its_full_size_outputs(name):
    nb = committed(name)
    params = nb.cells[parameters_index(nb)].source
    assert "QUICK = False" in params
    assert not any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.get("execution_count") for c in code_cells]
    assert counts == list(range(1, len(code_cells) + 1)), "not run top to bottom in one go"
    assert not [o for c in code_cells for o in c.outputs if o.output_type == "error"]
    assert outputs(nb, "image"), f"{name} is committed without its figures"


def test_notebooks_import_from_the_packages_only():
    # The notebooks hold no logic of their own: no function or class definitions.
    for name in NAMES:
        for cell in committed(name).cells:
            if cell.cell_type == "code":
                lines = cell.source.splitlines()
                assert not [ln for ln in lines if ln.startswith(("def ", "class "))], name


def refresh(name: str) -> None:
    """Run notebook ``name`` full size (as committed) and save it with its outputs, atomically."""
    ran = execute(committed(name), cwd=NOTEBOOKS)
    path = NOTEBOOKS / name
    fd, tmp = tempfile.mkstemp(dir=NOTEBOOKS, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            nbformat.write(ran, f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


if __name__ == "__main__":
    for notebook in sys.argv[1:] or NAMES:
        if notebook not in NAMES:
            sys.exit(f"unknown notebook {notebook!r}: choose from {', '.join(NAMES)}")
        print(f"running {notebook} full size ...", flush=True)
        refresh(notebook)
