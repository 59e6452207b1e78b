"""The pieces :func:`revstudio.training.loop.train` is made of that are not its steps: the callbacks'
interface, a process's place in a distributed run, the result, the run's reporting state, moving a
batch to the device, the all-reduce of a step's numbers and the plan of a run's steps.
(``loop`` re-exports them: they are its public names.)
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .config import TrainConfig
from .parts import TrainError

WINDOW_KEYS = ("loss", "correct", "count", "steps")


class Callback:
    """Receives the run's rows as they happen; override what you need."""

    def on_row(self, row: dict[str, Any]) -> None:
        """Every row (step, val, gradcheck, event), after the specific hook below."""

    def on_train_start(self, row: dict[str, Any]) -> None: ...
    def on_step_end(self, row: dict[str, Any]) -> None: ...
    def on_validation_end(self, row: dict[str, Any]) -> None: ...
    def on_gradcheck(self, row: dict[str, Any]) -> None: ...
    def on_event(self, row: dict[str, Any]) -> None: ...


@dataclass
class Distributed:
    """This process's place in a torch.distributed run (rank 0 of 1 when alone)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def active(self) -> bool:
        return self.world > 1


@dataclass
class TrainResult:
    status: str                       # finished | stopped | nan | oom | failed
    step: int
    metrics: dict[str, Any] = field(default_factory=dict)
    message: str | None = None
    model: Any = field(default=None, repr=False)   # (its repr is the whole network)
    rows: int = 0

    @property
    def exit_code(self) -> int:
        return 0 if self.status in ("finished", "stopped") else 1


def _versions() -> dict[str, str]:
    import platform

    from revstudio import __version__

    return {"revstudio": __version__, "torch": torch.__version__.split("+")[0], "python": platform.python_version()}


class _Run:
    """The state of one run; :func:`train` is its only user."""

    def __init__(self, graph: Any, report: Any, cfg: TrainConfig, data: Any, callbacks: Sequence[Callback],
                 should_stop: Callable[[], bool], dist: Distributed, run_dir: str | None,
                 project_text: str, clock_start: float) -> None:
        self.graph, self.report, self.cfg, self.data = graph, report, cfg, data
        self.callbacks, self.should_stop, self.dist = list(callbacks), should_stop, dist
        self.run_dir, self.project_text = run_dir, project_text
        self.t0 = clock_start
        self.rows = 0
        self.step = 0
        self.metrics: dict[str, Any] = {}
        self.val_pending = False  # a validation a stop cut short (the checkpoint says so)

    # ---- reporting -----------------------------------------------------------
    def emit(self, row: dict[str, Any]) -> None:
        if self.dist.rank != 0:
            return
        row = {"kind": row.pop("kind"), **({"event": row.pop("event")} if "event" in row else {}), **row}
        row.setdefault("time", round(time.perf_counter() - self.t0, 4))
        self.rows += 1
        hook = {"step": "on_step_end", "val": "on_validation_end", "gradcheck": "on_gradcheck"}.get(
            row["kind"], "on_event")
        for cb in self.callbacks:
            if row.get("event") == "started":
                cb.on_train_start(row)
            else:
                getattr(cb, hook)(row)
            cb.on_row(row)

    def now(self) -> float:
        return round(time.perf_counter() - self.t0, 4)


def _to_device(batch: tuple[dict[str, torch.Tensor], torch.Tensor | None], order: Sequence[str],
               device: torch.device) -> tuple[list[torch.Tensor], torch.Tensor | None]:
    inputs, targets = batch
    xs = [inputs[nid].to(device, non_blocking=True) for nid in order]
    return xs, (targets.to(device, non_blocking=True) if targets is not None else None)


def _allreduce(values: list[float], dist: Distributed, device: torch.device) -> list[float]:
    if not dist.active:
        return values
    import torch.distributed as tdist

    t = torch.tensor(values, dtype=torch.float64, device=device)
    tdist.all_reduce(t)
    return [float(v) for v in t.tolist()]


def plan_steps(cfg: TrainConfig, samples: int, world: int = 1) -> tuple[int, int, int]:
    """(global micro-batch, steps per epoch, total steps) of a run on ``samples`` training samples over
    ``world`` processes, each optimizer step taking ``cfg.accumulate`` micro-batches; a TrainError (exit 2)
    where the batch cannot be split over them or the samples cannot fill a step."""
    if cfg.batch_size % world:
        raise TrainError(f"batch size {cfg.batch_size} does not split evenly over {world} processes; "
                         f"use a multiple of {world}", 2)
    k = cfg.accumulate
    if k > 1 and samples < cfg.batch_size * k:
        raise TrainError(f"accumulate {k} micro-batches of batch size {cfg.batch_size} needs {cfg.batch_size * k} "
                         f"training samples a step, and there are {samples}; lower --accumulate (training."
                         "accumulate) or --batch-size", 2)
    batch = min(cfg.batch_size, samples)
    if batch // world < 1:
        raise TrainError(f"{samples} training samples cannot feed {world} processes", 2)
    spe = max(1, samples // (batch * k))
    return batch, spe, cfg.steps if cfg.steps is not None else int(cfg.epochs or 1) * spe
