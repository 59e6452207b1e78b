"""ONNX export: ``revstudio export FILE -o OUT.onnx`` and ``rs.export(graph, onnx=PATH)``.

The model is the compiled module (``revstudio.compile``) in "standard" mode on the CPU: the modes
differ only in what a training step keeps for backward, never in the forward's values, and an
inference graph has no backward (a reversible region's autograd Function does not trace under
``torch.export``, which ``torch.onnx.export(..., dynamo=True)`` goes through). The inputs and
outputs are named after the Input and Output nodes, their first axis (the batch) is dynamic, and a
flow's log-determinant is one more output, ``logdet``. The file is checked before it is written:
with onnxruntime, which runs it on two batches of other sizes than the one traced and compares
with the module's eager outputs (:data:`TOLERANCE`); without it, with ``onnx.checker``. Nothing
is written unless the whole file is good (:func:`revstudio.core.tempfiles.write_atomic`).
"""
from __future__ import annotations

import contextlib
import importlib
import io
import logging
import warnings
from dataclasses import dataclass
from typing import Any

from . import CodegenError

INSTALL = "pip install 'revstudio[onnx]'"
PACKAGES = ("onnx", "onnxscript")  # what torch.onnx.export(dynamo=True) needs; onnxruntime checks the file
# the largest difference from the eager outputs, per unit of their largest magnitude (at least 1), the
# check takes (float32: measured up to 4e-6 over the examples, the log-determinant sum of glow_flow). The
# model is float32, or float64 for float64 Inputs: a run trained at bf16/fp16 precision keeps float32
# weights (autocast), and no bfloat16 file is written, since onnxruntime's CPU provider runs none
# (benchmarks/onnx_bf16.py: a type error at opset 18, no Conv kernel at opset 23)
TOLERANCE = {"float32": 1e-4, "float64": 1e-9}
TRACE_BATCH, CHECK_BATCHES = 2, (1, 5)


class OnnxError(CodegenError):
    """The ONNX file cannot be written: the message names the node, port, value or package and what to do."""


@dataclass(frozen=True)
class OnnxExport:
    """What ``rs.export(graph, onnx=PATH)`` wrote: the file, its input and output names (the nodes'
    ids, and ``logdet`` for a flow), its opset and the largest difference onnxruntime's outputs
    showed against the compiled module's (None where onnxruntime is not installed)."""

    path: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    opset: int
    max_abs_diff: float | None

    def __repr__(self) -> str:
        checked = ("not run (onnxruntime is not installed)" if self.max_abs_diff is None
                   else f"max abs difference {self.max_abs_diff:.2g} against the compiled module")
        return (f"<ONNX {self.path}: inputs {', '.join(self.inputs)}; outputs {', '.join(self.outputs)}; "
                f"opset {self.opset}; onnxruntime {checked}>")


def require_packages() -> None:
    """An OnnxError naming the missing packages and the install line, unless onnx and onnxscript import."""
    missing = []
    for name in PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise OnnxError(f"ONNX export needs the {' and '.join(missing)} package{'s' if len(missing) > 1 else ''} "
                        f"(torch's exporter writes the file with them); install them with {INSTALL}, "
                        "which also brings onnxruntime to check the file")


def check_opset(opset: Any) -> int | None:
    """``opset`` as the exporter takes it: None (torch's default) or a whole number it writes."""
    if opset is None:
        return None
    import onnx

    highest = onnx.defs.onnx_opset_version()
    if isinstance(opset, bool) or not isinstance(opset, int) or not 1 <= opset <= highest:
        raise OnnxError(f"opset {opset!r}: the installed onnx knows opsets 1 to {highest}, and torch's exporter "
                        "writes 18 and above (lower ones where it can convert the model); choose one, or leave "
                        "it out for torch's default")
    return opset


def export_api(graph: Any, path: Any, *, weights: Any, opset: Any, with_training: bool,
               training: dict[str, Any] | None) -> OnnxExport:
    """``rs.export(graph, onnx=PATH, weights=..., opset=...)``: refuses what belongs to the code export."""
    import os

    if path is None:
        raise TypeError("rs.export: weights= and opset= go with an ONNX file: rs.export(g, onnx='model.onnx', "
                        "weights=...); the code export takes no weights (load them into Model(): docs/cli.md)")
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise TypeError(f"rs.export: onnx= is the path of the file to write ('model.onnx'), got {path!r}")
    if with_training or training is not None:
        raise TypeError("rs.export: an ONNX file holds the network alone; with_training= and training= are the "
                        "code export's (rs.export(g, with_training=True))")
    path = os.fspath(path)
    if os.path.isdir(path):
        raise OnnxError(f"{path}: is a folder; give the ONNX file's path (model.onnx)")
    return export_onnx(graph, path, state=_state(weights), opset=check_opset(opset))


