"""odin-lab's own package above the players: training, evaluation, the web app and the CLI helpers.

``odin_env`` (the game and its environments) and ``agents`` (players) sit beside it at the top
level; everything here may import them, and they import nothing from here. Importing
``odin_lab`` alone loads nothing: its subpackages pull in their own dependencies (torch for
``training``, FastAPI for ``webapp``), which come with the matching extras of the install.
"""
