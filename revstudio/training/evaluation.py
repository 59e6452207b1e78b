"""``revstudio evaluate`` / ``rs.evaluate``: a trained run's weights scored on data, in eval mode, no gradients.

What is scored: a run folder (its project snapshot and ``checkpoints/last.pt``, or ``checkpoint=FILE``), or a
file of weights: a revstudio checkpoint (it carries its project snapshot) or a bare state_dict beside a
``project`` file. The weights are read by ``checkpoint.weights_of`` and put into the compiled model by
``checkpoint.start_from``, as ``train --init`` does; the data are the run's own validation split (its
snapshot's data, ``val_fraction`` and ``seed``: the samples it held out) or ``data=SPEC`` (every sample of
it, or a ``mnist:`` / ``cifar10:`` folder's test files), loaded and checked as ``train`` loads them, with
its task and loss (``parts.Loss``). The result is one dict (docs/cli.md's schema), also written atomically to
the run folder's ``evaluations/<time>.json``. Refusals are :class:`EvalError` (exit code 2, 1 for a graph
with errors) naming the file and what to do.
"""
from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from typing import Any

from revstudio.core.project_format import SNAPSHOT, reads_as_project

EVALUATIONS = "evaluations"  # the run folder's folder of results


class EvalError(Exception):
    """An evaluation that cannot run; ``code`` is the CLI exit code (1 a graph with errors, 2 the rest)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Source:
    """Where the weights and the graph come from."""

    weights: str                  # the file of weights
    project: str                  # the project file, or the name its snapshot is told by
    graph: Any = None             # a project snapshot read from a checkpoint (None: load ``project``)
    run_dir: str | None = None    # the run folder the results go into (None: nowhere)


def _run_of(file: str) -> str | None:
    """The run folder a checkpoint file lies in (``RUN/checkpoints/x.pt``), or None."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(file)))
    return folder if os.path.isfile(os.path.join(folder, SNAPSHOT)) else None


def _refuse_a_project(target: str) -> None:
    """EvalError where ``target`` is a project (``reads_as_project``: a ``.revs`` file, a ``.py`` export, or
    JSON under another name), not weights: torch would only say it is no checkpoint. A run's own snapshot
    names its run folder instead."""
    if not reads_as_project(target):
        return
    folder = os.path.dirname(os.path.abspath(target))
    from .runs import is_run_dir

    if os.path.basename(target) == SNAPSHOT and is_run_dir(folder):
        run = os.path.dirname(target) or "."
        raise EvalError(f"{target}: is the project snapshot of a run, not its weights; give the run folder: "
                        f"revstudio evaluate {run}")
    raise EvalError(f"{target}: is a project, not a trained run; evaluate scores a run's weights: train it "
                    f"first ('revstudio train {target}'), then give its run folder ('revstudio runs {target}' "
                    "lists them)")


def resolve(target: str, checkpoint: str | None = None, project: str | None = None) -> Source:
    """The :class:`Source` of ``target`` (a run folder or a file of weights); EvalError naming what is missing."""
    if not os.path.exists(target):
        raise EvalError(f"{target}: no such run folder or file; give a run folder ('revstudio runs' lists them), "
                        "a checkpoint, or a state_dict file with --project FILE")
    if os.path.isdir(target):
        snapshot = os.path.join(target, SNAPSHOT)
        if not os.path.isfile(snapshot):
            raise EvalError(f"{target}: not a run folder (no {SNAPSHOT} in it); give a folder 'revstudio runs' "
                            "lists, or a checkpoint file")
        from .checkpoint import weights_file
        from .runs import BEST

        weights = weights_file(target) if checkpoint in (None, "last") else os.path.join(target, BEST) \
            if checkpoint == "best" else str(checkpoint)
        if not os.path.isfile(weights):
            if checkpoint in (None, "last"):
                raise EvalError(f"{target}: the run saved no checkpoint (no checkpoints/last.pt): it stopped or "
                                f"failed before its first; 'revstudio train --resume {target}' trains it on")
            if checkpoint == "best":
                raise EvalError(f"{target}: the run has no best checkpoint (no {BEST}): it saved none before its "
                                "first validation, has no validation split, or was trained by a revstudio that "
                                "kept only last.pt; give --checkpoint last")
            raise EvalError(f"--checkpoint {checkpoint}: no such file; give a checkpoint or a state_dict file")
        return Source(weights, project or snapshot, run_dir=target)
    _refuse_a_project(target)
    if checkpoint not in (None, "last"):
        raise EvalError(f"--checkpoint {checkpoint}: {target} is a file of weights already; give --checkpoint "
                        "with a run folder")
    run_dir = _run_of(target)
    if project is None and run_dir is not None:
        project = os.path.join(run_dir, SNAPSHOT)
    return Source(target, project or "", run_dir=run_dir)


