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

from revstudio import cli
from revstudio.training import runs
from revstudio.training.stopping import FIRST_SIGINT

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
    """A real Ctrl+C: SIGINT to the whole foreground process group (launcher and workers). It says
    what a single process says at once (the run stops after this step), and nothing of torch's."""
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
    assert proc.returncode == 0 and err == f"revstudio: {FIRST_SIGINT}\n", err[-3000:]
    assert json.loads(rest.splitlines()[-1])["event"] == "stopped"


# Workers whose step never ends by itself once the checkpoint of step 2 is on disk (a big model's
# step, taken to its limit); the launcher (no LOCAL_RANK) is left as it is
HANGING_WORKERS = r"""
import os, time
if "LOCAL_RANK" in os.environ:
    import torch.nn.modules.module as m

    marker = os.path.join(os.environ["RS_TEST_OUT"], "checkpoints", "last.pt")

    def hook(module, args, output):
        while os.path.exists(marker):
            time.sleep(0.01)

    m.register_module_forward_hook(hook)
"""


def _processes_naming(text: str) -> list[int]:
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text in open(f"/proc/{name}/cmdline", "rb").read().decode(errors="replace"):
                found.append(int(name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the workers left behind in /proc")
def test_a_second_ctrl_c_stops_the_workers_now_as_one_process_stops(tmp_path) -> None:
    """The second Ctrl+C under --nproc did nothing of revstudio's: torchrun's launcher took the
    signals, waited up to 30 s for the step in progress and gave no line; a single process stops
    now, recorded as stopped at its last checkpoint, and exits 130."""
    out = tmp_path / "run"
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HANGING_WORKERS)
    env = dict(_env(), RS_TEST_OUT=str(out))
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(hook)])
    argv = [sys.executable, "-m", "revstudio", "train", EXAMPLE, *ARGS, "--steps", "1000", "--log-every", "1",
            "--checkpoint-every", "2", "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=str(tmp_path), start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:  # until the checkpoint of step 2: the next step runs forever
            if json.loads(line).get("event") == "checkpoint":
                break
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.stderr.readline() == f"revstudio: {FIRST_SIGINT}\n"
        os.killpg(proc.pid, signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == cli.INTERRUPTED and err == "", err[-3000:]
    last = json.loads(rest.splitlines()[-1])
    assert last == {**last, "event": "stopped", "step": 2, "checkpoint": "checkpoints/last.pt", "forced": True}
    info = runs.read_run(str(out))
    assert info.status == "stopped" and info.step == 2 and "second signal" in (info.message or ""), info
    assert runs.read_metrics(str(out))[-1] == last
    assert _processes_naming(str(out)) == []  # (no worker left training)
