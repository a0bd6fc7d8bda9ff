"""``odin_lab.training.labels``: decisions drawn from seeded games and labelled by their own
search, as the oracle redoes it; the searches kept in a cache, searched only once, a stop losing
at most a file of them; a cache of other searches, a broken file or a full disk refused in one
line with the files left as they were."""

from __future__ import annotations

import numpy as np
import pytest

from agents.dmc import BUNDLED_DMC_ONE, DMCAgent
from agents.search import score_candidates
from odin_env.observation import views
from odin_env.seeding import spawn_seed
from odin_lab.training import labels


def test_games_draw_the_first_players_decisions_labelled_by_their_own_search():
    """``--games``: the first spec's decisions with a choice, in the order played, each cut to
    the ``top`` legal actions ``dmc_one`` values most (or kept whole with ``top`` 0), and
    labelled by the search of decision ``k`` at ``spawn_seed(seed, k, 1)``: the oracle redoes
    each search with ``score_candidates``."""
    network = DMCAgent.load(BUNDLED_DMC_ONE)
    specs = ["greedy", "random", "shaper"]
    cut = labels.game_decisions(specs, 6, 7, top=2, playout="greedy", rollouts=8, workers=1)
    whole = labels.game_decisions(specs, 6, 7, top=0, playout="greedy", rollouts=8, workers=2)
    assert len(cut) == len(whole) == 6
    shortened = 0
    for k, ((obs, candidates, cut_labels), (same, legal, all_labels)) in enumerate(zip(cut, whole)):
        assert np.array_equal(obs, same)  # the same decisions, whatever the shortlist
        assert views(obs)["players"].argmax() + 2 == 3 and legal.size > 1
        assert set(candidates) <= set(legal) and candidates.size == min(2, legal.size)
        values = network.values(obs[None], labels.candidate_mask(legal)[None])[0]
        left_out = np.setdiff1d(legal, candidates)
        if left_out.size:  # the network's best are kept
            assert values[candidates].min() >= values[left_out].max()
        shortened += left_out.size > 0
        for searched, got in ((candidates, cut_labels), (legal, all_labels)):
            mask = labels.candidate_mask(searched)
            seed = spawn_seed(7, k, 1)
            scores = score_candidates(obs, mask, rollouts=8, seed=seed, policy="greedy")
            np.testing.assert_array_equal(got, -scores.penalty)
    assert shortened >= 2


def _same_scores(found, want) -> bool:
    return len(found) == len(want) and all(
        np.array_equal(a.actions, b.actions)
        and np.array_equal(a.win, b.win)
        and np.array_equal(a.penalty, b.penalty)
        and a.worlds == b.worlds
        for a, b in zip(found, want, strict=True)
    )


@pytest.fixture(scope="module")
def drawn():
    """Eight decisions of a small table and their searches without a cache (the oracle)."""
    specs = ["greedy", "random", "shaper"]
    decisions = labels.game_decisions(specs, 8, 7, top=3, playout="greedy", rollouts=8, workers=1)
    return decisions, labels.relabel(decisions, "greedy", 8, seed=5, workers=1)


class Counted:
    """``search_rows`` that counts the decisions it searches (and can stop at the ``stop``-th
    call, as Ctrl-C would)."""

    def __init__(self, stop: int | None = None):
        self.rows, self.calls, self.stop = 0, 0, stop
        self.search_rows = labels.search_rows

    def __call__(self, task):
        self.calls += 1
        if self.calls == self.stop:
            raise KeyboardInterrupt
        self.rows += len(task[2])
        return self.search_rows(task)