def _weights(source: Source) -> tuple[dict[str, Any], dict[str, Any] | None]:
    from . import checkpoint as ckpt

    try:
        weights, data = ckpt.weights_of(source.weights)
    except ckpt.CheckpointError as exc:
        raise EvalError(str(exc)) from None
    if not source.project:
        text = data.get("graph") if data is not None else None
        if not isinstance(text, str):
            raise EvalError(f"{source.weights}: a state_dict holds weights only, not the network; give the project "
                            "it was trained from with --project FILE")
        from revstudio.core.project import ProjectError, loads

        try:
            source.graph = loads(text, f"{source.weights} (its project snapshot)")
        except ProjectError as exc:
            raise EvalError(f"{exc}; give the project with --project FILE") from None
        source.project = f"{source.weights} (its project snapshot)"
    return weights, data


def _newer_note(data: dict[str, Any] | None) -> str:
    """Words for weights a revstudio of another version saved ("" for this version's, or unknown)."""
    from revstudio import __version__

    made = ((data or {}).get("versions") or {}).get("revstudio")
    if not made or made == __version__:
        return ""
    return f" (saved by revstudio {made}; this is {__version__}: evaluate it with that version)"


def evaluate_source(source: Source, *, data: str | None = None, batch_size: int | None = None,
                    device: str | None = None, mode: str | None = None, worst: int = 5,
                    save: bool = True) -> dict[str, Any]:
    """Score ``source``'s weights (see the module docstring); the result dict, written to the run folder
    unless ``save`` is False or there is none."""
    from revstudio.clicmd._runargs import compile_error
    from revstudio.core.data_paths import absolute_spec

    from .config import ConfigError
    from .data import DataError, load_data
    from .parts import TrainError
    from .task import infer_task

    weights, saved = _weights(source)
    graph, report, cfg = project_of(source)
    try:
        overrides = {k: v for k, v in (("batch_size", batch_size), ("device", device), ("mode", mode)) if v}
        cfg = cfg.replace(**overrides) if overrides else cfg
        moved = _device_missing(cfg.device) if device is None else None
        cfg = cfg.replace(device="auto") if moved else cfg
    except ConfigError as exc:
        raise EvalError(f"{source.project}: {exc}") from None
    base = str(((saved or {}).get("data") or {}).get("base_dir") or os.path.dirname(os.path.abspath(
        source.project if os.path.isfile(source.project) else source.weights)))
    try:
        task = infer_task(graph, report, cfg.task)
        if data is None:
            bundle = load_data(cfg.data, graph, report, task=task, val_spec=cfg.val_data,
                               val_fraction=cfg.val_fraction, seed=cfg.seed, base_dir=base,
                               scale_uint8=cfg.scale_uint8)
            split, which = bundle.val, "validation"
            if split is None or len(split) == 0:
                raise EvalError(f"{source.project}: the run held out no validation samples (val_fraction "
                                f"{cfg.val_fraction:g}, no val_data); give the test data with --data SPEC")
        else:
            _from_here(data, base)
            spec = absolute_spec(data, os.getcwd())
            bundle = load_data(spec, graph, report, task=task, val_fraction=0.0, seed=cfg.seed,
                               base_dir=os.getcwd(), scale_uint8=cfg.scale_uint8)
            split, which = (bundle.val, "test") if bundle.val is not None else (bundle.train, "all")
    except DataError as exc:
        raise EvalError(f"{exc}; the data must fit the network the run trained") from None
    try:
        figures = _score(graph, report, cfg, bundle, split, weights, source, saved, worst)
    except TrainError as exc:
        raise EvalError(str(exc), exc.code) from None
    except EvalError:
        raise
    except Exception as exc:
        err = compile_error(exc)
        if err is None:
            raise
        raise EvalError(str(err), err.code) from None
    from revstudio import __version__

    result: dict[str, Any] = {
        "run_dir": source.run_dir, "checkpoint": source.weights, "project": source.project,
        "step": (saved or {}).get("step"), "split": which, "data": bundle.describe(), "samples": len(split),
        "task": bundle.task.kind, "per": bundle.task.unit if bundle.task.per_step else "sample",
        "loss_name": bundle.task.loss_name(), **figures, "time": _now(), "revstudio": __version__, "saved": None,
        "device_note": f"{moved}; scored on {figures['device']} instead (--device picks another)" if moved else None}
    if save and source.run_dir is not None:
        result["saved"] = save_result(source.run_dir, result)
    return result


