"""Under torch.distributed, the exported Model's data-dependent init ends with rank 0's result.

ActNorm initialises from the first batch, which is each rank's own share under DDP; DDP
broadcasts the weights only when it wraps the model, before that batch. The compiled
module then copies rank 0's initialised layers to every rank; the exported file must do
the same, or every rank trains its own ActNorm scales and biases and the checkpoint holds
only rank 0's.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codegen_harness import BLOCKER  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.core import generate  # noqa: E402

WORKERS = BLOCKER + r'''
import importlib.util
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def work(rank, path, init, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    try:
        spec = importlib.util.spec_from_file_location("exported", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        torch.manual_seed(0)  # the same initial weights on both ranks
        model = module.Model()
        shape = next(iter(module.INPUTS.values()))[0]
        model(torch.randn(4, *shape, generator=torch.Generator().manual_seed(rank)))  # each rank its own batch
        state = torch.cat([t.detach().double().flatten() for t in model.state_dict().values()])
        both = [torch.empty_like(state) for _ in range(2)]
        dist.all_gather(both, state)
        if rank == 0:
            torch.save(both, out)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    # Nothing is left to do. The interpreter's teardown after gloo can abort the process
    # ("terminate called without an active exception", about 1 run in 100 on a loaded
    # machine, with no Python frame left): skip it, as ``python -m revstudio train`` does.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    path, folder = sys.argv[1], sys.argv[2]
    mp.spawn(work, args=(path, "file://" + os.path.join(folder, "rendezvous"), os.path.join(folder, "states.pt")),
             nprocs=2, join=True)
'''


@pytest.mark.slow  # two gloo processes, as the other DDP tests
def test_actnorm_init_is_rank_0s_on_every_rank(tmp_path: Path) -> None:
    path = tmp_path / "glow.py"
    path.write_text(export(generate.glow_repeat(1)), encoding="utf-8")
    driver = tmp_path / "driver.py"
    driver.write_text(WORKERS, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run([sys.executable, "-I", str(driver), str(path), str(tmp_path)], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rank0, rank1 = torch.load(tmp_path / "states.pt", weights_only=True)
    assert torch.equal(rank0, rank1), "the ranks initialised ActNorm each from their own batch"
