"""Kills during a save never corrupt the project and their temp files do not pile up.

A child saves and is killed with SIGKILL, deterministically just before its
rename and at random moments of a save loop. The file on disk always loads, and
the next save removes the leftovers: only temp files of its own pattern, older
than itself and held by no live writer.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from revstudio.core import generate, tempfiles
from revstudio.core.project import load, save

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

CHILD = r'''
import os, sys, time
from revstudio.core import generate
from revstudio.core.project import save
graph = generate.large_graph(int(sys.argv[2]))
if sys.argv[3] == "hang":  # stop right before the rename: the temp file is complete, the target untouched
    real = os.replace
    def hang(src, dst):
        print("writing", flush=True)
        time.sleep(60)
    os.replace = hang
    save(graph, sys.argv[1])
else:
    print("writing", flush=True)
    while True:
        save(graph, sys.argv[1])
'''


def _leftovers(folder: Path, name: str) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith(f".{name}.") and p.name.endswith(".tmp"))


def _kill_child(target: Path, nodes: int, how: str, after: float) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-P", "-c", CHILD, str(target), str(nodes), how],
                            stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"writing"
    time.sleep(after)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def _age(paths: list[Path], seconds: float = 5.0) -> None:
    old = time.time() - seconds
    for p in paths:
        os.utime(p, (old, old))


def test_kill_before_rename_leaves_the_file_intact_and_the_next_save_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "net.revs"
    graph = generate.large_graph(60)
    save(graph, target)
    before = target.read_bytes()
    for _ in range(2):
        _kill_child(target, 200, "hang", 0.2)
    leftovers = _leftovers(tmp_path, "net.revs")
    assert len(leftovers) == 2 and all(p.stat().st_size > 0 for p in leftovers)
    assert target.read_bytes() == before  # the target was never touched
    _age(leftovers)
    save(graph, target)
    assert _leftovers(tmp_path, "net.revs") == []
    assert load(target).nodes.keys() == graph.nodes.keys()


def test_random_kills_never_corrupt_and_never_pile_up(tmp_path: Path) -> None:
    target = tmp_path / "big.revs"
    save(generate.large_graph(10), target)
    rng = random.Random(12)
    for _ in range(4):
        _kill_child(target, 400, "loop", rng.uniform(0.05, 0.6))
        load(target)  # whatever the moment of the kill: a whole, valid project
    _age(_leftovers(tmp_path, "big.revs"))
    save(generate.large_graph(10), target)
    assert _leftovers(tmp_path, "big.revs") == []


def test_cleanup_removes_only_our_own_stale_unlocked_files(tmp_path: Path) -> None:
    target = tmp_path / "p.revs"
    prefix = ".p.revs."
    stale = tmp_path / f"{prefix}abcd_123.tmp"
    stale.write_text("left by a killed save")
    fd, live = tempfiles.create(str(tmp_path), prefix, ".tmp")  # a save in another process, still writing
    others = [tmp_path / f"{prefix}short.tmp", tmp_path / f"{prefix}abcd_1234.tmp.bak",
              tmp_path / ".q.revs.abcd_123.tmp", tmp_path / f"{prefix}ABCD_123.tmp"]
    for p in others:
        p.write_text("not ours")
    link = tmp_path / f"{prefix}zzzz_999.tmp"
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    link.symlink_to(outside)
    _age([stale, Path(live), *others])
    os.utime(link, (time.time() - 5, time.time() - 5), follow_symlinks=False)
    try:
        save(generate.large_graph(5), target)
        assert not stale.exists()
        if tempfiles.fcntl is not None:
            assert Path(live).exists()  # its writer still holds the lock
        assert all(p.exists() for p in others) and link.is_symlink() and outside.read_text() == "keep me"
    finally:
        os.close(fd)
        os.unlink(live)


def test_a_leftover_written_during_the_save_is_kept(tmp_path: Path) -> None:
    """Files younger than the running save may belong to a save racing with it."""
    target = tmp_path / "p.revs"
    fresh = tmp_path / ".p.revs.fresh_12.tmp"
    fresh.write_text("a save that started just now")
    save(generate.large_graph(5), target)
    assert fresh.exists()


def test_export_writes_clean_up_their_own_leftovers(tmp_path: Path) -> None:
    from revstudio.codegen.files import PREFIX, SUFFIX, write_source

    stale = tmp_path / f"{PREFIX}abcdefgh{SUFFIX}"
    stale.write_text("half an export")
    _age([stale])
    write_source("x = 1\n", tmp_path / "model.py")
    assert not stale.exists() and (tmp_path / "model.py").read_text() == "x = 1\n"
