"""Ctrl+C on ``revstudio train --nproc 2``: revstudio's own stop message, nothing of torch's.

The launcher's stop was followed on stderr by torch's elastic agent's own shutdown lines
("Received 2 death signal, shutting down workers", "Sending process N closing signal SIGINT"),
and a Ctrl+C while the workers were still starting ended as "the distributed run ended:
SignalException ..." with exit 1 instead of a stop (exit 0).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from training_kit import EXAMPLES, ROOT

from revstudio.training import runs

pytest.importorskip("torch")

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))
ARGS = ["--batch-size", "8", "--device", "cpu", "--json", "--val-every", "0", "--nproc", "2"]

# torchrun as its signal handler leaves it on a Ctrl+C while the workers start: the agent logs its
# shutdown through torch's own loggers and handlers, then the SignalException reaches the launcher
STOPPED_WHILE_STARTING = r"""
import signal, sys
from torch.distributed import run as torchrun
from torch.distributed.elastic.agent.server import api as agent
from torch.distributed.elastic.multiprocessing import api as mp
from revstudio import cli

def main(argv):
    agent.logger.warning("Received %s death signal, shutting down workers", signal.SIGINT)
    mp.logger.warning("Sending process %s closing signal %s", 12345, "SIGINT")
    raise mp.SignalException("Process 1 got signal: 2", sigval=signal.SIGINT)
torchrun.main = main
sys.exit(cli.main(["train", *sys.argv[1:]]))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def test_a_stop_while_the_workers_start_is_a_stop_without_torchs_lines(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-P", "-c", STOPPED_WHILE_STARTING, EXAMPLE, *ARGS, "--steps", "5",
                           "--out", str(tmp_path / "run")], capture_output=True, text=True, env=_env(),
                          cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-3000:]
    row = json.loads(proc.stdout.splitlines()[-1])
    assert row["event"] == "stopped" and row["step"] == 0
    assert runs.read_run(str(tmp_path / "run")).status == "stopped"


def test_ctrl_c_during_the_run_prints_only_revstudios_stop(tmp_path) -> None:
    """A real Ctrl+C: SIGINT to the whole foreground process group (launcher and workers)."""
    argv = [sys.executable, "-m", "revstudio", "train", EXAMPLE, *ARGS, "--steps", "1000000", "--log-every", "1",
            "--out", str(tmp_path / "run")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                            cwd=str(tmp_path), start_new_session=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # until a step has run: the workers train
            if json.loads(line).get("kind") == "step":
                break
        os.killpg(proc.pid, signal.SIGINT)
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0 and err == "", err[-3000:]
    assert json.loads(rest.splitlines()[-1])["event"] == "stopped"
