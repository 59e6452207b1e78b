"""Faults of a real run: SIGTERM stops it cleanly within 2 s; kill -9 never breaks a checkpoint."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch
from training_kit import EXAMPLES, ROOT

from revstudio.training import checkpoint, runs

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "two_branch"))


def _env() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def test_sigterm_stops_within_two_seconds_with_a_checkpoint(tmp_path) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "revstudio", "train", EXAMPLE, "--steps", "1000000", "--batch-size", "8",
         "--log-every", "1", "--checkpoint-every", "0", "--json", "--out", str(out), "--device", "cpu"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=str(tmp_path))
    try:
        rows = []
        assert proc.stdout is not None
        for line in proc.stdout:
            rows.append(json.loads(line))
            if rows[-1]["kind"] == "step" and rows[-1]["step"] >= 3:
                break
        assert rows and rows[-1]["kind"] == "step", proc.stderr.read() if proc.stderr else ""
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    last = json.loads(rest.splitlines()[-1])
    assert last["event"] == "stopped" and last["checkpoint"] == "checkpoints/last.pt"
    assert took < 2.0, f"stopping took {took:.2f} s"
    info = runs.read_run(str(out))
    assert info.status == "stopped" and info.step == last["step"]
    assert checkpoint.load(str(out / "checkpoints" / "last.pt"))["step"] == last["step"]
    assert runs.read_metrics(str(out))[-1] == last


def test_kill_9_during_checkpointing_leaves_a_loadable_checkpoint(tmp_path) -> None:
    # the child rewrites a checkpoint of a few MiB in a loop; it is killed at random moments,
    # mostly in the middle of a write, and every time the file is a whole checkpoint
    path = str(tmp_path / "checkpoints" / "last.pt")
    weights = {"w": torch.randn(512, 1024)}
    checkpoint.save(path, {"step": 0, "model": weights})
    rng = random.Random(0)
    for _ in range(6):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only writes until it is killed
            try:
                step = 1
                while True:
                    checkpoint.save(path, {"step": step, "model": weights})
                    step += 1
            finally:
                os._exit(0)
        time.sleep(0.05 + rng.random() * 0.3)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        data = checkpoint.load(path)
        assert data["format"] == "revstudio-checkpoint" and torch.equal(data["model"]["w"], weights["w"])
        assert data["step"] >= 0
    leftovers = [n for n in os.listdir(tmp_path / "checkpoints") if n != "last.pt"]
    # a temporary file of the killed write may stay behind; it is never what a reader loads
    assert all(n.startswith(".last.pt.") and n.endswith(".tmp") for n in leftovers)


SLOW_START = r"""
import importlib.abc, runpy, sys, time


class SlowCli(importlib.abc.MetaPathFinder):  # a loaded machine: the CLI's imports take a while
    def find_spec(self, name, path=None, target=None):
        if name == "revstudio.cli":
            print("loading", file=sys.stderr, flush=True)
            time.sleep(1.5)
        return None


sys.meta_path.insert(0, SlowCli())
sys.argv[0] = "revstudio"
runpy.run_module("revstudio", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("nproc", [1, 2])
def test_a_stop_while_the_run_still_loads_stops_it_cleanly(tmp_path, nproc: int) -> None:
    """The app's Stop right after Train (or a Ctrl-C) came while the worker still imported, before
    its stop handler was in: SIGTERM killed it (exit -15, no ``stopped`` row, the app said "killed
    after the grace period"); SIGINT printed a KeyboardInterrupt traceback."""
    out = tmp_path / "run"
    code, rest, err = _sigterm_while_loading(SLOW_START, tmp_path, out, ["--nproc", "2"] if nproc == 2 else [])
    assert code == 0, err
    assert "Traceback" not in err
    rows = [json.loads(line) for line in rest.splitlines()]
    assert rows[-1]["event"] == "stopped" and rows[-1]["step"] == 0
    assert runs.read_run(str(out)).status == "stopped"


def _sigterm_while_loading(script: str, tmp_path, out, extra: list[str]) -> tuple[int, str, str]:
    """Start ``train`` through ``script`` (which prints "loading" as train's imports begin), send
    SIGTERM then, and return (exit code, stdout, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-P", "-c", script, "train", EXAMPLE, "--steps", "5", "--batch-size", "8", "--json",
         "--out", str(out), "--device", "cpu", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=str(tmp_path))
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == "loading"
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, rest, err


# The `revstudio` command itself: pip's console script imports revstudio.cli and calls main(),
# without python -m's early handlers. The atexit line shows whether the teardown ran.
CONSOLE_SCRIPT = r"""
import atexit, importlib.abc, sys, time


class SlowTrain(importlib.abc.MetaPathFinder):  # a loaded machine: train's imports take a while
    def find_spec(self, name, path=None, target=None):
        if name == "revstudio.clicmd.train":
            print("loading", file=sys.stderr, flush=True)
            time.sleep(1.5)
        return None


sys.meta_path.insert(0, SlowTrain())
atexit.register(lambda: print("teardown", file=sys.stderr, flush=True))
sys.argv[0] = "revstudio"
from revstudio.cli import main
sys.exit(main())
"""


def test_the_revstudio_command_stops_cleanly_while_the_run_still_loads(tmp_path) -> None:
    """`revstudio train` (the console script) had neither python -m's early handlers nor its
    quick exit: SIGTERM while it loaded killed it with nothing written (exit -15), and a stopped
    run sat seconds in the interpreter's torch teardown, past the 2 s the docs promise."""
    out = tmp_path / "run"
    code, rest, err = _sigterm_while_loading(CONSOLE_SCRIPT, tmp_path, out, [])
    assert code == 0, err
    assert "Traceback" not in err and "teardown" not in err
    rows = [json.loads(line) for line in rest.splitlines()]
    assert rows[-1]["event"] == "stopped" and rows[-1]["step"] == 0
    assert runs.read_run(str(out)).status == "stopped"
