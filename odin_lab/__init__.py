"""odin-lab's own package above the players: training, evaluation, the web app and the CLI helpers.

``odin_env`` (the game and its environments) and ``agents`` (players) sit beside it at the top
level; everything here may import them, and they import nothing from here. Inside, imports run
down this list (tests/test_layout.py checks it):

- :mod:`odin_lab.files`: the lab's files written whole (atomic writes, model files);
- :mod:`odin_lab.evaluation`: tournaments, studies, statistics and figures;
- :mod:`odin_lab.training`: the training runs (it evaluates as it trains);
- :mod:`odin_lab.webapp`: the browser front end (it plays; it does not train);
- :mod:`odin_lab.commands` and :mod:`odin_lab.cli`: the command-line tools and their helpers.

Importing ``odin_lab`` alone loads nothing: its subpackages pull in their own dependencies (torch
for ``training``, FastAPI for ``webapp``), which come with the matching extras of the install.
"""