def test_a_cache_keeps_the_searches_and_a_later_call_searches_only_what_it_lacks(
    drawn, tmp_path, monkeypatch
):
    """With a cache the searches are those without one; a second call of the same decisions
    searches none, one of more searches only the new ones, one of fewer none; the parts are
    files of ``CACHE_PART`` decisions."""
    decisions, want = drawn
    monkeypatch.setattr(labels, "CACHE_PART", 3)
    monkeypatch.setattr(labels, "PART", 2)
    for calls, count, searched in ((5, 5, 5), (5, 5, 0), (8, 8, 3), (4, 4, 0), (8, 8, 0)):
        counted = Counted()
        monkeypatch.setattr(labels, "search_rows", counted)
        found = labels.relabel(decisions[:calls], "greedy", 8, seed=5, workers=1, cache=tmp_path)
        assert _same_scores(found, want[:count]) and counted.rows == searched
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "part-000000.npz",
        "part-000001.npz",
        "part-000002.npz",
    ]
    # Two workers read the same cache (nothing to search) and search the same new decisions.
    again = labels.relabel(decisions, "greedy", 8, seed=5, workers=2, cache=tmp_path)
    assert _same_scores(again, want)


def test_a_stopped_call_keeps_the_parts_it_finished(drawn, tmp_path, monkeypatch):
    decisions, want = drawn
    monkeypatch.setattr(labels, "CACHE_PART", 4)
    monkeypatch.setattr(labels, "PART", 2)
    monkeypatch.setattr(labels, "search_rows", Counted(stop=3))  # in the second part
    with pytest.raises(KeyboardInterrupt):
        labels.relabel(decisions, "greedy", 8, seed=5, workers=1, cache=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["part-000000.npz"]
    counted = Counted()
    monkeypatch.setattr(labels, "search_rows", counted)
    found = labels.relabel(decisions, "greedy", 8, seed=5, workers=1, cache=tmp_path)
    assert _same_scores(found, want) and counted.rows == 4


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (dict(seed=6), "holds the searches of other decisions"),
        (dict(rollouts=16), "holds the searches of other decisions"),
        (dict(playout="random"), "holds the searches of other decisions"),
        (dict(garbage=b"not a zip file"), "is not a part of a searches cache"),
        (dict(arrays=True), "is not a part of a searches cache: its arrays do not fit together"),
    ],
)
def test_a_cache_of_other_searches_or_a_broken_file_is_refused_and_left_as_it_is(
    drawn, tmp_path, monkeypatch, change, named
):
    decisions, _ = drawn
    monkeypatch.setattr(labels, "CACHE_PART", 4)
    labels.relabel(decisions[:4], "greedy", 8, seed=5, workers=1, cache=tmp_path)
    part = tmp_path / "part-000000.npz"
    if "garbage" in change:
        part.write_bytes(change.pop("garbage"))
    if change.pop("arrays", False):
        with np.load(part) as file:
            arrays = dict(file)
        np.savez(part, **{**arrays, "win": arrays["win"][:-1]})
    before = part.read_bytes()
    settings = {"playout": "greedy", "rollouts": 8, "seed": 5, **change}
    with pytest.raises(labels.CacheError) as refused:
        labels.relabel(decisions[:4], workers=1, cache=tmp_path, **settings)
    assert named in str(refused.value) and str(part) in str(refused.value)
    assert "\n" not in str(refused.value)
    assert part.read_bytes() == before


def test_a_full_disk_is_one_line_and_keeps_the_parts_written(drawn, tmp_path, monkeypatch):
    decisions, want = drawn
    monkeypatch.setattr(labels, "CACHE_PART", 4)
    labels.relabel(decisions[:4], "greedy", 8, seed=5, workers=1, cache=tmp_path)
    before = (tmp_path / "part-000000.npz").read_bytes()

    def full(path, payload):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(labels, "write_atomic", full)
    with pytest.raises(labels.CacheError, match="cannot write .*part-000001.npz.*space"):
        labels.relabel(decisions, "greedy", 8, seed=5, workers=1, cache=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["part-000000.npz"]
    assert (tmp_path / "part-000000.npz").read_bytes() == before
    monkeypatch.undo()
    monkeypatch.setattr(labels, "CACHE_PART", 4)
    found = labels.relabel(decisions, "greedy", 8, seed=5, workers=1, cache=tmp_path)
    assert _same_scores(found, want)
