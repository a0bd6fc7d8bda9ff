"""Train an Odin agent.

``python train.py --help``; installed, also the console script ``odin-train``. A thin launcher:
the command is :mod:`odin_lab.commands.train`.
"""

import signal
import sys

# Ctrl-C while the lab loads ends quietly (exit 130); odin_lab.launch then takes over.
signal.signal(signal.SIGINT, lambda signum, frame: sys.exit(130))

from odin_lab.launch import train  # noqa: E402 (after the handler above)


def main(argv: list[str] | None = None) -> int:
    """The command itself, for code that calls it (``main([...])``): imported here, not above,
    so that the launcher's signal handling comes first."""
    from odin_lab.commands.train import main as command

    return command(argv)


if __name__ == "__main__":
    sys.exit(train())
