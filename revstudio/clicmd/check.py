"""``revstudio check FILE [--json]``: shapes, parameters, regions, diagnostics, memory estimate.

Loads a project, runs the full check (core check + reversible regions + static
memory estimate when the backend is installed) and prints a table or one JSON
object. Exit 0 when the graph is valid, 1 when it has errors, 2 when the file
cannot be read.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from revstudio.cli import CliError, json_text, printable
from revstudio.core.check import Report, fmt_shape
from revstudio.core.graph import Graph
from revstudio.core.nogc import without_cyclic_gc

# "-" is a file name to revstudio, as to cp: its FILE arguments are paths (docs/cli.md, "FILE")
NOT_STDIN = "no such file (revstudio reads '-' as a file name, not as standard input)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="project file (.revs) or an exported .py")
    parser.add_argument("--batch", type=_batch, default=None,
                        help="batch size of the memory estimate (default: the project's training "
                             "batch_size, 32 when unset)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _batch(text: str) -> int:
    from ._runargs import positive_int

    return positive_int(text)


def load_project(path: str) -> Graph:
    """Load a project; an unreadable file becomes a CliError (exit 2) naming it."""
    import os

    from revstudio.core.project import ProjectError, cannot_read, load

    if path == "-" and not os.path.exists(path):
        raise CliError(f"-: {NOT_STDIN}; give the project's path, or /dev/stdin to read it from a pipe "
                       "(cat model.revs | revstudio check /dev/stdin)", 2)
    from ._paths import example_hint, folder_problem

    problem = folder_problem(path)
    if problem is not None:
        raise CliError(problem, 2)
    try:
        return load(path)
    except ProjectError as exc:
        raise CliError(f"{exc}{example_hint(path)}", 2) from None
    except OSError as exc:  # the loader should wrap these; stay safe if it does not
        raise CliError(f"{cannot_read(path, exc.strerror or str(exc))}{example_hint(path)}", 2) from None


def _checker() -> Callable[..., Report]:
    try:
        from revstudio.diagnostics.check import full_check
    except ImportError:  # backend not installed: shapes and diagnostics only
        from revstudio.core.check import check

        return check
    return full_check


def run(args: argparse.Namespace) -> int:
    graph = load_project(args.file)
    checker = _checker()
    batch = getattr(args, "batch", None)
    report = checker(graph, batch=batch) if batch is not None else checker(graph)
    if args.json:
        data = report.to_json()
        for nid, words in readings(report).items():  # which axis a recurrent node takes as time
            data["nodes"][nid]["reads"] = words
        budget = _project_budget(graph, report)
        problem = _budget_problem(graph)
        if problem is not None:
            data["budget"] = {"error": problem}
        if budget is not None:
            from revstudio.diagnostics.budget import budget_choice, budget_peak

            limit, at = budget
            mode = _training_mode(graph)
            data["budget"] = {**budget_choice(graph, report, limit, batch=at).to_json(),
                              "estimate_peak_bytes": budget_peak(graph, report, limit, batch=at),
                              "used": mode == "reversible", "mode": mode}
        note = _precision_note(graph)
        if note and isinstance(data.get("estimate"), dict):
            data["estimate"]["precision_note"] = note
        training = _training_problem(graph) or _data_problem(graph, report, args.file)
        if training is not None:
            data["training"] = {"error": training}
        task = training_task(graph, report, args.file)
        if task is not None:
            data["task"] = task
        if _personal_notes(graph):
            data["data_path_warnings"] = _personal_notes(graph)
        print(json_text(data))
    else:
        print(printable(format_report(report, args.file, graph)))
    return 0 if report.valid else 1


# ---- human output ---------------------------------------------------------

def _outputs_text(outputs: dict[str, Any]) -> str:
    if not outputs:
        return "-"
    if len(outputs) == 1:
        return fmt_shape(next(iter(outputs.values())))
    return ", ".join(f"{port} {fmt_shape(shape)}" for port, shape in outputs.items())


def _table(rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return lines


def readings(report: Report) -> dict[str, str]:
    """Node id -> how it reads its input, for types that say (a BiRNN: ``64 steps of 8 features (time
    is the last axis)``, its declaration's ``reading``), in the node table's order."""
    from revstudio.core.spec import registry

    seen = set(report.order)
    found: dict[str, str] = {}
    for nid in list(report.order) + [n for n in report.nodes if n not in seen]:
        info = report.nodes[nid]
        spec = registry.find(info.type)
        words = spec.reads(info.inputs.get("in")) if spec is not None and info.inputs else None
        if words:
            found[nid] = words
    return found


@without_cyclic_gc  # one line per node: allocation-heavy and cycle-free (revstudio.core.nogc)
def format_report(report: Report, path: str, graph: Graph) -> str:
    """The human-readable report: node table, diagnostics, totals, regions, estimate."""
    seen = set(report.order)
    ids = list(report.order) + [nid for nid in report.nodes if nid not in seen]
    rows = [("node", "type", "outputs", "parameters")]
    for nid in ids:
        info = report.nodes[nid]
        outputs = _outputs_text(info.outputs) if info.ok else "?"
        rows.append((printable(nid), printable(info.type), outputs, f"{info.parameters:,}" if info.ok else "-"))
    lines = _table(rows, right={3}) if ids else ["(the graph has no nodes)"]
    read = readings(report)
    if read:
        lines += ["", "how recurrent nodes read their input:"]
        lines += [f"  {printable(nid)} ({report.nodes[nid].type}) reads {words}" for nid, words in read.items()]

    errors, warnings = len(report.errors), len(report.warnings)
    if report.diagnostics:
        lines += ["", "diagnostics:"]
        diag_rows = []
        for d in report.diagnostics:
            where = (d.node or "graph") + (f".{d.port}" if d.port else "")
            diag_rows.append((f"  {d.severity}", printable(where), d.message))
        lines += _table(diag_rows, right=set())

    lines += ["", f"{graph.name or path}: {len(report.nodes)} nodes, {report.parameters:,} parameters, "
              f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"]
    if report.regions:
        lines += ["", "reversible regions:"]
        for region in report.regions:
            lines.append("  " + _region_text(region.to_json()))
    if report.estimate is not None:
        lines += ["", "memory estimate:"]
        lines += ["  " + line for line in _estimate_lines(report.estimate)]
        unknown = [printable(nid) for nid, info in report.nodes.items() if not info.ok]
        if unknown:  # (the app's status bar says "so far" too: zeros here read as a measured nothing)
            named = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
            lines.append(f"  so far: {named} {'have' if len(unknown) > 1 else 'has'} no known shapes and "
                         f"{'are' if len(unknown) > 1 else 'is'} not counted; fix the errors above")
        note = _precision_note(graph)
        if note:
            lines.append(f"  note: training.precision is {_training_precision(graph)}: {note}")
        budget = _project_budget(graph, report)
        problem = _budget_problem(graph)
        if problem is not None:
            lines.append(f"  memory budget: {problem} (train refuses it; fix it in Run > Run Settings)")
        if budget is not None:
            from revstudio.diagnostics.budget import budget_summary

            mode = _training_mode(graph)
            lines.append(f"  memory budget {_bytes(budget[0])} (training.memory_budget): "
                         + (budget_summary(graph, report, budget[0], batch=budget[1]) if mode == "reversible"
                            else f"unused in {mode} mode (training.mode); reversible mode would use it"))
    training = _training_problem(graph) or _data_problem(graph, report, path)
    if training is not None and training != _budget_problem(graph):  # (a budget's is said above)
        lines += ["", f"training section: {training} ('revstudio train' refuses it; fix it in Run > Run Settings)"]
    task = training_task(graph, report, path)
    if task is not None:
        head = f"training task ({task['requested']}): "
        lines += ["", head + (f"{task['kind']}, {_LOSS_WORDS.get(task['loss'], task['loss'])} on {task['output']!r}: "
                              f"{task['why']}" if "kind" in task
                              else f"refused: {task['error']} ('revstudio train' refuses it)")]
    lines += [line for note in _personal_notes(graph) for line in ("", f"warning: {note}")]
    lines += ["", "valid" if report.valid else "NOT valid: fix the errors above"]
    return "\n".join(lines)


def _personal_notes(graph: Graph) -> list[str]:
    """A warning per data path the file holds absolute inside a home folder (a teammate's checkout
    will not find it), with what to do."""
    from revstudio.core import data_paths as dp

    section = getattr(graph, "training", None) or {}
    base = dp.source_folder(graph)  # (with it, the relative path saving the file again writes, where there is one)
    return [dp.personal_path_note(key, path, dp.relative_home_spec(section[key], base) if base else None)
            for key, path in dp.personal_paths(section)]


_LOSS_WORDS = {"nll": "negative log-likelihood in bits per dimension"}


def training_task(graph: Graph, report: Report, path: str | None = None) -> dict[str, Any] | None:
    """What ``revstudio train`` would optimise and why (``infer_task``), or why it refuses; None
    for a graph with errors or a training section whose task is not known. Under ``auto`` the labels of
    the project's ``training.data`` (a .npz's header, relative to ``path``'s folder) decide it where they
    can (``labels_decide``), as the run will; labels a run refuses are refused here in its words."""
    import os
    from math import prod

    from revstudio.training.data import labels_header  # (torch-free: the header only)
    from revstudio.training.task import (  # (torch-free)
        TASKS,
        DataError,
        has_logdet,
        infer_task,
        labels_decide,
    )

    requested = (getattr(graph, "training", None) or {}).get("task", "auto")
    if not report.valid or requested not in TASKS:
        return None
    try:
        task = infer_task(graph, report, requested)
    except DataError as exc:
        return {"requested": requested, "error": str(exc)}
    shape = "x".join(map(str, task.output_shape)) or "nothing"
    base = os.path.dirname(os.path.abspath(path)) if path else None
    header = labels_header((getattr(graph, "training", None) or {}).get("data"), base)
    labels = {"source": header[2], "shape": header[0], "dtype": header[1]} if header is not None else None
    try:
        decided = labels_decide(task, *header) if header is not None else None
    except DataError as exc:  # (the labels themselves: refused by the rule the run applies)
        return {"requested": requested, "error": str(exc), "labels": labels}
    if decided is not None:
        guess, (task, said) = task.kind, decided
        said += "; under auto the labels decide" + (f" (the graph alone reads as {guess})" if guess != task.kind else "")
        return {"requested": requested, "kind": task.kind, "loss": task.loss_name(), "output": task.output_id,
                "why": said, "labels": labels}
    if task.kind == "flow":
        why = (f"the graph has a log-determinant (node {has_logdet(graph)!r}) and {task.output_id!r} holds "
               f"as many values per sample as the Inputs ({prod(task.output_shape)}), every node on the way invertible")
    elif task.per_step:
        where = "x".join(map(str, task.output_shape[1:]))
        why = (f"{task.output_id!r} reads {shape}: {task.num_classes} class scores for each of "
               f"{where} {task.unit}s (channels first), for N x {where} labels")
    elif task.kind == "classification":
        why = f"{task.output_id!r} reads a vector of {task.num_classes} class scores"
    else:
        why = f"{task.output_id!r} reads {shape}, no class scores and " + (task.not_flow or "no flow")
    if requested != "auto":
        why = "requested by training.task; " + why
    elif task.kind != "flow":
        why += "; under auto the labels decide (integers or one-hot rows: classification, other floats: regression" + (
            f"; N x {'x'.join(map(str, task.output_shape[1:]))} integers: a class per {task.unit})"
            if len(task.output_shape) >= 2 and task.output_shape[0] > 1 else ")")
    return {"requested": requested, "kind": task.kind, "loss": task.loss_name(), "output": task.output_id,
            "why": why}


def _training_problem(graph: Graph) -> str | None:
    """The config's message for a ``training`` section train would refuse (an unknown key, a bad
    value), else None: the graph may be valid and its runs still refused."""
    from revstudio.training.config import ConfigError, TrainConfig  # (torch-free)

    try:
        TrainConfig.from_section(getattr(graph, "training", None) or {})
    except ConfigError as exc:
        return str(exc)
    return None


def _data_problem(graph: Graph, report: Report, path: str) -> str | None:
    """Train's refusal of the project's ``training.data`` / ``val_data`` .npz for the Input nodes'
    shapes (read from the file headers), else None; relative paths start at the project's folder."""
    import os

    from revstudio.training.data import DATA_KEYS, data_problem

    section = getattr(graph, "training", None) or {}
    found = {nid: report.shape(f"{nid}.out") for nid in report.nodes if report.nodes[nid].type == "Input"}
    shapes = {nid: tuple(shape) for nid, shape in found.items() if shape is not None}
    if not shapes or len(shapes) != len(found):
        return None
    base = os.path.dirname(os.path.abspath(path))
    for key in DATA_KEYS:
        problem = data_problem(section.get(key), shapes, base)
        if problem is not None:
            return f"training.{key}: {problem}"
    return None


