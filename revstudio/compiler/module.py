"""Building an ``nn.Module`` from a plan: ``revstudio.compile(graph, mode, device, dtype)``.

:class:`CompiledModel` is the whole graph: an ``executor.Executor`` (node modules from each
spec's ``build``, registered under the plan's module names so ``state_dict`` keys derive from
node ids; group bodies become ``executor.GroupModule`` s; every plan op a small callable over
named values) plus what a caller sets and asks of a model. Reversible regions and checkpoint
segments are assembled by ``assembly`` (the same code the exported file runs)
into ``runtime.Region`` objects, whose mode ("reversible" | "standard" |
"checkpoint") can be switched at any time without touching the weights.
What callers may pass in is checked at the boundary (``boundary``); what all the executors of
one model share (device, dtype, mode, memory budget) is its ``builder.Builder``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from revstudio.core.graph import Graph
from revstudio.core.scripting import expect_graph

from . import budget
from . import runtime as rt
from .boundary import (
    by_name,
    check_inputs,
    check_outputs,
    check_report,
    cuda_devices,
    dtype_hint,
    lone_norm_hint,
    outputs_given,
    resolve_device,
    size_hint,
)
from .builder import Builder
from .executor import Executor
from .executor import GroupModule as GroupModule  # (where a model pickled before the split finds it)
from .first_batch import warn_unseen
from .module_repr import regions_text
from .plan import CompileError, NodeOp, Plan, RegionOp, lower
from .pricing import Prices
from .renames import alias_state_keys, layer_aliases
from .runtime_boundary import refuse_checkpoint, refuse_script
from .runtime_eager import eager
from .runtime_export import WithLogdet, logdet_put_back, refuse_untraced_logdet

MODES = ("reversible", "standard", "checkpoint")


FOREIGN_NAMES = (
    "The model names its weights after its node ids (print(model.state_dict().keys())). Weights of "
    "the same network written elsewhere (plain PyTorch, MemCNN, RevLib) load with "
    "rs.load_weights(model, state_dict, rename={pattern: replacement}) or with by_order=True "
    "(docs/porting.md).")


class CompiledModel(Executor):
    """The compiled graph: ``forward(*inputs)`` takes one tensor per Input node (document order)
    and returns one tensor per Output node (a single tensor if there is one).

    ``mode`` ("reversible", "standard", "checkpoint") switches how backward gets activations,
    same weights; ``regions`` are the reversible regions; ``inverse(*outputs)`` runs a model
    invertible end to end backwards and ``logdet`` is a flow's last log-determinant;
    ``inversion_errors()`` the regions' last measured |x - f^-1(f(x))| / |x|;
    ``memory_budget`` lets regions keep some activations. Each node's layer is the attribute
    named after its id.
    """

    def __init__(self, graph: Graph, plan: Plan, device: torch.device, dtype: torch.dtype,
                 mode: str = "reversible") -> None:
        super().__init__()
        root = Builder(graph, plan, device, dtype)
        self._setup(plan, root)
        root.graph = None  # built: keep no reference to the live document (copies, pickles)
        # a model with no layer that initialises from data (no ActNorm) has nothing for its first
        # forward to run first: torch.export of a fresh model is not refused over an ActNorm it lacks
        self._init_checked = not rt.uninitialized(self)
        self.register_load_state_dict_post_hook(type(self)._loaded)
        # Layers with weights need the weights' number type (a model of Squeezes and Permutes
        # takes any): the boundary refuses another unless autocast casts it.
        self._typed = any(t.is_floating_point() for t in (*self.parameters(), *self.buffers()))
        self.mode = mode
        # Renamed nodes: state_dict keys under the old layer name load into the new one.
        self._aliases = layer_aliases(graph)

    # ---- the mode switch ---------------------------------------------------
    @property
    def mode(self) -> str:
        """"reversible" (regions keep no activations; backward rebuilds them), "standard" (plain
        autograd) or "checkpoint" (torch checkpointing of each region's segments); settable at
        any time, with the same weights and ``state_dict``."""
        return self._root.mode

    @mode.setter
    def mode(self, value: str) -> None:
        if value not in MODES:
            raise ValueError(f"mode {value!r} is not known; use one of {', '.join(MODES)}")
        self._root.mode = value

    @property
    def stream_dtype(self) -> torch.dtype | str | None:
        """How regions keep their residual streams (what backward rebuilds activations from).

        A dtype (``torch.float64``: rebuilt without drift; ``torch.float32``: half the
        memory, reconstruction error compounds with depth), ``"float32x2"``
        (``revstudio.compiler.runtime.FLOAT32X2``: a float32 value plus a float32
        correction, as accurate as float64 and read by layers without a copy; float32
        models only, others keep their automatic choice), or None (automatic:
        ``"float32x2"`` for float32 models, float64 for float16/bfloat16 ones, the
        model's own dtype for float64 models and on MPS).
        """
        return self._root.stream_dtype

    @stream_dtype.setter
    def stream_dtype(self, value: torch.dtype | str | None) -> None:
        if not (value is None or isinstance(value, torch.dtype) or rt.is_pair(value)):
            raise ValueError(f"stream_dtype {value!r} is not known; use a torch dtype, "
                             f"{rt.FLOAT32X2!r} or None (automatic)")
        self._root.stream_dtype = value

    @property
    def memory_format(self) -> torch.memory_format | None:
        """The memory layout of the residual streams the regions copy their inputs into:
        ``torch.channels_last``, ``torch.contiguous_format``, or None (automatic:
        channels_last for float32 regions with 2-D convolutions on the CPU, where oneDNN
        convolves without reordering; the input's own layout elsewhere). Region outputs
        come back in it (same shapes and values; ``.contiguous()`` gives the usual layout).
        Weights, ``state_dict`` and standard mode are the same in every layout.
        """
        return self._root.memory_format

    @memory_format.setter
    def memory_format(self, value: torch.memory_format | None) -> None:
        if value is not None and value not in (torch.channels_last, torch.contiguous_format):
            raise ValueError(f"memory_format {value!r} is not supported; use torch.channels_last, "
                             "torch.contiguous_format or None (automatic)")
        self._root.memory_format = value
        for module in self.modules():
            for region in getattr(module, "_regions", ()):
                region.memory_format = value

    @property
    def memory_budget(self) -> float | None:
        """Bytes of activations the reversible regions may keep for backward (reversible
        mode only), to buy back the time of rebuilding them.

        The budget keeps each region's first steps, as many as fit over all regions
        together (the whole of a region when it fits), priced by the static estimate at
        the batch that runs (see ``revstudio memory FILE --budget``); the other steps run
        reversibly. None (the default): every region reversible;
        ``math.inf``: every region keeps its activations (standard mode's speed); 0:
        today's reversible memory; or an amount as the training setting and ``memory --budget``
        take it, ``"64MiB"``. Standard and checkpoint mode ignore it.
        """
        return self._root.memory_budget

    @memory_budget.setter
    def memory_budget(self, value: float | str | None) -> None:
        self._root.memory_budget = budget.budget_bytes(value)

    @property
    def track_inversion(self) -> bool:
        """Whether each reversible backward measures its regions' inversion error (True, the
        default): a few samples of every region input kept from the forward and compared with
        what backward rebuilds, for :meth:`inversion_errors`. Off, backward skips that work
        (up to 5 % of a small model's step) and ``inversion_errors()`` keeps the figures of
        the last backward that measured. ``revstudio train`` measures on its gradient-check
        and memory-measured steps only.
        """
        return self._root.track_inversion

    @track_inversion.setter
    def track_inversion(self, value: bool) -> None:
        self._root.track_inversion = bool(value)

    @property
    def plan(self) -> Plan:
        """The lowered graph it runs: ``plan.inputs``/``outputs`` (Input, Output nodes), ``plan.modules``."""
        return self._plan

    @property
    def regions(self) -> list[Any]:
        """The reversible regions (``revstudio.compiler.regions.Region``) of the top-level graph."""
        return list(self._plan.regions.regions)

    @property
    def dtype(self) -> torch.dtype:
        """The weights' number type, which forward expects of its inputs (``.double()`` changes it)."""
        return self._root.dtype

    # ---- running -------------------------------------------------------------
    def __prepare_scriptable__(self) -> torch.nn.Module:
        # torch.jit.script asks this first: its own refusal named forward's **named
        return refuse_script(self)

    def forward(self, *inputs: torch.Tensor, **named: Any) -> Any:
        """One batch-first tensor per Input node, in document order or by the Input node's id
        (``model(x)``, ``model(image=x)``; checked, naming the Input node); returns one tensor
        per Output node (a tuple if several)."""
        if named:
            inputs = by_name(self._plan, inputs, named)
        self._check_inputs(inputs)
        try:
            if not self._init_checked:  # (the first batch runs twice: its failures get the same hints)
                self.initialize(*inputs)
            with logdet_put_back(self):  # (torch.export: the layers' logdet put back, see with_logdet)
                outs = self._run(inputs)
        except (RuntimeError, ValueError) as exc:  # (an RNN refuses another dtype with a ValueError)
            if isinstance(exc, torch.OutOfMemoryError):
                raise
            hint = lone_norm_hint(self, inputs, exc)
            if hint is not None:
                raise ValueError(f"{hint}; the layers failed with: {exc}") from exc
            hint = self._size_hint(inputs)
            if hint is not None:
                raise ValueError(f"{hint}; the layers failed with: {exc}") from exc
            hint = dtype_hint(self._plan, self._root.dtype, inputs)
            if hint is not None:
                raise TypeError(f"{hint}; the layers failed with: {exc}") from exc
            raise
        return outs[0] if len(outs) == 1 else tuple(outs)

    @property
    def logdet(self) -> torch.Tensor | None:
        """log|det J| of the last forward, per sample (``Executor.logdet``); refused while torch.export
        traces the model outside ``with_logdet()``, which records it."""
        refuse_untraced_logdet(self)
        return super().logdet

    def with_logdet(self) -> torch.nn.Module:
        """This model (the same layers) as a module whose forward returns ``(outputs, logdet)``: what
        torch.export records of the log-determinant, which ``model.logdet`` keeps as an attribute:
        ``z, logdet = torch.export.export(model.with_logdet(), (x,)).module()(x)``."""
        return WithLogdet(self)

    def _check_inputs(self, inputs: Sequence[Any], named: dict[str, Any] | None = None) -> None:
        check_inputs(self._plan, self._root.device, self._root.dtype if self._typed else None, inputs, named)

    def _size_hint(self, inputs: Sequence[torch.Tensor]) -> str | None:
        return size_hint(self._plan, inputs)

    def inverse(self, *outputs: torch.Tensor, **named: torch.Tensor) -> Any:
        """The inputs rebuilt from the outputs (one per Output node, in forward's order or by its id), for a
        graph that is one reversible region from its Inputs to its Outputs, such as a flow:
        ``x = model.inverse(z)`` samples from it. Returns a tensor per Input node (a single
        tensor if there is one)."""
        if not self._plan.invertible:
            regions = ", ".join(r.id for r in self.regions) or "none"
            raise NotImplementedError(
                f"{self._plan.name}: the model is not invertible end to end (regions: {regions}); every "
                "node between the Inputs and the Outputs must be in one reversible region, see "
                "'revstudio check' for the regions and why the other nodes are not in one")
        outputs = outputs_given(self._plan, outputs, named)
        check_outputs(self._plan, self._root.device, self._root.dtype if self._typed else None, outputs)
        if not self._init_checked:  # (ActNorm layers that never saw a batch: the identity, warned of)
            warn_unseen(self)
        xs = self._invert(outputs)
        return xs[0] if len(xs) == 1 else xs

    @eager
    @torch.no_grad()
    def initialize(self, *inputs: torch.Tensor) -> None:
        """Runs data-dependent initialisation (ActNorm) once, eagerly, on this batch.

        Called by the first forward when needed; never traced by torch.compile. The
        pass draws no random numbers from the caller's stream and leaves BatchNorm
        statistics untouched.
        """
        if rt.exporting():
            rt.refuse_export_initialize(self)
        pending = rt.uninitialized(self)
        if pending:
            mode = self.mode
            self.mode = "standard"
            try:
                with torch.random.fork_rng(devices=cuda_devices(inputs)), rt.frozen_batch_stats([self]):
                    self._run(inputs)
            finally:
                self.mode = mode
            rt.share_from_rank0(pending)
        self._init_checked = True

    def extra_repr(self) -> str:
        return f"mode={self.mode!r}, regions: {regions_text(self.regions)}"

    def _load_from_state_dict(self, state_dict: Any, prefix: str, *args: Any, **kwargs: Any) -> None:
        alias_state_keys(state_dict, prefix, getattr(self, "_aliases", {}))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._init_checked = False  # re-read ActNorm's flags from the loaded buffers (_loaded)

    def _loaded(self, incompatible: Any) -> None:
        # after load_state_dict, its layers' flags say whether forward still initialises: read here,
        # on real tensors (torch.export traces forward with fake ones, whose values cannot be read)
        self._init_checked = not rt.uninitialized(self)

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        """nn.Module's; where the names do not fit (the weights of the same network written in
        plain PyTorch, MemCNN or RevLib), torch's message also says how to map them: rs.load_weights.
        A training checkpoint given whole is refused saying where its weights are."""
        refuse_checkpoint(state_dict)
        try:
            return super().load_state_dict(state_dict, strict=strict, assign=assign)
        except RuntimeError as exc:
            if "Missing key(s)" not in str(exc) and "Unexpected key(s)" not in str(exc):
                raise
            raise RuntimeError(f"{exc}\n{FOREIGN_NAMES}") from None

    def inversion_errors(self) -> dict[str, float]:
        """Last measured |x - f^-1(f(x))| / |x| per region (from the latest backward pass that
        measured it: every one while ``track_inversion`` is on).

        Top-level regions by id; regions inside group bodies as ``"<module path>/<id>"``.
        A region whose last backward measured nothing is absent, never 0.0: the caller's own
        input is its reference, so one that was dropped or changed in place before backward
        leaves that region unmeasured (keep the input alive to have it measured).
        """
        out: dict[str, float] = {}
        for path, module in self.named_modules():
            if not isinstance(module, Executor):
                continue
            for region in module._regions:
                if region.last_error is not None:
                    out[f"{path}/{region.id}" if path else region.id] = float(region.last_error)
        return out

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        # .to() / .double() / .cuda() change where and in what the weights live;
        # the regions' compute dtype must follow them
        result = super()._apply(fn, *args, **kwargs)
        for p in self.parameters():
            if p.is_floating_point():
                self._root.dtype, self._root.device = p.dtype, p.device
                break
        else:  # no weights to follow (a Squeeze and a Permute alone): what fn makes of a tensor
            probe = fn(torch.empty(0, dtype=self._root.dtype, device=self._root.device))
            if isinstance(probe, torch.Tensor) and probe.is_floating_point():
                self._root.dtype, self._root.device = probe.dtype, probe.device
        return result

    @torch.no_grad()
    def measure_inversion(self, *inputs: torch.Tensor) -> dict[str, float]:
        """Runs the model forward and each region forward-then-inverse on this batch (on demand),
        checked as forward checks it."""
        self._check_inputs(inputs)
        env: dict[str, torch.Tensor] = {}
        for inp in self._plan.inputs:
            env[inp.output] = inputs[inp.index]
        out: dict[str, float] = {}
        regions = iter(self._regions)
        for op, call in zip([o for o in self._plan.ops if isinstance(o, (NodeOp, RegionOp))], self._program):
            if isinstance(op, RegionOp):
                region = next(regions)
                out[region.id] = region.inversion_error([env[v] for v in op.inputs], self.dtype,
                                                        self._root.stream_for(self.dtype))
            call(env)
        return out


def compile(graph: Graph, mode: str = "reversible", device: Any = None,
            dtype: torch.dtype | None = None, report: Any = None,
            memory_budget: float | str | None = None) -> CompiledModel:
    """Compile ``graph`` (an ``rs.Graph``) into an ``nn.Module``; returns a :class:`CompiledModel`
    (``revstudio.compile``): ``model(*inputs)`` takes one tensor per Input node and returns one per
    Output node (a tuple when there are several), ``model.mode``, ``model.regions``.

    ``mode``: "reversible", "standard" or "checkpoint" (``model.mode`` switches later, same
    weights). Parameters exist right away (sizes come from shape inference); ``device``
    defaults to CUDA when available, else CPU. ``dtype`` defaults to the number type
    the Input nodes declare (float64 when any of them does, else float32), as
    ``revstudio train`` and exported code pick it. ``memory_budget``: bytes of
    activations reversible regions may keep, or an amount such as ``"64MiB"`` (see
    ``CompiledModel.memory_budget``). ``report``: ``rs.check(graph)``'s, to skip checking again
    (one of the graph before an edit is refused).
    Raises :class:`CompileError` naming the node if the graph does not check clean, and for a
    graph with no Output node (its model would return an empty tuple).
    """
    expect_graph(graph, "rs.compile")
    if not any(node.type == "Output" for node in graph):
        raise CompileError(f"{graph.name}: the graph has no Output node, so the model would return nothing; "
                           "add an Output node after the layer whose result the model returns")
    return build(graph, mode, device, dtype, report, memory_budget)


def build(graph: Graph, mode: str = "reversible", device: Any = None, dtype: torch.dtype | None = None,
          report: Any = None, memory_budget: float | str | None = None) -> CompiledModel:
    """:func:`compile` for the code exporter, which writes the code of any checked graph, one
    with no Output node too (the editor's Code tab shows a project as it is being drawn)."""
    if mode not in MODES:
        raise CompileError(f"mode {mode!r} is not known; use one of {', '.join(MODES)}")
    if dtype is None:
        from revstudio.diagnostics.estimate import input_dtype

        dtype = torch.float64 if input_dtype(graph) == "float64" else torch.float32
    if dtype not in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        raise CompileError(f"dtype {dtype!r} is not supported; use torch.float32 or torch.float64 (or "
                           "torch.float16 / torch.bfloat16): a torch.dtype, not its name")
    dev = resolve_device(device)
    if report is None:
        from revstudio.core.check import check

        report = check(graph)
    else:
        check_report(graph, report)
    plan = lower(graph, report)
    model = CompiledModel(graph, plan, dev, dtype, mode)
    root = model._root
    if plan.regions.regions:  # what a memory budget pays for keeping each step's activations
        root.prices = Prices(graph, report, plan, str(dtype).rpartition(".")[2])
        root.step_costs, root.cut_refunds, root.cut_fixed = root.prices(1)
    model.memory_budget = memory_budget
    return model
