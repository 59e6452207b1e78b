"""What a model's forward accepts: one floating batch per Input node, of its rank and channels,
in the number type and on the device of the weights; and what its ``inverse`` accepts.

Torch-only, so an exported file carries it verbatim: ``revstudio.compiler.boundary`` checks the
compiled module's batches with it and the exported ``Model.forward`` checks its own, so both
refuse a bad batch with the same words, naming the Input node and what to do.
"""

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn


def weights_of(module: nn.Module) -> tuple[torch.dtype | None, torch.device | None]:
    """The number type and device of the first floating weight (None, None without one)."""
    for p in module.parameters():
        if p.is_floating_point():
            return p.dtype, p.device
    return None, None


def check_count(model: str, specs: Mapping[str, tuple[Sequence[int], torch.dtype]], inputs: Sequence[Any],
                named: Mapping[str, Any], params: Sequence[str] = ()) -> None:
    """A call with as many tensors as the model has Input nodes (``specs``, in forward's order),
    by position or, where forward names them (``params``: the exported ``Model``), by name;
    another count is refused naming the Input nodes in order and the shape each expects, not
    forward's parameters (Python's own words name neither)."""
    if len(inputs) + len(named) == len(specs) and set(named) <= set(params[len(inputs):]):
        return
    order = ", ".join(f"{node!r} {shape_words(shape)}" for node, (shape, _) in specs.items()) or "none"
    got = f"{len(inputs)}" + (f" and {', '.join(map(repr, named))} by name" if named else "")
    how = f"by position or by name: model({', '.join(params)})" if params else "by position"
    raise TypeError(f"{model}: expected {len(specs)} input tensor(s), one per Input node in this order: "
                    f"{order}; got {got}. Pass one tensor per Input node, {how}")


def check_given(model: str, specs: Mapping[str, tuple[Sequence[int], torch.dtype]], params: Sequence[Any],
                more: Sequence[Any], unknown: Mapping[str, Any], names: Sequence[str]) -> None:
    """An exported ``forward`` called with an Input node's tensor left out (``params``: its
    parameters' values, None where not given), more tensors (``more``) or a name it does not
    take (``unknown``): refused as :func:`check_count` refuses the compiled module's."""
    given = [p for p in params if p is not None]
    check_count(model, specs, [*given, *more], unknown, names)


def sizes_refused(specs: Mapping[str, tuple[Sequence[int], torch.dtype]], sizes: Mapping[str, tuple[int, ...]],
                  exc: BaseException) -> None:
    if torch.jit.is_tracing():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            return _sizes_refused(specs, sizes, exc)
    return _sizes_refused(specs, sizes, exc)


def _sizes_refused(specs: Mapping[str, tuple[Sequence[int], torch.dtype]], sizes: Mapping[str, tuple[int, ...]],
                   exc: BaseException) -> None:
    """After the layers failed with ``exc``: where an Input got other sizes than its node declares
    (``sizes``: what :func:`check_batch` returned), a ValueError naming it, in the compiled
    module's words (torch's own, "mat1 and mat2 shapes cannot be multiplied", name no node); a
    batch Norm given one value per channel in training, a ValueError saying what to do."""
    if isinstance(exc, torch.OutOfMemoryError) or "but its Input node declares" in str(exc):
        return  # (out of memory; or said already, by a forward that ran inside this one: initialize)
    if "more than 1 value per channel when training" in str(exc) and "Norm, kind batch" not in str(exc):
        batch = next(iter(sizes.values()), (0,))[0]
        raise ValueError(f"a batch Norm layer sees one value per channel in this training batch of {batch}, which "
                         "torch cannot normalise; pass a batch of 2 or more (drop_last=True in a DataLoader), call "
                         "model.eval() to run on the running statistics, or use Norm kind layer or group; the layers "
                         f"failed with: {exc}") from exc
    for node, got in sizes.items():
        shape = tuple(specs[node][0])
        if tuple(got[1:]) != shape:
            raise ValueError(f"input {node!r} has shape {got} but its Input node declares {shape_words(shape)}, "
                             f"and the layers do not accept the other sizes; the layers failed with: {exc}") from exc


