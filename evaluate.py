"""Play, study and compare Odin agents.

``python evaluate.py --help``; installed, also the console script ``odin-evaluate``. A thin
launcher: the command is :mod:`odin_lab.commands.evaluate`.
"""

import sys

from odin_lab.launch import evaluate

if __name__ == "__main__":
    sys.exit(evaluate())
