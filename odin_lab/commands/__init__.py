"""The command-line tools: ``train``, ``evaluate`` and ``play``, each a ``main(argv)`` returning
its exit code. ``train.py``, ``evaluate.py`` and ``play.py`` at the repository's top run them, and
so do the console scripts ``odin-train``, ``odin-evaluate`` and ``odin-play`` of an install."""

# First of the lab's modules: odin_lab.cli sets one BLAS thread before numpy loads.
from odin_lab import cli  # noqa: E402, F401
