"""Evaluation of Odin agents: tournaments on seeded deals, statistics, the studies behind
``evaluate.py`` and their plots, and helpers for the research notebooks. Imports :mod:`agents`
and :mod:`odin_env` only.

- :mod:`odin_lab.evaluation.tournament`: seeded, seat-rotated games on either engine, in parallel;
- :mod:`odin_lab.evaluation.workers`: local worker processes that a Ctrl-C ends at once;
- :mod:`odin_lab.evaluation.distributed`: Ray (optional): connecting to a cluster, tasks in order;
- :mod:`odin_lab.evaluation.stats`: win rates with Wilson intervals, seat effects, ratings;
- :mod:`odin_lab.evaluation.studies`: the tournament, seating and thresholds studies;
- :mod:`odin_lab.evaluation.showcase`: what ``make run`` shows;
- :mod:`odin_lab.evaluation.analysis`: what the notebooks need beyond those.
"""