def _budget_problem(graph: Graph) -> str | None:
    """The config's own message for a ``training.memory_budget`` train would refuse, else None."""
    section = getattr(graph, "training", None) or {}
    if section.get("memory_budget") is None:
        return None
    from revstudio.training.config import ConfigError, TrainConfig  # (torch-free)

    try:
        TrainConfig.from_section({"memory_budget": section["memory_budget"]})
    except ConfigError as exc:
        return str(exc)
    return None


def _training_precision(graph: Graph) -> str:
    return str((getattr(graph, "training", None) or {}).get("precision", "fp32") or "fp32")


def _precision_note(graph: Graph) -> str | None:
    """What the estimate does not model of the project's own runs (their precision), or None."""
    from revstudio.diagnostics.estimate import precision_note

    return precision_note(_training_precision(graph))


def _training_mode(graph: Graph) -> str:
    mode = (getattr(graph, "training", None) or {}).get("mode", "reversible")
    return mode if mode in ("standard", "checkpoint") else "reversible"  # (a bad one is train's to refuse)


def _project_budget(graph: Graph, report: Report) -> tuple[int, int] | None:
    """(bytes, batch) of the project's own memory budget at the estimate's batch, where it has
    one, a valid graph and reversible regions; None otherwise (a bad value: :func:`_budget_problem`).
    Read as train reads it (the config's own reading), so both show the same budget."""
    budget = (getattr(graph, "training", None) or {}).get("memory_budget")
    estimate = getattr(report, "estimate", None)
    if budget is None or estimate is None or not report.regions or not report.valid:
        return None
    from revstudio.training.config import ConfigError, TrainConfig  # (torch-free)

    try:
        limit = TrainConfig.from_section({"memory_budget": budget}).memory_budget
    except ConfigError:
        return None
    return (int(limit), int(estimate.batch)) if limit is not None else None