def _state(weights: Any) -> dict[str, Any] | None:
    """``weights=`` as a state_dict: a mapping as it is, a path read as ``revstudio export --weights`` reads it."""
    import os
    from collections.abc import Mapping

    if isinstance(weights, Mapping) and isinstance(weights.get("path"), str) and "status" in weights:
        weights = weights["path"]  # a run as rs.runs lists it
    if weights is None or isinstance(weights, Mapping):
        return dict(weights) if weights is not None else None
    folder = getattr(weights, "run_dir", None)  # a Run from rs.train
    source = os.fspath(folder if folder is not None else weights)
    from revstudio.training.session import SessionError, weights_from

    try:
        return weights_from(source, "weights=")
    except SessionError as exc:
        raise OnnxError(str(exc)) from None


def export_onnx(graph: Any, path: str, *, state: dict[str, Any] | None = None, opset: int | None = None) -> OnnxExport:
    """Writes ``graph``'s model (with the weights ``state``, or freshly initialised) to ``path`` as ONNX."""
    require_packages()
    opset = check_opset(opset)
    import torch

    model = _model(graph, state)
    inputs = _batch(graph, model, TRACE_BATCH, 0)
    with torch.no_grad():
        model(*inputs)
    flow = model.logdet is not None
    input_names = [node.id for node in graph if node.type == "Input"]
    output_names = [node.id for node in graph if node.type == "Output"]
    if flow:
        output_names.append(_logdet_name(output_names))
    target = model.with_logdet() if flow else model
    program = _trace(model, target, inputs, input_names, output_names, opset)
    proto = program.model_proto
    written = next((entry.version for entry in proto.opset_import if entry.domain in ("", "ai.onnx")), None)
    if opset is not None and written != opset:
        raise OnnxError(f"opset {opset}: torch's ONNX exporter could not write this model at that opset (it "
                        f"fell back to {written}); choose another opset or leave it out")
    data = proto.SerializeToString()
    diff = _check(graph, model, target, data, output_names)
    from revstudio.core.tempfiles import write_atomic

    write_atomic(path, data)
    return OnnxExport(str(path), tuple(input_names), tuple(output_names), int(written or 0), diff)


def _model(graph: Any, state: dict[str, Any] | None) -> Any:
    from revstudio.compiler import runtime as rt
    from revstudio.compiler.module import compile as compile_graph
    from revstudio.compiler.plan import CompileError

    try:
        model = compile_graph(graph, mode="standard", device="cpu")
    except CompileError as exc:
        raise CodegenError(str(exc)) from None
    if state is not None:
        try:
            model.load_state_dict(state)
        except RuntimeError as exc:
            from revstudio.diagnostics.gradcheck import state_mismatch

            why = state_mismatch(model.state_dict(), state) or str(exc).splitlines()[0]
            raise OnnxError(f"the weights do not fit the graph {graph.name} ({why}); nothing was written") from None
    model.eval()
    pending = rt.uninitialized(model)
    if pending:
        nodes = ", ".join(_node_of(model, layer) for layer in pending)
        raise OnnxError(f"{nodes}: an ActNorm sets its scale and shift from the first batch it sees, and this "
                        "model has seen none, so its ONNX file would hold a placeholder; export trained weights "
                        "(a run folder, or --weights / weights=) instead")
    return model


def _node_of(model: Any, layer: Any) -> str:
    """``node ID`` for a layer of ``model``, or ``node ID (its layer a.b)`` for one inside a group."""
    where = {id(module): name for name, module in model.named_modules()}.get(id(layer), "")
    first, _, rest = where.partition(".")
    nodes = {attr: nid for nid, attr in model.plan.modules.items()}
    node = nodes.get(first, first)
    return f"node {node}" + (f" (its layer {rest})" if rest else "")


def _batch(graph: Any, model: Any, batch: int, seed: int) -> tuple[Any, ...]:
    from revstudio.diagnostics.gradcheck import random_inputs

    return random_inputs(graph, batch, model.dtype, seed=seed, requires_grad=False)


def _logdet_name(taken: list[str]) -> str:
    name = "logdet"
    while name in taken:
        name += "_"
    return name


