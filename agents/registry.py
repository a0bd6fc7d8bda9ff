"""Every player of the lab by name: ``make(spec)`` and ``make_batch_agent(spec)``.

Specs: ``random``; a hand-written agent (``greedy``, ``shaper``, ``planner``:
:data:`agents.heuristics.HEURISTICS`); ``ppo`` (the bundled models, one per table size that has
one: :class:`agents.ppo.BundledPPO`) or ``ppo:PATH`` (a model file); ``dmc`` (the bundled
network, every table size: :data:`agents.dmc.BUNDLED_DMC`) or ``dmc:PATH`` (a deep Monte Carlo
model file, :class:`agents.dmc.DMCAgent`; ``ppo:PATH`` plays one too when its header names
``dmc``); ``linear`` (the bundled linear feature player, :data:`agents.linear.BUNDLED_LINEAR`)
or ``linear:PATH`` (such a player's file, :class:`agents.linear.LinearAgent`; ``ppo:PATH`` plays
one too); ``search`` (:class:`agents.search.SearchAgent`) in the forms of :data:`SEARCH_SPECS`.
Batched forms (one call for a whole batch of games, :mod:`agents.batch`) exist for every agent
but ``search``; :func:`has_batch_form` says which.

Outside agents (:mod:`agents.outside`): ``module:Name``, ``path/to/file.py:Name``, or a name an
installed package adds (entry-point group ``odin_lab.agents``). They run the user's own code, by
the user's choice. The lab's own names win: ``ppo:X`` and ``dmc:X`` are always model files,
``search:X`` a budget, and a package cannot take the name ``greedy``. Their batched form is their
own ``act_batch``, where they have one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import outside
from agents.base import Agent, RandomAgent
from agents.batch import BatchAgent, BatchRandomAgent
from agents.dmc import ALGO as DMC
from agents.dmc import BUNDLED_DMC, DMCAgent, model_algo, read_dmc_model
from agents.heuristics import HEURISTICS
from agents.linear import ALGO as LINEAR
from agents.linear import BUNDLED_LINEAR, LinearAgent, read_linear
from agents.model_file import read_model
from agents.outside import FORMS, absolute_spec
from agents.ppo import BundledPPO, PPOAgent
from agents.search import PRIOR, ROLLOUTS, TOP, SearchAgent
from odin_env.observation import observe
from odin_env.rules import Config, Game

SEARCH_MAX_ROLLOUTS = 100_000
"""Most playouts per decision ``search:N`` takes (about a minute a decision on one core)."""
SEARCH_MAX_MS = 60_000
"""Most milliseconds per decision ``search:Nms`` takes (a minute)."""
SEARCH_SPECS = {
    "search": f"{ROLLOUTS} playouts per decision, shared among the {TOP} candidates that the "
    "one-pass network dmc_one values most; in a Goat game, among all",
    "search:N": f"N playouts per decision, 1-{SEARCH_MAX_ROLLOUTS:,}",
    "search:Nms": f"N milliseconds per decision, 1-{SEARCH_MAX_MS:,}",
    "search:race, search:N:race, search:Nms:race": "the budget a cap: a candidate leaves the "
    "search once it is clearly behind",
}
"""The one description of the ``search`` specs, form by form: the CLIs' help, the refusals and
the table of docs/agents.md (:func:`search_table`) are made from it."""
RETIRED_SEARCH_OPTIONS = (
    "model",
    "post",
    "net",
    "netplay",
    "netself",
    "netleaf",
    "one",
    "penalty",
    "deep",
)
"""Options of ``search`` that did not pay, refused in one line that names :data:`FINDINGS` and
the commit :data:`RETIRED_AT` where its commands still run."""
FINDINGS, RETIRED_AT = "docs/findings/search.md", "282f95f"
MODEL_KINDS = ("ppo", DMC, LINEAR)
"""Spec kinds whose rest is a model file's path (``KIND:PATH``, read as data)."""


def batch_form_names() -> list[str]:
    """The specs with a batched form (``act_batch``), by name (``ppo`` also with a path)."""
    return ["random", *HEURISTICS, "ppo", DMC, f"{DMC}:PATH", LINEAR, f"{LINEAR}:PATH"]


def agent_names() -> list[str]:
    """The lab's own specs without a path (outside agents: :func:`outside_names`), but
    ``linear``: a held-out opponent stays out of the lists that tools enumerate (a league drawn
    from them would train against it); it is a spec all the same."""
    return ["random", *HEURISTICS, "ppo", DMC, "search"]


GOAT_AGENTS = ("random", *HEURISTICS, "search")
"""The lab's agents that play a game with the Goat (RULES G1-G5); the others refuse one."""


