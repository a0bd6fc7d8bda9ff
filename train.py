"""Train an Odin agent.

``python train.py --help``; installed, also the console script ``odin-train``. A thin launcher:
the command is :mod:`odin_lab.commands.train`.
"""

import sys

from odin_lab.launch import train

if __name__ == "__main__":
    sys.exit(train())