def shape_words(shape: Sequence[int]) -> str:
    """``(batch, 3, 16, 16)``: the shape an Input node expects, batch axis first."""
    return "(batch, " + ", ".join(map(str, shape)) + ")"


def checked_words(shape: Sequence[int]) -> str:
    """``shape_words`` and, where the node has sizes after its channels, which of them a batch is held
    to: its rank and channels only, the rest left to the layers (a fully convolutional graph takes
    any height and width, as torch's own layers do)."""
    if len(shape) < 2:
        return shape_words(shape)
    channels = f"{shape[0]} channel{'s' * (shape[0] != 1)}"
    return (f"{shape_words(shape)} ({len(shape) + 1} dimensions and {channels} are checked; the sizes after "
            "the channels may differ where the layers take them)")


def check_batch(specs: Mapping[str, tuple[Sequence[int], torch.dtype]], batch: Mapping[str, Any],
                dtype: torch.dtype | None, device: torch.device | None) -> dict[str, tuple[int, ...]]:
    if torch.jit.is_tracing():
        # torch.jit.trace warned of each size compared below ("Converting a tensor to a Python
        # boolean might cause the trace to be incorrect"): they judge the example batch, as they
        # should, and the trace records none of them (its graph takes other batch sizes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            return _check_batch(specs, batch, dtype, device)
    return _check_batch(specs, batch, dtype, device)


def _check_batch(specs: Mapping[str, tuple[Sequence[int], torch.dtype]], batch: Mapping[str, Any],
                 dtype: torch.dtype | None, device: torch.device | None) -> dict[str, tuple[int, ...]]:
    """Each Input node's tensor (``batch``: node id -> what was passed) against its declaration
    (``specs``: node id -> (shape without the batch axis, declared dtype)). Sizes other than
    the channels may differ where the layers allow (fully convolutional). ``dtype``/``device``:
    the weights' (None: not checked). A few attribute reads per input; torch.compile turns
    them into guards. Returns each input's shape, for :func:`sizes_refused`."""
    for node, x in batch.items():
        shape, declared = specs[node]
        want = shape_words(shape)
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"input {node!r} expects a tensor of shape {want}, got {type(x).__name__}; "
                            "pass one tensor per Input node (model(x), not model([x]))")
        if x.dim() != len(shape) + 1 or (len(shape) > 0 and x.shape[1] != shape[0]):
            raise ValueError(f"input {node!r} expects tensors of shape {checked_words(shape)}, "
                             f"got {tuple(x.shape)}; reshape the batch or change the Input node's shape")
        if x.shape[0] == 0:
            raise ValueError(f"input {node!r} got a batch of 0 samples (shape {tuple(x.shape)}); "
                             "pass at least one sample")
        if not x.is_floating_point():
            named = str(declared).removeprefix("torch.")
            raise TypeError(f"input {node!r} expects floating-point values ({named} as the Input "
                            f"node declares, or the model's {dtype}), got {x.dtype}; "
                            "convert with x.float()")
        if dtype is not None and x.dtype != dtype and not torch.is_autocast_enabled(x.device.type):
            # (ActNorm and InvConv1x1 would compute another type's batch silently, half in each)
            raise TypeError(dtype_words(node, x.dtype, dtype))
        if device is not None and (x.device.type != device.type or (
                device.index is not None and x.device.type != "cpu" and x.device.index != device.index)):
            raise ValueError(f"input {node!r} is on the {x.device} device but the model's weights are on "
                             f"{device}; move it with x.to({str(device)!r})")
    return {node: tuple(x.shape) for node, x in batch.items()}