@contextlib.contextmanager
def _quiet() -> Any:
    """torch's exporter prints its steps and warns of its own choices: none of it is the user's business."""
    loggers = [logging.getLogger(name) for name in ("torch.onnx", "onnxscript", "torch.export", "torch._dynamo")]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _trace(model: Any, target: Any, inputs: tuple[Any, ...], input_names: list[str], output_names: list[str],
           opset: int | None) -> Any:
    import torch

    dynamic = (tuple({0: torch.export.Dim("batch")} for _ in inputs),)
    try:
        with _quiet():
            return torch.onnx.export(target, inputs, None, dynamo=True, opset_version=opset, input_names=input_names,
                                     output_names=output_names, dynamic_shapes=dynamic, verbose=False)
    except Exception as exc:  # torch's exporter raises many kinds; a layer of our own is named below
        raise OnnxError(_failure(model, inputs, exc)) from None


def _failure(model: Any, inputs: tuple[Any, ...], exc: Exception) -> str:
    """The first node whose layer alone torch's exporter cannot take, in words, or its own first line."""
    import torch

    from revstudio.compiler.held import is_held  # (a module a region takes apart: no hook of it fires)

    seen: dict[str, tuple[Any, ...]] = {}
    hooks = [getattr(model, attr).register_forward_hook(lambda _m, args, _out, nid=nid: seen.setdefault(nid, args))
             for nid, attr in model.plan.modules.items()
             if isinstance(getattr(model, attr, None), torch.nn.Module) and not is_held(getattr(model, attr))]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for hook in hooks:
            hook.remove()
    types = {op.node: op.type for op in model.plan.ops if hasattr(op, "node") and hasattr(op, "type")}
    for nid, args in seen.items():
        try:
            with _quiet():
                torch.onnx.export(getattr(model, model.plan.modules[nid]), args, None, dynamo=True, verbose=False)
        except Exception as inner:
            kind = f" ({types[nid]})" if types.get(nid) else ""
            return (f"node {nid}{kind}: torch's ONNX exporter cannot translate this layer ({_first_line(inner)}); "
                    "replace it with layers ONNX has, or export Python code instead (-o model.py)")
    return (f"torch's ONNX exporter failed ({_first_line(exc)}); export Python code instead (-o model.py), "
            "which runs wherever torch does")


def _first_line(exc: Exception) -> str:
    """torch's reason in one line: its exception summary's (``<class '...'>: No ONNX function found for
    ...``) where it has one, else the first line that is not its advice on filing a report."""
    import re

    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in str(exc).splitlines()]
    lines = [line for line in lines if line]
    summary = [line.split("'>: ", 1)[1] for line in lines if line.startswith("<class '") and "'>: " in line]
    useful = [line for line in lines if not line.startswith(("Failed to export", "- ", "The error above", "#"))]
    text = (summary or useful or lines or [type(exc).__name__])[0]
    return text[:300]


def _check(graph: Any, model: Any, target: Any, data: bytes, output_names: list[str]) -> float | None:
    """The largest difference onnxruntime's outputs show against ``target``'s eager ones over
    :data:`CHECK_BATCHES` (None without onnxruntime, where ``onnx.checker`` checks the file alone)."""
    import numpy as np
    import torch

    try:
        import onnxruntime
    except ImportError:
        onnxruntime = None
    if onnxruntime is None:
        import onnx

        try:  # (full_check: also each node's types against its opset, which onnxruntime would refuse to load)
            onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
            raise OnnxError(f"the ONNX file torch wrote is not valid ({_first_line(exc)}); nothing was written") from None
        return None
    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [entry.name for entry in session.get_inputs()]
    limit = TOLERANCE.get(str(model.dtype).removeprefix("torch."), 1e-4)
    worst = 0.0
    for seed, batch in enumerate(CHECK_BATCHES, 1):
        inputs = _batch(graph, model, batch, seed)
        with torch.no_grad():
            expected = _flat(target(*inputs))
        got = session.run(None, {name: tensor.numpy() for name, tensor in zip(names, inputs)})
        for name, want, have in zip(output_names, expected, got):
            want_np = want.float().numpy()
            diff = float(np.max(np.abs(np.asarray(have, dtype=np.float64) - want_np))) if want_np.size else 0.0
            scale = max(1.0, float(np.max(np.abs(want_np))) if want_np.size else 1.0)
            if not diff <= limit * scale:
                raise OnnxError(f"output {name}: onnxruntime's result differs from the compiled module's by "
                                f"{diff:.3g} at batch {batch} (more than {limit:g} of its largest value, "
                                f"{scale:.3g}); nothing was written. Export Python code instead (-o model.py)")
            worst = max(worst, diff)
    return worst


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [leaf for part in value for leaf in _flat(part)]
    return [value]
