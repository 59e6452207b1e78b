"""Big run folders for the run tools' benchmarks, made by script (never by hand).

``long_run(path, steps)`` writes one run folder as ``revstudio train`` leaves it after ``steps``
logged steps: the snapshot, config, environment, status and a ``metrics.jsonl`` of its rows (a
``started`` event, a step row every step with loss, accuracy, learning rate and throughput, a
memory figure every 1,000, a ``val`` row every 1,000, a ``gradcheck`` row every 2,000, checkpoint
events, ``finished``), with a real checkpoint of the revnet_coupling example (trained a few steps
here, once) so that ``evaluate`` and ``export RUN`` can load it. ``runs_folder(path, n)`` writes
``n`` run folders of a project as a user who keeps hundreds of runs has them: finished, failed,
running-but-dead (a process that is gone) and half-written (status.json cut short by a kill).
"""
from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "resources" / "examples" / "revnet_coupling.revs"
PROJECT = "revnet_coupling"


def seed_run(cache: str) -> str:
    """A real, finished run folder of the example (a short ``revstudio train``), made once in ``cache``."""
    seed = os.path.join(cache, "seed-run")
    if os.path.isfile(os.path.join(seed, "checkpoints", "last.pt")):
        return seed
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "revstudio", "train", str(EXAMPLE), "--steps", "20", "--out", seed,
                    "--threads", "1"], check=True, env=env, stdout=subprocess.DEVNULL)
    return seed


def _rows(steps: int, rng: random.Random, cut: bool = False):  # type: ignore[no-untyped-def]
    started = {"kind": "event", "event": "started", "time": 0.0, "total_steps": steps, "task": "classification",
               "mode": "reversible", "parameters": 1498, "estimate_bytes": 1316184,
               "standard_estimate_bytes": 1706168, "resumed_from": None, "init_from": None,
               "config": {"log_every": 1, "val_every": 1000, "gradcheck_every": 2000, "memory_every": 1000,
                          "checkpoint_every": 1000, "steps": steps}}
    yield started
    loss = 2.3
    for s in range(1, steps + 1):
        t = round(s * 0.025, 4)
        loss = 0.05 + 2.25 * math.exp(-s / 4000) + rng.random() * 0.05
        row = {"kind": "step", "step": s, "epoch": round(s / 921, 4), "loss": loss, "lr": 0.001,
               "samples_per_s": round(150 + rng.random() * 20, 2), "accuracy": min(0.99, 1 - loss / 2.5),
               "time": t}
        if s % 1000 == 0:
            row.update(peak_bytes=1_300_000 + rng.randrange(1000), estimate_bytes=1316184)
        yield row
        if s % 1000 == 0:
            yield {"kind": "val", "step": s, "epoch": row["epoch"], "val_loss": loss * 1.1,
                   "val_accuracy": min(0.98, 1 - loss / 2.4), "time": t}
            yield {"kind": "event", "event": "checkpoint", "step": s, "path": "checkpoints/last.pt", "best": False,
                   "time": t}
        if s % 2000 == 0:
            yield {"kind": "gradcheck", "step": s, "epoch": row["epoch"],
                   "regions": [{"region": "region-blocks", "grad_rel_error": 1e-7 * rng.random(),
                                "inversion_error": 1e-7 * rng.random()}],
                   "max_grad_rel_error": 1e-7, "max_inversion_error": 1e-7}
    if not cut:
        yield {"kind": "event", "event": "finished", "step": steps, "metrics": {"loss": loss}, "wall_s": steps * 0.025,
               "time": steps * 0.025}


def _write(path: str, rows, tail: str = "") -> None:  # type: ignore[no-untyped-def]
    with open(os.path.join(path, "metrics.jsonl"), "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in rows)
        handle.write(tail)


def long_run(path: str, steps: int, cache: str, kind: str = "finished", seed: int = 0,
             started: str = "2026-12-01T10:00:00+00:00") -> str:
    """One run folder of ``steps`` step rows (see the module's words); ``kind``: finished, failed, dead
    (running, its process gone) or half (status.json and the last row cut short by a kill)."""
    rng = random.Random(seed)
    source = seed_run(cache)
    os.makedirs(os.path.join(path, "checkpoints"), exist_ok=True)
    for name in ("project.revs", "config.json", "environment.json", "model.py"):
        shutil.copyfile(os.path.join(source, name), os.path.join(path, name))
    if kind != "half":
        shutil.copyfile(os.path.join(source, "checkpoints", "last.pt"), os.path.join(path, "checkpoints", "last.pt"))
    _write(path, _rows(steps, rng, cut=kind in ("dead", "half")), '{"kind": "step", "step": ' if kind == "half" else "")
    status = {"status": {"finished": "finished", "failed": "failed"}.get(kind, "running"),
              "pid": 4_000_000 + seed, "host": _host(), "process": f"gone:{seed}", "step": steps,
              "total_steps": steps if kind == "finished" else steps * 2, "started": started,
              "ended": None if kind in ("dead", "half") else started, "metrics": {"loss": 0.1 + rng.random()},
              "message": f"failed: out of memory at step {steps}" if kind == "failed" else None}
    text = json.dumps(status, indent=2)
    with open(os.path.join(path, "status.json"), "w", encoding="utf-8") as handle:
        handle.write(text[: len(text) // 2] if kind == "half" else text)
    return path


def _host() -> str:
    from revstudio.core.processes import host

    return host()


KINDS = ("finished",) * 6 + ("failed", "failed", "dead", "half")


def runs_folder(path: str, count: int, cache: str, steps: int = 2000, long_every: int = 30,
                long_steps: int = 20_000) -> str:
    """``count`` runs of the example in ``path`` (a project's ``runs/``), named as revstudio names them; one
    in ``long_every`` has ``long_steps`` rows, the rest ``steps``."""
    os.makedirs(path, exist_ok=True)
    for i in range(count):
        day, minute = 1 + i // 600, i % 600
        name = f"{PROJECT}-202612{day:02d}-{minute // 60:02d}{minute % 60:02d}00"
        started = f"2026-12-{day:02d}T{minute // 60:02d}:{minute % 60:02d}:00+00:00"
        long_run(os.path.join(path, name), long_steps if i % long_every == 0 else steps, cache,
                 KINDS[i % len(KINDS)], seed=i, started=started)
    return path