def check_plays(spec: str, config: Config, agent: Any = None) -> None:
    """``ValueError`` (one line, naming the setting) when agent ``spec`` does not play games of
    ``config``: for a Goat game, the agent (``agent``, else one built here) is asked for the
    first decision of a seeded one (an agent that does not play the Goat refuses it there)."""
    if not config.goat:
        return
    agent = make(spec) if agent is None else agent
    game = Game(config, seed=0)
    game.play_forced()
    observation, mask = observe(game, game.current), game.legal_mask()
    try:
        if callable(getattr(agent, "act", None)):
            agent.act(observation, mask)
        else:  # a batched form alone
            agent.act_batch(observation[None], mask[None])
    except ValueError as e:
        raise ValueError(f"agent {spec!r}: {e}") from None


def outside_names() -> list[str]:
    """The agent names installed packages add (entry-point group ``odin_lab.agents``), less
    any the lab's own names take."""
    return [n for n in outside.entry_point_names() if n not in agent_names() and n != LINEAR]


def spec_help() -> str:
    """What an agent spec may be, in one paragraph (the CLIs' help)."""
    return (
        f"{', '.join(HEURISTICS)} and random (hand-written), ppo (the bundled PPO models), "
        f"ppo:PATH (a model file: read as data, never run as code), {DMC} (the bundled network "
        f"alone, every table size) or {DMC}:PATH (a deep Monte Carlo model file, also data), "
        f"{LINEAR} (the bundled linear feature player, a held-out opponent) or {LINEAR}:PATH "
        "(such a player's file, data), "
        f"{search_forms()}; or your own agent, "
        f"{FORMS}, "
        "or a name an installed package "
        "adds (entry points odin_lab.agents): such a spec imports and runs your code, by your "
        "choice (docs/own-agent.md)"
    )


def check_spec(spec: str) -> None:
    """``ValueError`` (one line) for a spec :func:`make` would refuse by its name. A model file
    (``ppo:PATH``) is only read by ``make``; an outside agent's module is imported here (its
    factory is called only by ``make``)."""
    if not isinstance(spec, str):
        raise ValueError(f"an agent spec is a string; got {spec!r}")
    name, colon, path = spec.partition(":")
    if colon and not path and name in (*MODEL_KINDS, "search"):
        plain = (
            f" (or plain {name}, for the bundled models)" if name in ("ppo", DMC, LINEAR) else ""
        )
        raise ValueError(f"agent spec {spec!r}: name what comes after the colon{plain}")
    if name in ("ppo", DMC, LINEAR) or (name in agent_names() and not path):
        return
    if name == "search":
        _search_keywords(path)
        return
    if name in agent_names() or (not path and name not in outside_names()):
        raise ValueError(
            f"unknown agent spec {spec!r}: allowed are {', '.join(agent_names())}, ppo:PATH, "
            f"{DMC}:PATH, {LINEAR}, {LINEAR}:PATH, "
            f"search:N, search:Nms, {FORMS} (your own code), or a name from an installed "
            f"package ({', '.join(outside_names()) or 'none installed'})"
        )
    outside.find(spec)


def names_outside_code(spec: object) -> bool:
    """Whether ``spec`` names outside code (:mod:`agents.outside`: ``module:Name``,
    ``path/to/file.py:Name``, an installed package's name), told from its text alone: nothing is
    imported or read. The lab's own specs, model files among them, and specs :func:`check_spec`
    refuses by their name are not. Readers of specs from files refuse these unless the command
    line names them, so that a copied file runs no code."""
    if not isinstance(spec, str):
        return False
    name, colon, _ = spec.partition(":")
    if name in (*MODEL_KINDS, "search") or name in agent_names():
        return False
    return bool(colon) or name in outside_names()


def search_forms() -> str:
    """The ``search`` specs of :data:`SEARCH_SPECS` in one line: ``FORM (what it does), ...``."""
    return ", ".join(f"{form} ({meaning})" for form, meaning in SEARCH_SPECS.items())


def search_table() -> str:
    """The ``search`` specs of :data:`SEARCH_SPECS` as the Markdown table of docs/agents.md."""
    rows = ["| spec | what it does |", "|---|---|"]
    for form, meaning in SEARCH_SPECS.items():
        rows.append(f"| {', '.join(f'`{f}`' for f in form.split(', '))} | {meaning} |")
    return "\n".join(rows)


def search_network(spec: str) -> Path | None:
    """The network file a spec's search shortlists with (:data:`agents.search.PRIOR`), so that
    its results depend on that file; ``None`` for a spec that is not a search."""
    return PRIOR if spec.partition(":")[0] == "search" else None


