"""Evaluation of Odin agents: tournaments on seeded deals, statistics, the studies behind
``evaluate.py`` and their plots, and helpers for the research notebooks. Imports :mod:`agents`,
:mod:`odin_env` and :mod:`odin_lab.files` only.

- :mod:`odin_lab.evaluation.tournament`: seeded, seat-rotated games on either engine, in parallel;
- :mod:`odin_lab.evaluation.players`: the agents a tournament seats, each built once per command;
- :mod:`odin_lab.evaluation.workers`: local worker processes that a Ctrl-C ends at once (started
  by :mod:`odin_lab.evaluation.processes`, which the kernels' compile helper
  :mod:`odin_lab.evaluation.warm` uses too);
- :mod:`odin_lab.evaluation.distributed`: Ray (optional): connecting to a cluster, tasks in order;
- :mod:`odin_lab.evaluation.stats`: win rates with Wilson intervals, seat effects, ratings;
- :mod:`odin_lab.evaluation.studies`: the tournament, seating and thresholds studies;
- :mod:`odin_lab.evaluation.showcase`: what ``make run`` shows;
- :mod:`odin_lab.evaluation.analysis`: what the notebooks need beyond those.
"""
