"""The training loop: one plain function, :func:`train`, with Lightning-like callbacks.

The CLI, the app's worker (through the CLI's ``--json`` rows) and the tests
run the same function. It compiles the graph in the configured mode, runs
``steps`` optimizer steps over a data order fixed by the seed, and reports
everything as rows (CONTRACTS section 3) to its callbacks: step rows every
``log_every`` steps, validation, the in-run gradient check and memory
measurement at their intervals, checkpoints, and one final event (finished,
stopped, nan, oom or failed). It never raises for a run-time fault: the fault
becomes the final row and :class:`TrainResult` says how it ended.

Data order: epoch ``e`` visits the training set in ``randperm`` order drawn
from ``seed`` and ``e`` alone, and step ``s`` takes batch ``s mod
steps_per_epoch`` of it, so the position in the data follows from the step
number and a resumed run (weights, optimizer, schedule and RNG states from
the checkpoint) computes the same steps the uninterrupted run would have.
Under DDP the configured ``batch_size`` is the global batch, split evenly
over the ranks, so a 2-process run optimises what a 1-process run does.
"""
from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from revstudio.core.digest import network_digest
from revstudio.diagnostics.batch_checks import batch_errors
from revstudio.diagnostics.coupling_init import identity_start_advice
from revstudio.diagnostics.singular import is_singular_error, singular_layers

from . import checkpoint as ckpt
from .config import TrainConfig
from .divergence import DivergenceWatch, warning_fields, watch_step
from .estimates import budget_kept, estimate_note, estimates
from .first_batch import epoch_order
from .inrun import PeakMeter, first_nonfinite, region_gradcheck, tracking
from .learning import LearningWatch, label_counts, note_fields, watch_learning
from .learning import check_step as learning_step
from .loop_parts import (  # (re-exported: loop's public names)
    WINDOW_KEYS,
    Callback,
    Distributed,
    TrainResult,
    _allreduce,
    _Run,
    _to_device,
    _versions,
    plan_steps,
)
from .nonfinite import bad_grads, grads_finite, kept_checkpoint, singular
from .parts import (
    Loss,
    TrainError,
    dequantize,
    make_optimizer,
    make_scheduler,
    noise_seed,
    precision_context,
    resolve_device,
)
from .patience import Patience, early_fields
from .ranks import ranks_in_sync, scored_share
from .runs import BEST, CHECKPOINT

__all__ = ["WINDOW_KEYS", "Callback", "Distributed", "TrainResult", "plan_steps", "train"]