def _search_keywords(text: str) -> dict[str, int | bool]:
    """The :class:`SearchAgent` keywords of what follows ``search:`` (:data:`SEARCH_SPECS`): a
    budget (``"300"``: rollouts, ``"50ms"``: ms), then ``race`` or nothing (``"race"`` alone
    keeps the default budget); ``ValueError`` (one line) for anything else, naming where a
    retired option's figures are (:data:`RETIRED_SEARCH_OPTIONS`)."""
    spec, parts = f"search:{text}", text.split(":")
    retired = [option for option in dict.fromkeys(parts) if option in RETIRED_SEARCH_OPTIONS]
    if retired:
        named = " and ".join(f":{option}" for option in retired)
        verb = "is" if len(retired) == 1 else "are"
        why = ""
        if {"net", "one"} & set(retired):
            why = ": the default search now shortlists with the one-pass network dmc_one"
        raise ValueError(
            f"agent spec {spec!r}: {named} {verb} retired{why} (what was measured: "
            f"{FINDINGS}; its commands run at commit {RETIRED_AT})"
        )
    keywords: dict[str, int | bool] = {}
    if parts[0] != "race":
        budget = parts.pop(0)
        number, ms = (budget[:-2], True) if budget.endswith("ms") else (budget, False)
        if number.isdigit() and 1 <= int(number) <= (SEARCH_MAX_MS if ms else SEARCH_MAX_ROLLOUTS):
            keywords["ms" if ms else "rollouts"] = int(number)
        else:
            parts = [budget]  # refused below
    if parts not in ([], ["race"]):
        raise ValueError(f"bad search spec {spec!r}: allowed are {search_forms()}")
    if parts:
        keywords["race"] = True
    return keywords


def make(spec: str, seed: int | None = None) -> Agent:
    """Build an agent from a spec string (see the module docstring); ``ValueError`` (one line)
    if it is unknown or an outside agent fails to load."""
    check_spec(spec)
    name, _, path = spec.partition(":")
    if name == "random":
        return RandomAgent(seed)
    if name == DMC or (name == "ppo" and path and model_algo(path) == DMC):
        return DMCAgent.load(path or BUNDLED_DMC)
    if name == LINEAR or (name == "ppo" and path and model_algo(path) == LINEAR):
        return LinearAgent.load(path or BUNDLED_LINEAR)
    if name == "ppo":
        return PPOAgent.load(path, seed=seed) if path else BundledPPO(seed)
    if name == "search":
        return SearchAgent(seed, **(_search_keywords(path) if path else {}))
    if name in HEURISTICS and not path:
        return HEURISTICS[name](seed=seed)
    return outside.build(spec, seed)


def has_batch_form(spec: str) -> bool:
    """Whether :func:`make_batch_agent` accepts ``spec`` (``ValueError`` if it is unknown); an
    outside agent has one when it has ``act_batch``."""
    check_spec(spec)
    name, _, path = spec.partition(":")
    if name in (DMC, LINEAR):
        return True
    if name in agent_names():
        return spec == "random" or spec in HEURISTICS or name == "ppo"
    return outside.has_act_batch(spec)


def make_batch_agent(spec: str, seed: int | None = None) -> BatchAgent:
    """The batched agent of a spec: ``random`` -> :class:`agents.batch.BatchRandomAgent`, a
    heuristic -> its numba form (:data:`agents.heuristics.HEURISTICS`),
    ``ppo``/``ppo:PATH`` -> the PPO player, an outside agent -> itself (both have
    ``act_batch``); ``ValueError`` for an agent without a batched form or an unknown spec."""
    if not has_batch_form(spec):
        raise ValueError(
            f"agent {spec!r} has no batched form (act_batch): batched agents are "
            f"{', '.join(batch_form_names())}, and outside agents with act_batch"
        )
    if spec == "random":
        return BatchRandomAgent(seed)
    if spec in HEURISTICS:
        return HEURISTICS[spec](seed)
    return make(spec, seed)


def read_model_file(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(info, network state)`` of a lab model file or checkpoint of any kind, read by the reader
    of the kind its header names (:func:`agents.dmc.read_dmc_model` for ``dmc``, else
    :func:`agents.model_file.read_model`); errors as those readers raise them."""
    readers = {DMC: read_dmc_model, LINEAR: read_linear}
    return readers.get(model_algo(path), read_model)(path)


__all__ = [
    "GOAT_AGENTS",
    "MODEL_KINDS",
    "SEARCH_MAX_MS",
    "SEARCH_MAX_ROLLOUTS",
    "SEARCH_SPECS",
    "absolute_spec",
    "agent_names",
    "batch_form_names",
    "check_plays",
    "check_spec",
    "has_batch_form",
    "make",
    "make_batch_agent",
    "names_outside_code",
    "outside_names",
    "read_model_file",
    "search_forms",
    "search_network",
    "search_table",
    "spec_help",
]
