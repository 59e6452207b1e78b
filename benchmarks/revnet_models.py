"""The RevNet of the published comparisons, built once per implementation with shared weights.

N additive-coupling blocks (y1 = x1 + F(x2), y2 = x2 + G(y1)), F and G each
Conv3x3 -> ReLU -> Conv3x3 on half the channels. Every column of the
benchmark (plain autograd, torch.utils.checkpoint per block, revstudio,
MemCNN, RevLib) runs a copy of the same weights, so their gradients can be
compared against one float64 reference.
"""
from __future__ import annotations

import copy
import importlib.util
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


def make_functions(blocks: int, channels: int, seed: int = 0) -> list[tuple[nn.Module, nn.Module]]:
    """(F, G) for each block, deterministic in ``seed``."""
    torch.manual_seed(seed)
    half = channels // 2

    def fn() -> nn.Module:
        return nn.Sequential(nn.Conv2d(half, half, 3, padding=1), nn.ReLU(),
                             nn.Conv2d(half, half, 3, padding=1))

    return [(fn(), fn()) for _ in range(blocks)]


class _Block(nn.Module):
    def __init__(self, f: nn.Module, g: nn.Module) -> None:
        super().__init__()
        self.f, self.g = f, g

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y1 = x1 + self.f(x2)
        return y1, x2 + self.g(y1)


class PlainRevNet(nn.Module):
    """Plain autograd: every activation is kept for backward."""

    def __init__(self, functions: list[tuple[nn.Module, nn.Module]], per_block_checkpoint: bool = False,
                 channels_last: bool = False) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(_Block(copy.deepcopy(f), copy.deepcopy(g)) for f, g in functions)
        self.per_block_checkpoint = per_block_checkpoint
        self.channels_last = channels_last

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=1)
        if self.channels_last:  # each half a dense channels_last tensor, as revstudio runs on the CPU
            x1, x2 = (t.contiguous(memory_format=torch.channels_last) for t in (x1, x2))
        for block in self.blocks:
            if self.per_block_checkpoint:
                x1, x2 = checkpoint(block, x1, x2, use_reentrant=False)
            else:
                x1, x2 = block(x1, x2)
        return torch.cat((x1, x2), dim=1)


def revstudio_graph(blocks: int, channels: int, size: int) -> Any:
    """The same network drawn as a user would: Input -> N wired RevNet blocks -> Output."""
    from revstudio.core.generate import revnet_chain

    return revnet_chain(blocks, channels, size, classes=None)


Built = tuple[nn.Module, list[nn.Parameter]]  # the model, its parameters in canonical order


def _canonical(pairs: list[tuple[nn.Module, nn.Module]]) -> list[nn.Parameter]:
    """F0 conv1 w, b, conv2 w, b, G0 ..., F1 ...: the order gradients are compared in
    (libraries register F and G in different orders, so model.parameters() won't do)."""
    return [p for f, g in pairs for m in (f, g) for p in m.parameters()]


def revstudio_model(functions: list[tuple[nn.Module, nn.Module]], channels: int, size: int,
                    mode: str = "reversible", dtype: torch.dtype = torch.float32, device: Any = "cpu") -> Built:
    """Compile the generated graph and load the shared weights into it by node id."""
    from revstudio.compiler import compile as compile_graph

    graph = revstudio_graph(len(functions), channels, size)
    model = compile_graph(graph, mode=mode, device=device, dtype=dtype)
    return model, load_revstudio_weights(model, functions)


def load_revstudio_weights(model: nn.Module, functions: list[tuple[nn.Module, nn.Module]]) -> list[nn.Parameter]:
    """Copy F/G conv weights into the compiled model (node ``b{i}_{f|g}_conv{1|2}``);
    returns the model's parameters in canonical order."""
    params = dict(model.named_parameters())
    order = []
    with torch.no_grad():
        for i, (f, g) in enumerate(functions):
            for name, fn in (("f", f), ("g", g)):
                for conv_no, conv in ((1, fn[0]), (2, fn[2])):
                    node = f"b{i}_{name}_conv{conv_no}"
                    for kind in ("weight", "bias"):
                        key = _param_key(params, node, kind)
                        params[key].copy_(getattr(conv, kind))
                        order.append(params[key])
    missing = set(params) - {k for k, v in params.items() if any(v is o for o in order)}
    if missing:
        raise RuntimeError(f"compiled model has parameters the benchmark did not set: {sorted(missing)[:5]}")
    return order


def _param_key(params: dict[str, Any], node: str, kind: str) -> str:
    hits = [k for k in params if k.endswith("." + kind) and (k.startswith(node + ".") or f".{node}." in k)]
    if len(hits) != 1:
        raise RuntimeError(f"cannot find the {kind} of node {node} among the compiled parameters "
                           f"(found {hits or 'none'})")
    return hits[0]