def _device_missing(name: str) -> str | None:
    """Why this machine lacks the run's own device (``training.device``: a GPU machine's run scored on a
    laptop, the app's Evaluate… included, which passes no --device), or None where it has it. Scoring
    weights needs no particular device, so evaluate goes on with what this machine has and says so."""
    from revstudio.compiler.devices import DeviceUnavailable, usable_device

    try:
        usable_device(name)
    except DeviceUnavailable as exc:
        return f"the run trained on {name}, which this machine cannot use ({exc})"
    except (RuntimeError, ValueError):  # (a name torch refuses: resolve_device says it in its own words)
        return None
    return None


def _from_here(data: str, base: str) -> None:
    """Refuse a relative ``--data`` that names nothing from the current folder (where evaluate reads it, as
    the shell would) but names data from the run's project folder (where ``train`` reads a relative
    ``--data``), saying the path to give: reading "no such file" of a path the user did not mean helps
    no one. The mirror of ``train``'s refusal of a path found only from the current folder."""
    import shlex

    from .sources import DataError, parse_spec, resolve

    try:
        kind, path = parse_spec(data)
    except DataError:
        return  # (load_data says what is wrong with it)
    path = os.path.expanduser(path)
    if kind == "synthetic" or os.path.isabs(path):
        return
    exists = os.path.isdir if kind in ("mnist", "cifar10") else os.path.isfile
    there = resolve(path, base)
    if not exists(path) and exists(there):
        given = f"{kind}:{there}" if kind in ("mnist", "cifar10") else there
        raise EvalError(f"--data {data}: evaluate reads a relative path from the current folder ({os.getcwd()}), "
                        f"where there is no {path}; the run's project folder has {there} (train reads a relative "
                        f"--data from there): give --data {shlex.quote(given)}")

def project_of(source: Source) -> tuple[Any, Any, Any]:
    """``source``'s project checked and its training settings: (graph, report, TrainConfig); EvalError
    naming the file where it cannot be read, fails its check or holds settings no run can use."""
    from revstudio.cli import CliError
    from revstudio.clicmd._runargs import load_checked

    from .config import ConfigError, TrainConfig

    try:
        graph, report = load_checked(source.project, graph=source.graph)
        return graph, report, TrainConfig.from_section(graph.training)
    except CliError as exc:
        raise EvalError(str(exc), exc.code) from None
    except ConfigError as exc:
        raise EvalError(f"{source.project}: {exc}") from None


def with_weights(graph: Any, report: Any, source: Source, weights: dict[str, Any], verb: str, *, mode: str,
                 device: Any, memory_budget: Any = None, note: str = "") -> Any:
    """The compiled network of ``graph`` in eval mode with ``source``'s weights loaded, in the inputs' number
    type; weights that do not fit are refused saying to ``verb`` them with the project they came from."""
    import torch

    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.estimate import input_dtype

    from . import checkpoint as ckpt
    from .init_words import OWN_WEIGHTS

    dtype = torch.float64 if input_dtype(graph) == "float64" else torch.float32
    model = compile_graph(graph, mode=mode, device=device, dtype=dtype, report=report, memory_budget=memory_budget)
    ckpt.start_from(weights, model, source.weights, lambda src, why: (
        f"{src}: the weights do not fit the network of {source.project} ({why}){note}; {verb} them with the "
        f"project they were trained from (--project FILE); {OWN_WEIGHTS}"))
    model.eval()
    return model