def train(graph: Any, report: Any, cfg: TrainConfig, data: Any, *, callbacks: Sequence[Callback] = (),
          should_stop: Callable[[], bool] | None = None, resume: dict[str, Any] | None = None,
          run_dir: str | None = None, project_text: str = "", dist: Distributed | None = None,
          resumed_from: str | None = None, data_base: str | None = None,
          init: dict[str, Any] | None = None, init_from: str | None = None) -> TrainResult:
    """Train ``graph`` on ``data`` (a DataBundle) with ``cfg``; see the module docstring.

    ``resume`` is a loaded checkpoint to continue from; ``init`` weights to start from (read from
    ``init_from``) instead of fresh ones. ``run_dir`` (rank 0):
    where ``checkpoints/last.pt`` goes (None: no checkpoints). Raises
    :class:`TrainError` only for what is wrong before step 1 (a device or
    precision that cannot work, a batch that does not split over the ranks).
    """
    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.gradcheck import input_nodes, output_nodes

    t0 = time.perf_counter()
    dist = dist or Distributed()
    run = _Run(graph, report, cfg, data, callbacks, should_stop or (lambda: False), dist, run_dir,
               project_text, t0)
    device = resolve_device(cfg.device, dist.local_rank if dist.active else None)
    autocast, scaler = precision_context(cfg, device)
    n = len(data.train)
    batch, spe, total = plan_steps(cfg, n, dist.world)
    local = batch // dist.world  # (this process's share of one micro-batch: what its memory holds)
    micro = cfg.accumulate  # micro-batches per optimizer step, their gradients summed
    lone = batch_errors(graph, report, local)  # (the check saw the configured batch, not this one)
    if lone:
        why = f"{n} training sample{'s' * (n != 1)}" if batch < cfg.batch_size else f"{dist.world} processes"
        raise TrainError(f"each step trains on {local} sample (from {why}): {lone[0].node}: {lone[0].message}", 1)

    torch.manual_seed(cfg.seed)  # the same initial weights on every rank
    from revstudio.diagnostics.estimate import input_dtype

    dtype = torch.float64 if input_dtype(graph) == "float64" else torch.float32
    model = compile_graph(graph, mode=cfg.mode, device=device, dtype=dtype, report=report,
                          memory_budget=cfg.memory_budget)
    if init is not None:
        ckpt.start_from(init, model, str(init_from))
    model.train()
    # the inversion error is read on gradient-check steps only: the others skip measuring it
    # (the memory-measured steps measure it too, so their peak is the run's worst step's)
    model.track_inversion = False
    if not any(True for _ in model.parameters()):  # (torch's optimizer: "empty parameter list")
        raise TrainError("the network has no weights to train (each of its layers has 0 parameters); add a "
                         "layer with weights (a Conv or a Linear), or run it without training: revstudio "
                         "gradcheck checks its gradients, revstudio memory measures a training step", 1)
    optimizer = make_optimizer(cfg, model.parameters())
    scheduler = make_scheduler(cfg, optimizer, total)
    ckpt.seed_rank(cfg.seed, dist.rank)  # shared weights, then each rank's own dropout masks
    if resume is not None:
        ckpt.restore(resume, cfg, model, optimizer, scheduler, scaler,
                     f"--resume {resumed_from}" if resumed_from else "the checkpoint to resume")
        run.step = int(resume["step"])
        run.metrics.update(resume.get("metrics") or {})
    net: Any = model
    if dist.active:
        # Plain DDP, no static_graph and no find_unused_parameters: the reversible runtime's
        # autograd Function returns every parameter's gradient from its one backward (it does
        # not accumulate into .grad itself), so each parameter's DDP hook fires exactly once
        # per step, as in a standard network ("marked ready twice" cannot happen), and
        # checkpoint mode uses non-reentrant torch.utils.checkpoint, which DDP supports.
        # static_graph would also be correct but is not needed, and would wrongly freeze the
        # set of used parameters for graphs whose data decide it.
        net = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    if resume is not None:
        ckpt.resume_rng(resume, dist.rank, cfg.seed)  # after DDP's construction, which may draw but is not ours

    order = [nid for nid, _ in input_nodes(graph)]
    outputs = output_nodes(graph)
    out_index = outputs.index(data.task.output_id) if data.task.output_id in outputs else 0
    levels = data.levels  # a flow's 8-bit images: dequantised (sources.flow_levels)
    loss_fn = Loss(data.task.kind, levels)
    classification = data.task.kind == "classification"
    scored = getattr(data.task, "scored_key", None)  # (per step or pixel: loss and accuracy over those scored)
    estimate, standard_estimate = estimates(graph, report, local, cfg.mode, budget=cfg.memory_budget,
                                              device=device.type, precision=cfg.precision)
    kept_by_budget = budget_kept(graph, report, local, cfg.mode, cfg.memory_budget)
    regions = list(getattr(report, "regions", []) or [])
    meter = PeakMeter(device)

    def forward(module: Any, xs: list[torch.Tensor], ys: torch.Tensor | None, cast: bool = True) -> tuple[Any, Any]:
        with autocast() if cast else contextlib.nullcontext():
            out = module(*xs)
            head = out[out_index] if isinstance(out, tuple) else out
            return loss_fn(head, ys, getattr(model, "logdet", None))

    def batch_at(step_index: int, part: int = 0) -> tuple[list[torch.Tensor], torch.Tensor | None]:
        """Micro-batch ``part`` of step ``step_index``: the step's ``micro`` batches are consecutive."""
        epoch, pos = divmod(step_index, spe)
        pos, draw = pos * micro + part, step_index * micro + part
        if epoch != getattr(batch_at, "epoch", None):
            batch_at.perm = epoch_order(n, cfg.seed, epoch)  # type: ignore[attr-defined]
            batch_at.epoch = epoch  # type: ignore[attr-defined]
        idx = batch_at.perm[pos * batch:(pos + 1) * batch]  # type: ignore[attr-defined]
        idx = idx[dist.rank * local:(dist.rank + 1) * local]
        return _to_device(noisy(data.train.batch(idx), noise_seed(cfg.seed, draw, dist.rank)), order, device)

    def noisy(batch: tuple[dict[str, torch.Tensor], Any], seed: int) -> tuple[dict[str, torch.Tensor], Any]:
        if levels is None:
            return batch
        return {k: dequantize(v, levels, seed + i) for i, (k, v) in enumerate(batch[0].items())}, batch[1]

    data_record = ckpt.data_record(data)  # (a resumed run compares it with its checkpoint's)
    best = ckpt.Best(resume)  # the best validation so far, across --resume
    patience = Patience(cfg.patience, cfg.min_delta, resume)  # early stopping's count, across --resume

    def save_checkpoint(name: str = CHECKPOINT) -> str | None:
        states = ckpt.gather_rng(dist.rank, dist.world) if name == CHECKPOINT else [ckpt.rng_state()]
        if dist.rank != 0 or run_dir is None:
            return None
        if not all(bool(torch.isfinite(p).all()) for p in model.parameters()) or singular_layers(model):
            return None  # never replace the last good checkpoint with broken weights
        import os

        path = os.path.join(run_dir, name)
        ckpt.save(path, {
            "step": run.step, "epoch": run.step // spe, "model": model.state_dict(),
            "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
            "scaler": scaler.state_dict() if scaler is not None else None, "rng": states[0],
            **({"rng_ranks": states} if dist.active and name == CHECKPOINT else {}), "best": best.state(),
            "data": {"epoch": run.step // spe, "position": run.step % spe, "steps_per_epoch": spe,
                     "order_seed": cfg.seed, "base_dir": data_base, **data_record},
            "config": cfg.full_section(), "graph": project_text, "versions": _versions(), "device": str(device),
            # the step rows' running means since the last row, and the final metrics so far: a run
            # resumed from here writes the rows (and ends with the metrics) the uninterrupted one does
            "window": {k: float(window[k]) for k in WINDOW_KEYS}, "metrics": dict(run.metrics),
            "val_pending": run.val_pending, "divergence": watch.state(),
            "learning": learning.state(), "patience": patience.state()})
        run.emit({"kind": "event", "event": "checkpoint", "step": run.step, "path": name,
                  **best.fields(name == BEST)})
        return name

    def validate() -> dict[str, Any] | None:
        split = data.val
        if split is None or len(split) == 0:
            return None
        model.eval()
        loss_sum, correct, count = 0.0, 0.0, 0
        try:
            with torch.no_grad():
                for start in range(0, len(split), cfg.batch_size):
                    idx = torch.arange(start, min(start + cfg.batch_size, len(split)))
                    xs, ys = _to_device(noisy(split.batch(idx), noise_seed(cfg.seed, -1 - start, 0)), order,
                                        device)
                    loss, hits = forward(model, xs, ys)
                    counted = loss_fn.counted(ys, len(idx))  # (per-step labels: the scored steps)
                    loss_sum += float(loss) * counted
                    correct += float(hits) if hits is not None else 0.0
                    count += counted
                    if run.should_stop():  # (stopping within 2 s beats finishing a long validation)
                        run.val_pending = True  # the resumed run validates this step first
                        return None
        finally:
            model.train()
        row = {"kind": "val", "step": run.step, "epoch": round(run.step / spe, 4), "val_loss": loss_sum / count}
        if classification:
            row["val_accuracy"] = correct / count
        if scored:
            row["val_" + scored] = count
        run.metrics.update({k: v for k, v in row.items() if k.startswith("val_")})
        run.val_pending = False
        run.emit(row)
        if best.record(row["val_loss"], run.step):  # the lowest val_loss so far: its weights replace best.pt
            save_checkpoint(BEST)
        patience.see(row["val_loss"])
        return row

    def stops_early() -> bool:
        """Whether early stopping ends the run here: every rank's say together under DDP (each validated
        the same weights, but a rank whose validation a signal cut short saw none)."""
        if cfg.patience is None:
            return False
        return _allreduce([1.0 if patience.stop else 0.0], dist, device)[0] > 0

    params = sum(p.numel() for p in model.parameters())
    run.emit({"kind": "event", "event": "started", "time": 0.0, "run_dir": run_dir, "config": cfg.full_section(),
              "device": str(device), "versions": _versions(), "parameters": int(params), "total_steps": total,
              "steps_per_epoch": spe, "mode": cfg.mode, "task": data.task.kind, "estimate_bytes": estimate,
              "standard_estimate_bytes": standard_estimate, "estimate_note": estimate_note(cfg.precision),
              "regions": [r.id for r in regions],
              "budget": kept_by_budget, "resumed_from": resumed_from, "init_from": init_from,
              "resumed_at": int(resume["step"]) if resume is not None else None, "changed": ckpt.changed_settings(resume, cfg),
              "schedule_note": ckpt.schedule_note((resume or {}).get("config"), int((resume or {}).get("step", 0)),
                                                  cfg.schedule, cfg.warmup_steps, cfg.lr, total, spe),
              **ckpt.start_facts(resume, data_record, cfg, str(device)),
              "processes": dist.world, "batch_size": batch,
              "data": data.describe() if hasattr(data, "describe") else str(getattr(data, "source", "")),
              "inputs": data.inputs_note() if hasattr(data, "inputs_note") else None,
              "network_digest": network_digest(graph), "data_digest": f"blake2b:{data_record['digest']}"})

    window = {"loss": 0.0, "correct": 0.0, "count": 0, "steps": 0, "t": time.perf_counter()}
    if resume is not None and isinstance(resume.get("window"), dict):
        window.update({k: type(window[k])(resume["window"][k]) for k in WINDOW_KEYS if k in resume["window"]})
    last_loss = math.nan
    watch = DivergenceWatch(resume.get("divergence") if resume is not None else None)
    learning = LearningWatch(resume.get("learning") if resume is not None else None)
    rebuilds = cfg.mode == "reversible" and bool(regions)

    def finish(status: str, message: str | None = None, **extra: Any) -> TrainResult:
        return TrainResult(status=status, step=run.step, metrics=dict(run.metrics), message=message,
                           model=model, rows=run.rows)

    early = False
    if resume is not None and resume.get("val_pending") and run.step < total:
        validate()  # the one the stop cut short (the last step's is the end's own)
        early = stops_early()
    while run.step < total and not early:
        step = run.step + 1
        # under DDP a stop is decided together, from the flags all-reduced with each step's
        # numbers: a rank that left alone would leave its peers waiting in the next all-reduce
        stop_now = run.should_stop() and not dist.active
        if not stop_now:
            try:
                xs, ys = batch_at(run.step)
                if cfg.gradcheck_every and step % cfg.gradcheck_every == 0 and regions and dist.rank == 0:
                    # in the model's own dtype, also in a bf16/fp16 run: the check asks whether the
                    # regions' rebuilt gradients are standard mode's for these weights, which
                    # autocast's rounding (standard mode keeps bf16 sums, the runtime float32
                    # streams) would hide under differences of 1e-2
                    def check_step(xs: list[torch.Tensor] = xs, ys: Any = ys) -> torch.Tensor:
                        return forward(model, xs, ys, cast=False)[0]  # type: ignore[no-any-return]

                    result = region_gradcheck(model, regions, check_step, device, cfg.seed + step, xs)
                    run.emit({"kind": "gradcheck", "step": step, "epoch": round(step / spe, 4), **result})
                measure = bool(cfg.memory_every and step % cfg.memory_every == 0)
                optimizer.zero_grad(set_to_none=True)
                sums: list[float] = [0.0, 0.0, 0.0]  # the step's loss x counted, hits, counted
                classes: list[float] = []
                finite = 1.0
                with tracking(model) if measure else contextlib.nullcontext(), \
                        meter.measure() if measure else contextlib.nullcontext():
                    for part in range(micro):  # (the peak measured is one micro-batch's: .grad sums in place)
                        if part:
                            xs, ys = batch_at(run.step, part)
                        counted = loss_fn.counted(ys, len(xs[0]))  # (per-step labels: the steps scored)
                        share = scored_share(counted, dist.world, device) if scored and dist.active else None
                        # under DDP only a step's last micro-batch all-reduces the summed gradients
                        with net.no_sync() if dist.active and part < micro - 1 else contextlib.nullcontext():
                            loss, hits = forward(net, xs, ys)
                            weighed = loss if share is None else loss * share  # (DDP: the global batch's mean)
                            if micro > 1:
                                weighed = weighed / micro  # the step's gradient: the micro-batches' mean
                            (scaler.scale(weighed) if scaler is not None else weighed).backward()
                        local_loss = float(loss.detach())
                        finite = finite if math.isfinite(local_loss) else 0.0
                        sums[0] += local_loss * counted if math.isfinite(local_loss) else 0.0
                        sums[1] += float(hits) if hits is not None else 0.0
                        sums[2] += float(counted)
                        counts = label_counts(ys, data.task)
                        classes = [a + b for a, b in zip(classes, counts, strict=True)] if classes else counts
                # a layer's inverse can rebuild NaN from a finite output: reversible mode's own fault,
                # caught before the step writes it into the weights (a GradScaler's scaled gradients
                # may overflow: it skips that step itself)
                grads_bad = 1.0 if finite and rebuilds and scaler is None and not grads_finite(model) else 0.0
                stats = _allreduce([sums[0] if finite else 0.0, sums[1], sums[2],
                                    1.0 - finite, 1.0 if run.should_stop() else 0.0, grads_bad,
                                    *classes], dist, device)
            except torch.OutOfMemoryError as exc:
                return _oom(run, model, step, exc, finish, local)
            except (MemoryError, RuntimeError) as exc:
                if isinstance(exc, MemoryError) or "can't allocate memory" in str(exc) or \
                        "out of memory" in str(exc):
                    return _oom(run, model, step, exc, finish, local)
                if is_singular_error(exc):  # weights gone singular: a numerical fault, as a NaN is
                    return singular(run, model, step, finish)
                raise
            if stats[5] > 0 and stats[3] == 0:
                return bad_grads(run, model, xs, step, finish)
            if stats[3] > 0:
                found = first_nonfinite(model, functools.partial(model, *xs)) if dist.rank == 0 else None
                node, inner = found if found is not None else (None, None)
                where = "" if not found else f", first at node {node!r}" + (
                    f" (inside it, {inner!r})" if inner != node else "")
                kept = kept_checkpoint(run)
                wider = "" if cfg.precision == "fp32" else f", or fp32 (now {cfg.precision})"
                msg = (f"the loss became non-finite (NaN or Inf) at step {step}{where}; {kept}. Try a lower "
                       f"--lr (now {cfg.lr:g}) or gradient clipping{wider}")
                if resume is not None and step == int(resume.get("step", -1)) + 1:
                    # the loss of a step is the weights' before it: no setting of this run changes it
                    msg = (f"the loss became non-finite (NaN or Inf) at step {step}{where}, the first step after the "
                           f"checkpoint: its weights (step {step - 1}) already give it, whatever --lr, so resuming "
                           "cannot get past it; start a new run with a lower --lr or gradient clipping"
                           f"{wider}")
                msg += identity_start_advice(graph)  # (a deep flow whose couplings start away from the identity)
                run.emit({"kind": "event", "event": "nan", "step": step, "node": node, "inner_node": inner,
                          "message": msg})
                return finish("nan", msg)
            if cfg.grad_clip is not None:
                if scaler is not None:
                    scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            if scaler is not None:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            scheduler.step()
            run.step = step
            last_loss = stats[0] / stats[2]
            watch_step(run, watch, step, last_loss, data.task.kind)
            watch_learning(run, learning, step, stats, spe, data.task, total)
            window["loss"] += stats[0]
            window["correct"] += stats[1]
            window["count"] += int(stats[2])
            window["steps"] += 1
            stop_now = stats[4] > 0
            if step % cfg.log_every == 0 or measure or step == total:
                elapsed = max(time.perf_counter() - window["t"], 1e-9)
                row: dict[str, Any] = {"kind": "step", "step": step, "epoch": round(step / spe, 4),
                                       "loss": window["loss"] / window["count"],
                                       "lr": float(optimizer.param_groups[0]["lr"]),
                                       "samples_per_s": round(window["steps"] * batch * micro / elapsed, 2)}
                if classification:
                    row["accuracy"] = window["correct"] / window["count"]
                if scored:
                    row[scored] = window["count"]
                if measure and meter.peak is not None:
                    row["peak_bytes"] = meter.peak
                    row["estimate_bytes"] = estimate
                run.metrics["loss"] = row["loss"]
                if classification:
                    run.metrics["accuracy"] = row["accuracy"]
                if scored:
                    run.metrics[scored] = row[scored]
                run.emit(row)
                window = {"loss": 0.0, "correct": 0.0, "count": 0, "steps": 0, "t": time.perf_counter()}
            if cfg.val_every and step % cfg.val_every == 0 and step != total:
                validate()
                early = stops_early()
                if early:
                    break  # (to the end: its checkpoint and the finished row)
            if cfg.checkpoint_every and step % cfg.checkpoint_every == 0 and step != total:
                save_checkpoint()
        if stop_now:
            path = save_checkpoint()
            run.emit({"kind": "event", "event": "stopped", "step": run.step, "checkpoint": path,
                      **note_fields(warning_fields(watch), learning)})
            return finish("stopped")
    run.metrics.setdefault("loss", last_loss)
    if not early and validate() is None and run.val_pending:  # a stop during the last validation: resumable, not finished
        path = save_checkpoint()
        run.emit({"kind": "event", "event": "stopped", "step": run.step, "checkpoint": path})
        return finish("stopped")
    save_checkpoint()
    extra: dict[str, Any] = {"ranks_in_sync": ranks_in_sync(model, device)} if dist.active else {}
    notes = note_fields(warning_fields(watch), learning, run.step if learning_step(spe, total) is None else None)
    if early:
        extra.update(early_fields(patience, run.step, best))
    run.emit({"kind": "event", "event": "finished", "step": run.step, "metrics": dict(run.metrics),
              "wall_s": round(time.perf_counter() - t0, 3), **extra, **notes})
    return finish("finished", notes.get("warning"))


def _oom(run: _Run, model: Any, step: int, exc: BaseException, finish: Callable[..., TrainResult],
         batch: int) -> TrainResult:
    from .advice import oom_message

    msg = oom_message(run.graph, run.report, run.cfg, batch, model)
    run.emit({"kind": "event", "event": "oom", "step": step, "message": msg})
    return finish("oom", msg)
