"""Issue 59, item 8: a full disk names the file that could not be written (it said
``cannot write (No space left on device: )``). On a real 1 MiB tmpfs where the machine allows a
mount, else on a simulated ENOSPC."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from odin_lab import files


@pytest.fixture
def small_disk(tmp_path: Path):
    """A folder on a full-able filesystem: a real 1 MiB tmpfs, or ``None`` where none mounts."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True
    )
    yield mount if done.returncode == 0 else None
    if done.returncode == 0:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_full_disk_names_the_file(small_disk, tmp_path, monkeypatch):
    if small_disk is None:  # no mount here: the write itself fails as a full disk makes it fail
        target = tmp_path / "out" / "checkpoint.safetensors"

        def full(fd, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "write", full)
    else:
        target = small_disk / "run" / "checkpoint.safetensors"
    with pytest.raises(OSError) as caught:
        files.write_atomic(target, b"x" * (2 * 2**20))
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(target)
    assert not target.exists()
    assert not list(target.parent.glob(".*.tmp"))  # no half-written file left