def memcnn_available() -> str | None:
    """None when MemCNN imports, else why not (shown in the table)."""
    return _why_not("memcnn")


def revlib_available() -> str | None:
    return _why_not("revlib")


def _why_not(name: str) -> str | None:
    if importlib.util.find_spec(name) is None:
        return "not installed (pip install --no-deps memcnn==1.5.2 revlib==1.7.2)"
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            importlib.import_module(name)
    except Exception as exc:  # report why instead of dropping the column silently
        return f"import failed: {type(exc).__name__}: {exc}"
    return None


def plain_model(functions: list[tuple[nn.Module, nn.Module]], per_block_checkpoint: bool = False,
                channels_last: bool = False) -> Built:
    model = PlainRevNet(functions, per_block_checkpoint, channels_last)
    return model, _canonical([(b.f, b.g) for b in model.blocks])


def memcnn_model(functions: list[tuple[nn.Module, nn.Module]]) -> Built:
    """MemCNN 1.5.2: one InvertibleModuleWrapper(AdditiveCoupling(F, G)) per block."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import memcnn

    pairs = [(copy.deepcopy(f), copy.deepcopy(g)) for f, g in functions]
    blocks = [memcnn.InvertibleModuleWrapper(memcnn.AdditiveCoupling(Fm=f, Gm=g),
                                             keep_input=False, keep_input_inverse=False) for f, g in pairs]
    return _FreshInput(nn.Sequential(*blocks)), _canonical(pairs)


class _FreshInput(nn.Module):
    """MemCNN frees its block inputs (storage resized to zero), the caller's tensor
    included; pass it a copy so the benchmark's input survives for the next run."""

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.clone())


def revlib_model(functions: list[tuple[nn.Module, nn.Module]]) -> Built:
    """RevLib 1.7.2: ReversibleSequential(F0, G0, F1, G1, ...): each module updates one
    half from the other, which is exactly y1 = x1 + F(x2), y2 = x2 + G(y1)."""
    import revlib

    pairs = [(copy.deepcopy(f), copy.deepcopy(g)) for f, g in functions]
    modules = [m for pair in pairs for m in pair]
    return _InputNeedsGrad(revlib.ReversibleSequential(*modules, split_dim=1)), _canonical(pairs)


class _InputNeedsGrad(nn.Module):
    """RevLib does not pass parameters to its autograd Function (their gradients come
    from a nested backward), so its output needs grad only if the input does: make
    the input a leaf that requires grad, costing one input-sized gradient."""

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.detach().requires_grad_())


def _streams(built: Built, stream: Any) -> Built:
    model, params = built
    model.stream_dtype = stream  # type: ignore[assignment]
    return model, params


def _mode(built: Built, mode: str) -> Built:
    model, params = built
    model.mode = mode  # type: ignore[assignment]
    return model, params


def _layout(built: Built, layout: torch.memory_format) -> Built:
    model, params = built
    model.memory_format = layout  # type: ignore[assignment]
    return model, params


COLUMNS: dict[str, Callable[..., Built]] = {
    "plain": lambda fns, c, s, **kw: plain_model(fns),
    # plain autograd in the layout revstudio picks on the CPU (channels_last): the same-layout baseline
    "plain-cl": lambda fns, c, s, **kw: plain_model(fns, channels_last=True),
    "checkpoint": lambda fns, c, s, **kw: plain_model(fns, per_block_checkpoint=True),
    "revstudio": lambda fns, c, s, **kw: revstudio_model(fns, c, s, **kw),
    # the same model with its residual streams (model.stream_dtype) in float32 (the usual
    # approach) and in float64 instead of the default compensated float32 pairs ("float32x2")
    "revstudio-f32streams": lambda fns, c, s, **kw: _streams(revstudio_model(fns, c, s, **kw), torch.float32),
    "revstudio-f64streams": lambda fns, c, s, **kw: _streams(revstudio_model(fns, c, s, **kw), torch.float64),
    # the default streams in the usual contiguous layout (model.memory_format), not channels_last
    "revstudio-nchw": lambda fns, c, s, **kw: _layout(revstudio_model(fns, c, s, **kw), torch.contiguous_format),
    # the compiled model in its other modes: plain autograd, and checkpoint mode (the region
    # recomputed in about sqrt(N) segments, compiler.checkpointing)
    "revstudio-standard": lambda fns, c, s, **kw: _mode(revstudio_model(fns, c, s, **kw), "standard"),
    "revstudio-checkpoint": lambda fns, c, s, **kw: _mode(revstudio_model(fns, c, s, **kw), "checkpoint"),
    "memcnn": lambda fns, c, s, **kw: memcnn_model(fns),
    "revlib": lambda fns, c, s, **kw: revlib_model(fns),
}
