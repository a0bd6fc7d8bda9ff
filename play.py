"""Play Odin against the lab's agents in the terminal.

``python play.py --help``; installed, also the console script ``odin-play``. A thin launcher:
the command is :mod:`odin_lab.commands.play`.
"""

import sys

from odin_lab.launch import play

if __name__ == "__main__":
    sys.exit(play())
