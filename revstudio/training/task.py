"""What a training run optimises: the task (and so the loss) a graph and its data call for.

``infer_task(graph, report, requested)`` reads the graph's last layers:

- **flow** when the graph has a log-determinant (an AffineCoupling, ActNorm or
  InvConv1x1, at top level or inside a group body) and its Output holds as many
  values per sample as its Inputs: the loss is the negative log-likelihood of a
  standard normal prior plus ``model.logdet``; a non-invertible node on the way to that
  Output (``flow_breaker``) is refused by name, in ``auto`` too;
- **classification** when the Output reads a 1-D vector of K > 1 features (class
  scores, e.g. after Linear) other than the input's own shape: cross-entropy over K
  classes (``load_data`` also turns a regression guess into classification when the
  labels are integers, and a classification guess into regression for float targets);
  a C x T Output (channels first, C > 1) with N x T integer labels is classification
  per step (``steps``: cross-entropy over the steps, -100 and padding not scored), a C x H x W Output
  with N x H x W labels the same per pixel (segmentation), C x D x H x W with N x D x H x W per voxel,
  and any more axes per position;
- **regression** otherwise: mean squared error against real-valued targets.

A requested task that does not fit the graph is refused with a :class:`DataError`
naming the node. Where the data's labels are known before the run (their shape and number type, from
a file's header), :func:`labels_decide` says what ``auto`` will make of them and why, or why a run refuses them,
by the rule the run applies (``label_fit``). No torch here: the Qt run-settings dialog calls this too.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

from revstudio.core.find import FLOW_TYPES, find_type

from .label_fit import label_fit, number_kind
from .sources import DataError
from .steps import position_unit as position_word

__all__ = ["FLOW_TYPES", "TASKS", "DataError", "TaskInfo", "find_type", "flow_breaker", "has_logdet", "infer_task",
           "input_nodes", "labels_decide", "output_nodes"]

TASKS = ("auto", "classification", "regression", "flow")
_LOSSES = {"classification": "cross-entropy", "regression": "mse", "flow": "nll"}
# how several Outputs of a flow (a multi-scale flow's factored-out parts) become the one it reads
JOIN_OUTPUTS = ("flatten each with a Flatten node and join them with a Concat (dim 0) before a single Output "
                "(model.inverse then takes that one z)")


@dataclass(frozen=True)
class TaskInfo:
    """The resolved task: its kind, the class count of a classification head, the Output the loss reads."""

    kind: str                      # "classification" | "regression" | "flow"
    num_classes: int | None
    output_id: str                 # the Output node the loss reads
    # beyond CONTRACTS section 2 (all defaulted): where the guess came from and what it read
    requested: str = "auto"        # what the config asked for; "auto" lets load_data turn a
    #                                classification guess into regression when y holds floats
    head_id: str | None = None     # the node feeding the Output (named in label messages)
    output_shape: tuple[int, ...] = ()
    not_flow: str | None = None    # auto: why a graph with a log-determinant split over several Outputs
    #                                (a multi-scale flow) is not trained as a flow, and how to make it one

    @property
    def per_step(self) -> bool:
        """A class per position: N x T labels for a C x T Output, or N x H x W for C x H x W (``steps``)."""
        return self.kind == "classification" and len(self.output_shape) >= 2

    @property
    def unit(self) -> str:
        """What a scored position is called: "step", "pixel", "voxel" or "position" (labels of 1, 2, 3, 4+ axes)."""
        return position_word(len(self.output_shape) - 1)

    @property
    def scored_key(self) -> str | None:
        """The row key of the positions a per-position loss counts: "steps_scored", "pixels_scored",
        "voxels_scored" or "positions_scored" (validation rows prefix "val_"); None for other tasks."""
        return f"{self.unit}s_scored" if self.per_step else None

    def loss_name(self) -> str:
        return _LOSSES[self.kind]

    def describe(self) -> str:
        if self.per_step:
            where = "x".join(map(str, self.output_shape[1:]))
            marks = "padding" if self.unit == "step" else f"masked {self.unit}s"
            return (f"classification per {self.unit} ({self.num_classes} classes x {where} {self.unit}s, "
                    f"cross-entropy on {self.output_id!r}, labels of -100 and {marks} not scored)")
        if self.kind == "classification":
            return f"classification ({self.num_classes} classes, cross-entropy on {self.output_id!r})"
        return f"{self.kind} ({self.loss_name()} on {self.output_id!r})"


def input_nodes(graph: Any) -> list[str]:
    """Input node ids in document order (the compiled model's argument order)."""
    return [n.id for n in graph if n.type == "Input"]


def output_nodes(graph: Any) -> list[str]:
    """Output node ids in document order (the compiled model's result order)."""
    return [n.id for n in graph if n.type == "Output"]


def has_logdet(graph: Any) -> str | None:
    """The id of the first node that adds a log-determinant (inside a group: ``"node/inner"``), or None."""
    return find_type(graph, FLOW_TYPES)


def flow_breaker(graph: Any, report: Any, out_id: str) -> str | None:
    """The first node (document order) feeding Output ``out_id`` that is neither in a reversible
    region nor an invertible type: a flow through it has a Jacobian the log-determinant misses."""
    from revstudio.core.spec import get_spec

    regions = getattr(report, "regions", None)
    if regions is None:
        from revstudio.compiler.regions import analyze

        regions = analyze(graph, report).regions
    covered = {nid for region in regions for nid in region.nodes}
    feeding, todo = set(), [out_id]
    while todo:
        for edge in graph.edges_into(todo.pop()):
            if edge.src.node not in feeding:
                feeding.add(edge.src.node)
                todo.append(edge.src.node)
    for node in graph:
        if node.id in feeding and node.type != "Input" and node.id not in covered \
                and not get_spec(node.type).invertible:
            return str(node.id)
    return None


def _numel(shape: tuple[int, ...] | None) -> int:
    return prod(shape) if shape else 0


def _fmt(shape: tuple[int, ...] | None) -> str:
    return "x".join(map(str, shape)) if shape else "nothing (not connected or no shape)"


def infer_task(graph: Any, report: Any, requested: str = "auto") -> TaskInfo:
    """The task for ``graph`` (checked into ``report``): ``requested`` if it fits, else a DataError."""
    if requested not in TASKS:
        raise DataError(f"task {requested!r} is not known; use one of {', '.join(TASKS)}")
    if report is not None and not report.valid:
        first = report.errors[0]
        raise DataError(f"the graph does not check clean ({first}); fix it before training")
    outputs = output_nodes(graph)
    inputs = input_nodes(graph)
    if not outputs:
        raise DataError("the graph has no Output node: add one after the last layer so the loss has "
                        "something to read")
    if not inputs:
        raise DataError("the graph has no Input node: training needs one to feed the data into")
    out_id = outputs[0]  # with several Outputs the loss reads the first in document order
    edges = graph.edges_into(out_id)
    head = edges[0].src.node if edges else None
    out_shape = tuple(report.shape(f"{out_id}.in") or ()) if report is not None else ()
    in_total = sum(_numel(tuple(report.shape(f"{i}.out") or ())) for i in inputs) if report is not None else 0
    flow_node = has_logdet(graph)
    several = (f" (the graph has {len(outputs)} Outputs: {', '.join(outputs)}; the loss reads the "
               f"first, {out_id!r})") if len(outputs) > 1 else ""

    def info(kind: str, classes: int | None = None) -> TaskInfo:
        return TaskInfo(kind, classes, out_id, requested, head, out_shape, split_flow() if requested == "auto" else None)

    def split_flow() -> str | None:  # a multi-scale flow: its Outputs hold the Inputs' values together
        if flow_node is None or len(outputs) < 2 or report is None:
            return None
        held = sum(_numel(tuple(report.shape(f"{o}.in") or ())) for o in outputs)
        if held != in_total:
            return None
        return (f"not a flow: the graph has a log-determinant (node {flow_node!r}) and its {len(outputs)} Outputs "
                f"({', '.join(outputs)}) hold the Inputs' {in_total} values together, but a flow's loss reads "
                f"one Output; {JOIN_OUTPUTS} to train it as a flow (task 'flow')")

    def classification_fits() -> bool:  # K class scores, or C x T (C x H x W): a class per step (pixel)
        return len(out_shape) >= 1 and out_shape[0] > 1

    def looks_like_scores() -> bool:
        # a K-vector of another size than the input: class scores; the input's own shape
        # back (a map of features) is a regression guess, which integer labels still overturn
        same = len(inputs) == 1 and report is not None and tuple(report.shape(f"{inputs[0]}.out") or ()) == out_shape
        return len(out_shape) == 1 and classification_fits() and not same  # (C x T: the labels decide)

    def flow_fits() -> bool:
        return len(outputs) == 1 and _numel(out_shape) == in_total

    def refuse_broken_flow() -> None:
        breaker = flow_breaker(graph, report, out_id) if report is not None else None
        if breaker is not None:
            how = "a flow (log-determinant from node " + repr(flow_node) + ", Output " + repr(out_id) + \
                  " as large as the input)" if requested == "auto" else "task 'flow'"
            raise DataError(
                f"{how} needs every node from the Inputs to the Output to be invertible: node {breaker!r} "
                f"({graph.node(breaker).type}) is not, so the negative log-likelihood would miss its "
                "log-determinant; replace it with an invertible layer (ActNorm, InvConv1x1, a coupling) or "
                "move it into a coupling's net, or train it with task 'regression' if no density is meant")

    if requested == "flow":
        if flow_node is None:
            raise DataError("task 'flow' needs a log-determinant: the graph has no AffineCoupling, ActNorm "
                            "or InvConv1x1")
        if len(outputs) > 1:
            raise DataError(f"task 'flow' reads one Output, the graph has {len(outputs)} "
                            f"({', '.join(outputs)}); {JOIN_OUTPUTS}")
        if not flow_fits():
            raise DataError(f"task 'flow' needs Output {out_id!r} to hold as many values per sample as the "
                            f"input ({in_total}); it reads {_fmt(out_shape)} ({_numel(out_shape)} values)")
        refuse_broken_flow()
        return info("flow")
    if requested == "classification":
        if not classification_fits():
            raise DataError(f"task 'classification' needs Output {out_id!r} to read a vector of class scores "
                            f"(K > 1 features, e.g. after a Linear), C x T scores of a class per step, C x H x W "
                            f"of a class per pixel or C x D x H x W per voxel (C > 1, channels first); it reads "
                            f"{_fmt(out_shape)}{several}")
        return info("classification", out_shape[0])
    if requested == "regression":
        return info("regression")
    # auto
    if flow_node is not None and flow_fits():
        refuse_broken_flow()
        return info("flow")
    if looks_like_scores():
        return info("classification", out_shape[0])
    return info("regression")


def labels_decide(task: TaskInfo, shape: Any, dtype: str | None, source: str) -> tuple[TaskInfo, str] | None:
    """``(the task, why)`` that the data's labels ``y`` of ``shape`` (N first) and ``dtype`` (a numpy or torch
    name), read from ``source``'s header, make of an ``auto`` guess, by the rule a run applies
    (:func:`revstudio.training.label_fit.label_fit`): whole numbers of the Output's positions (N x T for C x T,
    N x H x W for C x H x W ...) are a class per position, N whole numbers for a K-vector are a class a sample,
    real values of a C x T (or larger) Output's shape are regression. Raises :class:`DataError` (the file's
    name first, the run's words after it) where a run refuses such labels, for a requested task too. None
    where the labels leave the graph's guess (or the requested task) as it is, or where only their values
    can tell (no labels, a flow, N x K rows that may be one-hot, real numbers that must be whole)."""
    if shape is None or not dtype or len(shape) < 1 or task.kind == "flow":
        return None
    out, held = tuple(task.output_shape), tuple(int(s) for s in shape)[1:]
    fit = label_fit(task.kind, out, held, dtype, auto=task.requested == "auto", output_id=task.output_id,
                    head=task.head_id)
    if fit.one_hot:
        return None
    if fit.problem is not None:
        raise DataError(f"{source}: {fit.problem}")
    if task.requested != "auto" or not fit.decided:
        return None
    kind = number_kind(dtype)
    what = f"the data's 'y' ({source}) holds {_fmt(tuple(int(s) for s in shape))} {dtype.replace('torch.', '')}"
    found = TaskInfo(fit.kind, out[0] if fit.kind == "classification" else None, task.output_id, task.requested,
                     task.head_id, out)
    if fit.per_position:
        return found, (f"{what}: whole numbers for each of the {_fmt(out[1:])} positions of {task.output_id!r}, "
                       f"a class per {found.unit} ({out[0]} scores a {found.unit}, channels first)")
    if fit.kind == "classification" and len(out) == 1 and not held and kind in ("i", "u"):
        return found, f"{what}: a class index a sample, for {task.output_id!r}'s {out[0]} class scores"
    if fit.kind == "regression" and len(out) >= 2 and held == out and kind == "f":
        return found, f"{what}: real values of the shape {task.output_id!r} reads ({_fmt(out)}), regression targets"
    return None  # (the labels fit the graph's guess: it stands, as the run keeps it)
