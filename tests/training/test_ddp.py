"""``--nproc 2``: DDP through torch.distributed.run on 2 CPU processes (gloo), reversible mode (what each
rank holds of its own: test_ddp_ranks.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from training_kit import BATCHNORM_PROJECT, DDP_ARGS, EXAMPLES, ROOT, two_processes

from revstudio import cli
from revstudio.training import runs

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))


def test_two_processes_match_one_on_the_same_global_batch(tmp_path, capsys) -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    two = subprocess.run([sys.executable, "-P", "-m", "revstudio", "train", EXAMPLE, *DDP_ARGS, "--nproc", "2",
                          "--out", str(tmp_path / "two")], capture_output=True, text=True, env=env,
                         cwd=str(tmp_path), timeout=600)
    assert two.returncode == 0, two.stderr[-3000:]
    rows = [json.loads(line) for line in two.stdout.splitlines()]
    assert rows == runs.read_metrics(str(tmp_path / "two"))  # rank 0 alone prints and writes
    assert rows[0]["processes"] == 2
    finished = rows[-1]
    assert finished["event"] == "finished"
    assert finished["ranks_in_sync"] is True  # every rank holds rank 0's weights bit for bit

    assert cli.main(["train", EXAMPLE, *DDP_ARGS, "--out", str(tmp_path / "one")]) == 0
    one = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    losses = lambda rs: [r["loss"] for r in rs if r["kind"] == "step"]  # noqa: E731
    assert len(losses(rows)) == 4
    assert losses(rows) == pytest.approx(losses(one), rel=1e-5)
    a = torch.load(tmp_path / "two" / "checkpoints" / "last.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "one" / "checkpoints" / "last.pt", weights_only=True)["model"]
    for key in a:
        assert torch.allclose(a[key].double(), b[key].double(), rtol=1e-4, atol=1e-6), key
    assert sorted(os.listdir(tmp_path)) == ["one", "two"]  # no other rank wrote anything
    best = torch.load(tmp_path / "two" / "checkpoints" / "best.pt", weights_only=True)  # (rank 0's alone)
    assert best["step"] == 4 and "rng_ranks" not in best and best["best"]["val_loss"] == finished["metrics"]["val_loss"]
    assert sorted(os.listdir(tmp_path / "two" / "checkpoints")) == ["best.pt", "last.pt"]


FINISH_PROBE = r"""
import gc, os, socket, weakref
import torch, torch.distributed as tdist
from revstudio.training import session

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1")
tdist.init_process_group("gloo")
gc.disable()  # collections must not happen by chance: only the one that _finish_distributed asks for
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2))
net(torch.randn(4, 3)).sum().backward()
alive = weakref.ref(net)
del net
assert alive() is not None, "DDP is no longer a reference cycle: this probe checks nothing"
real = tdist.destroy_process_group
seen = []
tdist.destroy_process_group = lambda *a, **k: (seen.append(alive() is None), real(*a, **k))
session._finish_distributed()
print("collected before destroy:", seen)
assert seen == [True]
"""


def test_finishing_collects_the_ddp_wrapper_before_the_group_is_destroyed() -> None:
    """A DDP wrapper freed after ``destroy_process_group`` frees the gloo group with the GIL
    held, whose destructor can wait forever on a worker thread that needs the GIL."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-P", "-c", FINISH_PROBE], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "collected before destroy: [True]" in proc.stdout





def test_data_every_rank_would_refuse_is_refused_once_with_exit_2(tmp_path) -> None:
    """The message died with the workers (torchrun stopped rank 0 when rank 1 failed first; only
    rank 0 prints), leaving "the distributed run ended: ChildFailedError:" and exit 1."""
    import numpy as np

    path = tmp_path / "bn.revs"
    path.write_text(json.dumps(BATCHNORM_PROJECT))
    np.savez(tmp_path / "bad.npz", x=np.zeros((8, 2, 4, 5), "float32"), y=np.zeros(8, "int64"))
    two = two_processes([str(path), "--data", str(tmp_path / "bad.npz"), "--out", str(tmp_path / "run"),
                          "--device", "cpu"], tmp_path)
    assert two.returncode == 2
    assert "bad.npz: array 'x' has samples of shape 2x4x5" in two.stderr and "ChildFailedError" not in two.stderr
    odd = two_processes([str(path), "--batch-size", "7", "--json", "--device", "cpu"], tmp_path)
    assert odd.returncode == 2
    assert json.loads(odd.stdout)["message"].startswith("batch size 7 does not split evenly over 2 processes")
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()


def test_an_out_that_rank_0_cannot_write_is_exit_2_with_its_reason(tmp_path) -> None:
    """Exit 1 and "the distributed run ended: ChildFailedError:" after rank 0's message: the
    launcher looked at every failed rank, and the ones it stopped itself had not exited with 2."""
    path = tmp_path / "bn.revs"
    path.write_text(json.dumps(BATCHNORM_PROJECT))
    (tmp_path / "afile").write_text("in the way")
    two = two_processes([str(path), "--steps", "1", "--device", "cpu", "--out", str(tmp_path / "afile" / "run")],
                         tmp_path)
    assert two.returncode == 2, two.stderr[-3000:]
    assert "cannot write" in two.stderr and "ChildFailedError" not in two.stderr


EARLY_STOP = r"""
import os, signal, sys
from revstudio import cli
from revstudio.training import session
from torch.distributed import run as torchrun

when = sys.argv[1]
real = session.preflight
def preflight(*args, **kwargs):  # a SIGTERM while the launcher checks the run
    out = real(*args, **kwargs)
    if when == "checking":
        os.kill(os.getpid(), signal.SIGTERM)
    return out
def torchrun_starting(argv):  # a SIGTERM before torchrun has put in its own handlers
    os.kill(os.getpid(), signal.SIGTERM)
    raise AssertionError("went on after the signal")
session.preflight = preflight
torchrun.main = torchrun_starting if when == "launching" else None
sys.exit(cli.main(["train", *sys.argv[2:]]))
"""


@pytest.mark.parametrize("when", ["checking", "launching"])
def test_a_sigterm_before_the_workers_start_stops_the_run_cleanly(tmp_path, when) -> None:
    """The launcher died of the signal (exit 143) and left no status: torchrun's handlers,
    which forward a stop to the workers, are put in only when it starts them."""
    path = tmp_path / "bn.revs"
    path.write_text(json.dumps(BATCHNORM_PROJECT))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-P", "-c", EARLY_STOP, when, str(path), *DDP_ARGS, "--nproc", "2",
                           "--out", str(tmp_path / "run")], capture_output=True, text=True, env=env,
                          cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = json.loads(proc.stdout.splitlines()[-1])
    assert row["event"] == "stopped" and row["step"] == 0 and row["checkpoint"] is None
    info = runs.read_run(str(tmp_path / "run"))
    assert info.status == "stopped" and runs.read_metrics(str(tmp_path / "run")) == [row]