def _score(graph: Any, report: Any, cfg: Any, bundle: Any, split: Any, weights: dict[str, Any], source: Source,
           saved: dict[str, Any] | None, worst: int) -> dict[str, Any]:
    import torch

    from revstudio.diagnostics.gradcheck import input_nodes, output_nodes

    from .eval_metrics import Tally
    from .parts import Loss, dequantize, noise_seed, precision_context, resolve_device

    device = resolve_device(cfg.device)
    if cfg.precision == "fp16" and device.type != "cuda":
        cfg = cfg.replace(precision="fp32")  # (fp16 runs on CUDA only: a CPU scores the weights in fp32)
    autocast, _ = precision_context(cfg, device)
    model = with_weights(graph, report, source, weights, "evaluate", mode=cfg.mode, device=device,
                         memory_budget=cfg.memory_budget, note=_newer_note(saved))
    order = [nid for nid, _ in input_nodes(graph)]
    outputs = output_nodes(graph)
    out_index = outputs.index(bundle.task.output_id) if bundle.task.output_id in outputs else 0
    loss = Loss(bundle.task.kind, bundle.levels)
    tally = Tally(loss, bundle.task.num_classes)
    with torch.no_grad():
        for start in range(0, len(split), cfg.batch_size):
            idx = torch.arange(start, min(start + cfg.batch_size, len(split)))
            inputs, targets = split.batch(idx)
            if bundle.levels is not None:  # (a flow's 8-bit images: the noise validation draws, seed for seed)
                seed = noise_seed(cfg.seed, -1 - start, 0)
                inputs = {k: dequantize(v, bundle.levels, seed + i) for i, (k, v) in enumerate(inputs.items())}
            xs = [inputs[nid].to(device) for nid in order]
            ys = targets.to(device) if targets is not None else None
            with autocast():
                out = model(*xs)
                head = out[out_index] if isinstance(out, tuple) else out
                tally.add(head, ys, getattr(model, "logdet", None))
    return {"device": str(device), "mode": cfg.mode, "batch_size": cfg.batch_size, **tally.result(worst)}


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def save_result(run_dir: str, result: dict[str, Any]) -> str:
    """Write ``result`` to ``RUN/evaluations/<time>.json`` atomically (a new name when the second is
    taken); the path written. EvalError when the folder cannot take it."""
    from .runs import RunDirError, json_text, write_atomic

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    folder = os.path.join(run_dir, EVALUATIONS)
    path, n = os.path.join(folder, f"{stamp}.json"), 1
    while os.path.exists(path):
        n += 1
        path = os.path.join(folder, f"{stamp}-{n}.json")
    try:
        write_atomic(path, json_text({**result, "saved": path}) + "\n")
    except RunDirError as exc:
        raise EvalError(f"cannot write {exc.path}: {exc.why}; make the run folder writable, or leave the "
                        "results unsaved (--no-save)") from None
    return path


def evaluations(run_dir: str) -> list[str]:
    """The run's saved evaluations, oldest first: by their names' time, then their number within a second
    (``<time>.json`` before ``<time>-2.json``, which a plain sort puts first)."""
    import re

    def when(name: str) -> tuple[str, int]:
        found = re.fullmatch(r"(\d{8}-\d{6})(?:-(\d+))?\.json", name)
        return (found.group(1), int(found.group(2) or 1)) if found else (name, 0)

    folder = os.path.join(run_dir, EVALUATIONS)
    try:
        names = sorted((n for n in os.listdir(folder) if n.endswith(".json")), key=when)
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names]


HEADLINE = {"classification": "accuracy", "regression": "mse", "flow": "bits_per_dim"}  # (each task's figure)


def evaluation_summary(run_dir: str) -> dict[str, Any] | None:
    """What ``revstudio runs`` says of a run's saved evaluations: ``{"count", "latest": {"file", "time",
    "checkpoint", "step", "split", "samples", "metric", "value", "loss"}}`` (the latest readable one; its
    ``metric`` the task's headline figure: accuracy, mse or bits_per_dim), or None where it has none."""
    import json

    saved = evaluations(run_dir)
    for path in reversed(saved):
        try:
            with open(path, encoding="utf-8") as fh:
                result = json.load(fh)
        except (OSError, ValueError):
            continue  # (a damaged file: the one before it is the latest that can be read)
        if not isinstance(result, dict):
            continue
        metric = HEADLINE.get(str(result.get("task")), "loss")
        value = result.get(metric)
        return {"count": len(saved), "latest": {
            "file": os.path.relpath(path, run_dir), "time": result.get("time"), "checkpoint": result.get("checkpoint"),
            "step": result.get("step"), "split": result.get("split"), "samples": result.get("samples"),
            "metric": metric, "value": value if isinstance(value, (int, float)) else None,
            "loss": result.get("loss") if isinstance(result.get("loss"), (int, float)) else None}}
    return {"count": len(saved), "latest": None} if saved else None


def evaluation_text(summary: dict[str, Any] | None) -> str:
    """The ``evaluated`` column of ``revstudio runs``: the latest's headline figure and how many are saved."""
    if not summary:
        return ""
    latest, count = summary.get("latest") or {}, summary["count"]
    value = latest.get("value")
    figure = "unreadable" if not latest else f"{latest['metric']} " + (
        "-" if value is None else f"{100 * value:.1f} %" if latest["metric"] == "accuracy" else f"{value:.4g}")
    return f"{figure} ({count} saved)"


def evaluate(target: str, *, data: str | None = None, checkpoint: str | None = None, project: str | None = None,
             batch_size: int | None = None, device: str | None = None, mode: str | None = None, worst: int = 5,
             save: bool = True) -> dict[str, Any]:
    """:func:`resolve` then :func:`evaluate_source`."""
    return evaluate_source(resolve(target, checkpoint, project), data=data, batch_size=batch_size, device=device,
                           mode=mode, worst=worst, save=save)
