"""The command-line tools: ``train``, ``evaluate`` and ``play``, each a ``main(argv)`` returning
its exit code. ``train.py``, ``evaluate.py`` and ``play.py`` at the repository's top run them, and
so do the console scripts ``odin-train``, ``odin-evaluate`` and ``odin-play`` of an install.

``evaluate``'s subcommands are declared by their own modules (``studies``: the tournament and
the other studies; ``show``: replay, watch, review; ``exploit``), each a
:class:`~odin_lab.commands.common.Subcommand`; ``common`` holds what the tools share. These
modules may import everything below them (:mod:`odin_lab`'s docstring) but the web app."""

# First of the lab's modules: odin_lab.cli sets one BLAS thread before numpy loads.
from odin_lab import cli  # noqa: E402, F401
