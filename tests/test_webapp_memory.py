"""The records files the web app reads are bounded in memory, not only in bytes (issue 59, item
6): records files of many empty objects, each under the byte limit, listed by a real server,
leave its resident memory within a small multiple of its cache limit; and the two estimates the
bound rests on (:mod:`odin_lab.webapp.footprint`) hold against ``tracemalloc``."""

from __future__ import annotations

import gc
import json
import tracemalloc
import urllib.request
from pathlib import Path

import pytest
from test_webapp_server import serving

from agents import make
from odin_env.files import json_parse_bound as parse_bound
from odin_env.rules import Config
from odin_lab.evaluation.records import load_records, parse_records, write_records
from odin_lab.evaluation.tournament import play_deals
from odin_lab.webapp.footprint import footprint, trimmed
from odin_lab.webapp.replays import CACHE_BYTES, MAX_FILE_BYTES, MAX_PARSE_BYTES

HEAD = (
    b'{"format": "odin-lab-games", "version": 2, "config": {"players": 2}, '
    b'"agents_specs": ["random", "random"], "game_records": [], "pad": ['
)


def empty_objects(path: Path, count: int, gap: int = 0) -> None:
    """A valid records file of no games whose key ``pad`` holds ``count`` empty objects, each
    followed by ``gap`` spaces (so that the file may keep under the readers' bound of a parse's
    memory per byte, :data:`odin_lab.evaluation.limits.JSON_MEMORY_PER_BYTE`)."""
    item = b"{}," + b" " * gap
    with open(path, "wb") as f:
        f.write(HEAD)
        chunk = 1_000_000
        for start in range(0, count, chunk):
            n = min(chunk, count - start)
            f.write(item * (n - 1) + (b"{}" if start + n == count else item))
        f.write(b"]}\n")


def memory(pid: int) -> dict[str, int]:
    """The process's resident memory now and at its peak, in bytes."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = {line.split(":")[0]: line.split()[1:] for line in lines}
    return {key: int(fields[key][0]) * 1024 for key in ("VmRSS", "VmHWM")}


def test_files_of_empty_objects_leave_the_server_within_a_few_times_its_cache(tmp_path):
    """Four 31 MB files (each under the 32 MiB limit: refused from their text) and four of
    16 MB, an empty object every 16 bytes (under the parse bound and the readers' memory-per-byte
    limit: parsed, and what the app does not read let go), listed."""
    records = tmp_path / "records"
    records.mkdir()
    for k in range(4):
        empty_objects(records / f"big{k}.json", 10_300_000)
        empty_objects(records / f"small{k}.json", 1_000_000, gap=13)
    assert all(p.stat().st_size < MAX_FILE_BYTES for p in records.iterdir())
    with serving("--out", str(tmp_path / "web"), "--records", str(records)) as server:
        before = memory(server.proc.pid)
        for _ in range(2):  # a listing reads 128 MiB of new files at most: the second the rest
            with urllib.request.urlopen(server.url + "/api/records", timeout=300) as answer:
                listed = {f["file"]: f for f in json.loads(answer.read())["files"]}
        after = memory(server.proc.pid)
    grown, peak = after["VmRSS"] - before["VmRSS"], after["VmHWM"] - before["VmRSS"]
    assert grown < 2 * CACHE_BYTES, f"resident memory grew by {grown / 2**20:.0f} MiB"
    assert peak < 4 * CACHE_BYTES, f"resident memory peaked {peak / 2**20:.0f} MiB higher"
    for k in range(4):
        assert "too many objects, lists and items" in listed[f"records/big{k}.json"]["error"]
        assert listed[f"records/small{k}.json"]["error"] is None


# -- the estimates -----------------------------------------------------------------------------

N = 20_000
SHAPES = {
    "empty objects": "[" + ",".join(["{}"] * N) + "]",
    "empty lists": "[" + ",".join(["[]"] * N) + "]",
    "one-entry objects": "[" + ",".join(['{"a":1000}'] * N) + "]",
    "objects of many keys": "{" + ",".join(f'"k{i}":0' for i in range(N)) + "}",
    "short strings": "[" + ",".join(['"ab"'] * N) + "]",
    "numbered strings": "[" + ",".join(f'"{i}"' for i in range(N)) + "]",
    "large ints": "[" + ",".join(["1000"] * N) + "]",
    "floats": "[" + ",".join(["1e1"] * N) + "]",
    "nested lists": "[" + ",".join(["[[0]]"] * N) + "]",
    "lists of objects": "[" + ",".join(["[{}]"] * N) + "]",
    "objects of lists": "[" + ",".join(['{"a":[]}'] * N) + "]",
    "a long string": '["' + "a" * N + '"]',
    "escapes": '["' + "a\\n" * N + '"]',
    "outside Latin-1": '["' + "a" * N + '\u0101"]',
    "outside Latin-1, escaped": '["' + "a" * N + '\\u0101"]',
    "outside the BMP": '["' + "a" * N + '\U0001d11e"]',
    "outside the BMP, escaped": '["' + "a" * N + '\\ud834\\udd1e"]',
    "many strings outside the BMP": "[" + ",".join(['"a\U0001d11e"'] * N) + "]",
}


def traced(build):
    """``(result, bytes kept, peak bytes)`` of ``build()`` by ``tracemalloc``."""
    gc.collect()
    tracemalloc.start()
    try:
        result = build()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, kept, peak


@pytest.mark.parametrize("shape", SHAPES)
def test_the_parse_bound_is_above_what_parsing_takes(shape):
    raw = SHAPES[shape].encode()
    _, _, peak = traced(lambda: json.loads(raw))
    assert peak <= parse_bound(raw) <= 5 * peak


@pytest.fixture(scope="module")
def tournaments(tmp_path_factory) -> list[Path]:
    """Records files as tournaments write them: 2 players to 1 (the most small values per
    byte), 4 to 15, 6 with the Goat to 30."""
    folder = tmp_path_factory.mktemp("tournaments")
    paths = []
    for players, threshold, goat, deals in [(2, 1, False, 60), (4, 15, False, 8), (6, 30, True, 2)]:
        config = Config(players=players, threshold=threshold, goat=goat)
        agents = [make("random", seed=s) for s in range(players)]
        path = folder / f"{players}p.json"
        write_records(path, config, ["random"] * players, play_deals(agents, config, deals, 1))
        paths.append(path)
    return paths


def test_a_tournament_file_under_the_byte_limit_is_under_the_parse_bound(tournaments):
    """A tournament's records file of up to 32 MiB is never refused for its memory."""
    for path in tournaments:
        raw = path.read_bytes()
        assert parse_bound(raw) * MAX_FILE_BYTES < MAX_PARSE_BYTES * len(raw) * 0.9, path.name


def test_the_footprint_counts_what_a_loaded_file_keeps(tournaments):
    for path in tournaments:
        raw = path.read_bytes()
        loaded, kept, _ = traced(lambda raw=raw: trimmed(parse_records(raw)))
        assert kept <= footprint(loaded) <= 1.5 * kept, path.name
        assert loaded.games == load_records(path).games


def test_only_the_hints_are_kept_beside_the_games(tmp_path):
    text = HEAD.decode() + '{}, {}], "hints": [3, "x", -1, 7, 10000000], "source": "web"}'
    loaded = trimmed(parse_records(text.encode()))
    assert loaded.extra == {"hints": [3, 7]}