def _region_text(data: dict[str, Any]) -> str:
    """'r0: 20 nodes (s ... cat); in stem.out; out cat.out'."""
    nodes = [str(n) for n in data.get("nodes", [])]
    if len(nodes) <= 4:
        shown = ", ".join(nodes)
    else:
        shown = f"{len(nodes)} nodes ({nodes[0]} ... {nodes[-1]})"
    text = f"{data.get('id', '?')}: {shown}"
    if data.get("inputs"):
        text += "; in " + ", ".join(str(p) for p in data["inputs"])
    if data.get("outputs"):
        text += "; out " + ", ".join(str(p) for p in data["outputs"])
    return text


def _bytes(n: Any) -> str:
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return str(n)
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(n)  # pragma: no cover


def _estimate_lines(estimate: Any) -> list[str]:
    """Summarise the estimate: its own text if it has one, else its JSON's totals."""
    summary = getattr(estimate, "summary_lines", None)
    if callable(summary):
        return [str(line) for line in summary()]
    data = estimate.to_json()
    if not isinstance(data, dict):
        return [str(data)]
    lines = []
    for key, value in data.items():
        if key == "nodes" or isinstance(value, list):
            continue  # per-node detail belongs to --json and the inspector
        if isinstance(value, dict):
            parts = []
            for k, v in value.items():
                if isinstance(v, dict):
                    inner = ", ".join(f"{ik} {_bytes(iv) if 'bytes' in ik else iv}" for ik, iv in v.items()
                                      if not isinstance(iv, (dict, list)))
                    parts.append(f"{k}: {inner}")
                else:
                    parts.append(f"{k} {_bytes(v) if 'bytes' in str(k) or 'bytes' in key else v}")
            lines.append(f"{key}: " + ("; ".join(parts) if parts else "-"))
        else:
            lines.append(f"{key}: {_bytes(value) if 'bytes' in key else value}")
    return lines
