"""Counting DDP's gradient all-reduces in the processes of a ``--nproc`` run or of torchrun, from outside
the code under test: a ``sitecustomize`` put on the workers' PYTHONPATH registers a communication hook on
every DistributedDataParallel they build, which all-reduces as DDP's default does and appends one line to
``counts/rankR`` for each whole pass over the gradients (its last bucket). Results are unchanged."""
from __future__ import annotations

import os
from pathlib import Path

SITE = '''
import os

_OUT = os.environ.get("REVSTUDIO_TEST_ALLREDUCES")
if _OUT and os.environ.get("RANK") is not None:  # (a worker: torchrun names its rank)
    import torch
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    _init = torch.nn.parallel.DistributedDataParallel.__init__

    def _counted(self, *args, **kwargs):
        _init(self, *args, **kwargs)
        path = os.path.join(_OUT, "rank" + os.environ["RANK"])

        def hook(state, bucket):
            if bucket.is_last():
                with open(path, "a") as handle:
                    handle.write("1\\n")
            return allreduce_hook(state, bucket)

        self.register_comm_hook(None, hook)

    torch.nn.parallel.DistributedDataParallel.__init__ = _counted
'''


def counting_env(folder: Path, env: dict[str, str]) -> Path:
    """``env`` made to count the workers' gradient all-reduces into ``folder/counts`` (returned)."""
    site, counts = folder / "site", folder / "counts"
    site.mkdir(exist_ok=True)
    counts.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITE, encoding="utf-8")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    env["REVSTUDIO_TEST_ALLREDUCES"] = str(counts)
    return counts


def gradient_allreduces(counts: Path) -> dict[str, int]:
    """Each rank's count of whole gradient all-reduces."""
    return {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in sorted(counts.iterdir())}