def refuse_script(model: nn.Module) -> nn.Module:
    """What ``torch.jit.script`` gets for a model (its ``__prepare_scriptable__``): a refusal naming
    the model and the tools that work, not TorchScript's words about ``forward``'s parameters."""
    raise RuntimeError(
        f"{type(model).__name__}: torch.jit.script cannot compile this model (its forward checks each call in "
        "Python and its reversible regions run outside TorchScript); for TorchScript use "
        'torch.jit.trace(model, example) after model.mode = "standard", or torch.export.export in standard '
        "mode; torch.compile takes it in every mode")


def refuse_checkpoint(state_dict: Any) -> None:
    """What ``load_state_dict`` says of a training checkpoint given whole (``torch.load(path)``
    rather than its ``["model"]``): where its weights are, not torch's list of every weight
    "missing" and of "format", "optimizer", ... as unexpected keys."""
    if not isinstance(state_dict, Mapping) or any(isinstance(v, torch.Tensor) for v in state_dict.values()):
        return
    inner = [k for k in ("model", "state_dict") if isinstance(state_dict.get(k), Mapping)]
    if not inner:
        return
    what = ("a revstudio training checkpoint" if state_dict.get("format") == "revstudio-checkpoint"
            else "a training checkpoint")
    keys = ", ".join(repr(k) for k in list(state_dict)[:6]) + (", ..." if len(state_dict) > 6 else "")
    raise RuntimeError(f"load_state_dict was given {what} (keys {keys}), not a state_dict: its weights are "
                       f"under {inner[0]!r}; load them with model.load_state_dict(checkpoint[{inner[0]!r}])")


def check_returned(specs: Mapping[str, Sequence[int] | None], outputs: Mapping[str, Any],
                   device: torch.device | None, dtype: torch.dtype | None = None) -> None:
    """``model.inverse``'s boundary: each Output node's tensor (``outputs``: node id -> what was
    passed) of floating-point values of the weights' number type (``dtype``; None: not checked;
    any under autocast, as forward takes them) on the weights' device, of the rank and channels
    the node gets where known (``specs``: node id -> shape without the batch axis, or None). (An
    integer batch came back as NaNs; a list failed inside a layer; a float64 z on a float32 model
    came back as float64 samples computed half in each type.)"""
    for node, y in outputs.items():
        shape = specs[node]
        want = "(batch, " + ", ".join(map(str, shape)) + ")" if shape is not None else "(batch, ...)"
        if not isinstance(y, torch.Tensor):
            raise TypeError(f"inverse: output {node!r} expects a tensor of shape {want}, got {type(y).__name__}; "
                            "pass one tensor per Output node (model.inverse(z), not model.inverse([z]))")
        if shape is not None and (y.dim() != len(shape) + 1 or (len(shape) > 0 and y.shape[1] != shape[0])):
            raise ValueError(f"inverse: output {node!r} expects tensors of shape {checked_words(shape)}, "
                             f"got {tuple(y.shape)}")
        if y.dim() == 0 or y.shape[0] == 0:
            raise ValueError(f"inverse: output {node!r} got no samples (shape {tuple(y.shape)}); "
                             "pass at least one sample")
        if not y.is_floating_point():
            raise TypeError(f"inverse: output {node!r} expects floating-point values, got {y.dtype}; "
                            "convert with z.float()")
        if dtype is not None and y.dtype != dtype and not torch.is_autocast_enabled(y.device.type):
            raise TypeError(f"inverse: output {node!r} holds {y.dtype} values but the model's weights are {dtype}; "
                            f"convert it with z.to({dtype}), the model with model.to({y.dtype}), or run under "
                            "torch.autocast")
        if device is not None and (y.device.type != device.type or (
                device.index is not None and y.device.type != "cpu" and y.device.index != device.index)):
            raise ValueError(f"inverse: output {node!r} is on the {y.device} device but the model's weights "
                             f"are on {device}; move it with z.to({str(device)!r})")


def dtype_words(node: str, got: torch.dtype, dtype: torch.dtype) -> str:
    return (f"input {node!r} holds {got} values but the model's weights are {dtype}; convert the "
            f"batch with x.to({dtype}), the model with model.to({got}), or run under torch.autocast")
