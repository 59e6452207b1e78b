"""Node specifications: each node type is declared once, as a :class:`NodeSpec`.

The palette, inspector, shape inference, validation, compiler and code
generator all read the same declaration. The registry maps stable type ids
(and legacy ids, so renamed types keep loading) to specs. Specs hold
callables: ``infer`` (shapes), ``count_params`` and ``build`` (torch module,
imported lazily inside the function so the core never imports torch). The
registry fills itself from the ``revstudio.nodes`` entry points (``plugins``):
the core never imports the catalog, it is a plugin like any other.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from .params import Param

if TYPE_CHECKING:  # pragma: no cover
    from .graph import Graph
    from .plugins import Provider

ShapeT = tuple[int, ...]
Groups = Mapping[str, "Graph"]
PortsRule = Union[Sequence[str], Callable[[Mapping[str, Any], Groups], Sequence[str]]]


class ShapeError(Exception):
    """Raised by ``infer`` when inputs do not fit; names the port if it can."""

    def __init__(self, message: str, port: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.port = port


@dataclass
class InferContext:
    """What a spec's ``infer``/``count_params`` sees of one node."""

    node_id: str
    params: Mapping[str, Any]
    inputs: Mapping[str, ShapeT | None]
    groups: Groups = field(default_factory=dict)
    # Infers a group body given shapes for its GroupInput ports; returns output
    # shapes by GroupOutput port and the body's parameter count. Set by the
    # shape pass so Group/Repeat/coupling specs can look inside.
    infer_group: Callable[[str, Mapping[str, ShapeT]], GroupShapes] | None = None

    def input(self, port: str = "in") -> ShapeT:
        shape = self.inputs.get(port)
        if shape is None:
            raise ShapeError(f"input {port!r} has no known shape; connect it", port=port)
        return shape


@dataclass
class GroupShapes:
    """Result of inferring a group body."""

    outputs: dict[str, ShapeT]
    parameters: int


@dataclass
class BuildContext:
    """What a spec's ``build`` sees: resolved params and inferred shapes.

    ``build`` returns an ``nn.Module`` whose ``forward(*inputs)`` takes the
    input tensors in input-port order (batch first) and returns a tuple of
    outputs in output-port order. Invertible types also define
    ``inverse(*outputs) -> tuple`` returning the inputs.
    """

    node_id: str
    params: Mapping[str, Any]
    in_shapes: Sequence[ShapeT]
    out_shapes: Sequence[ShapeT]
    groups: Groups = field(default_factory=dict)
    # Builds a group body into a module (set by the compiler).
    build_group: Callable[[str], Any] | None = None


def _ports(rule: PortsRule, params: Mapping[str, Any], groups: Groups) -> tuple[str, ...]:
    if callable(rule):
        return tuple(rule(params, groups))
    return tuple(rule)


def numbered(prefix: str, count: int) -> tuple[str, ...]:
    """``in0, in1, ...``: the names of variadic ports."""
    return tuple(f"{prefix}{i}" for i in range(count))


@dataclass(frozen=True)
class SavedTensors:
    """What a layer's backward keeps while its step is alive (``NodeSpec.saved_for_backward``).

    ``ports`` names the input and output ports whose tensors the backward reads (a
    convolution's input, a ReLU's result); the counts are elements per sample of tensors the
    layer makes for itself: ``values`` at the layer's dtype (an exp, a tanh), ``flags`` one
    byte each (a bool mask), ``indices`` eight bytes each (argmax positions). Weights and
    anything whose size does not grow with the batch are left out.

    The rest are what the layer holds for a moment, in elements per sample at its dtype and one
    byte each: ``forward_values``/``forward_flags`` at its forward's peak, beside its outputs and
    what it keeps (``a * w0 + b * w1`` holds both products as it adds them: two outputs' worth);
    ``backward_values``/``backward_flags`` at its backward's peak, beyond what it keeps, its
    outputs' gradients and the gradients it hands its inputs and weights, as it runs inside a
    graph, where its outputs' gradients go once it has used them (a weight's gradient built as
    ``grad * x`` before it is summed: one output's worth; zero where it frees as much as it makes;
    negative, exactly as measured, where it frees kept tensors before it makes the last of its
    inputs' gradients: a product of three, ``(a * b) * c``, frees ``a * b``). ``tests/nodes/test_saved_for_backward.py`` measures both.

    ``rerun_values`` is, for an invertible layer, what ``values`` becomes where a reversible
    region reruns its forward on the input its ``inverse`` rebuilt: an einsum that keeps a
    channels-first copy of its input keeps none when its inverse rebuilt the input in that very
    order (a view of the rebuilt buffer); None: the same as ``values``. ``inverse_dense``: whether
    its ``inverse`` hands back its inputs as dense buffers (contiguous or channels-last) from a
    batch of two on; False where they are views in another axis order (an einsum's product, as
    ``einsum("oc,bohw->bchw", w, y)``): the region's updates before it then make new buffers.
    """

    ports: tuple[str, ...] = ()
    # of ``ports``, the outputs whose tensor only that output's own backward keeps (``relu(-x)``
    # keeping its result, made by ops no other output comes from): where nothing reads such an
    # output, autograd frees that backward with it, and nothing of it is kept. Leave out an output
    # one autograd node makes beside another (a custom ``autograd.Function`` returning both), or
    # one that is a view of another output.
    freed_unread: tuple[str, ...] = ()
    values: int = 0
    flags: int = 0
    indices: int = 0
    forward_values: int = 0
    forward_flags: int = 0
    backward_values: int = 0
    backward_flags: int = 0
    rerun_values: int | None = None
    inverse_dense: bool = True

    def problem(self) -> str | None:
        """What makes this declaration unusable (a count that is not a whole number, >= 0 but for
        ``backward_*``, which may be negative: what the backward frees; a port that is not a
        name), said for the plugin's author; None when it is fine."""
        for name in ("ports", "freed_unread"):
            ports = getattr(self, name)
            if not isinstance(ports, (tuple, list)) or not all(isinstance(p, str) for p in ports):
                return f"{name}={ports!r}: it must be a tuple of port names"
        for name in COUNTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value != int(value):
                return f"{name}={value!r}: each count must be a whole number of elements per sample"
            if value < 0 and name not in FREEING_COUNTS:
                return f"{name}={value!r}: this count must be 0 or more (only backward_* may be negative)"
        rerun = self.rerun_values
        if rerun is not None and (isinstance(rerun, bool) or not isinstance(rerun, (int, float))
                                  or not math.isfinite(rerun) or rerun != int(rerun) or rerun < 0):
            return f"rerun_values={rerun!r}: it must be None or a whole number of elements per sample, 0 or more"
        if not isinstance(self.inverse_dense, bool):
            return f"inverse_dense={self.inverse_dense!r}: it must be True or False"
        return None

    def extra_bytes(self, batch: int, element_bytes: int) -> int:
        """Bytes of the layer's own kept tensors for ``batch`` samples."""
        return batch * (self.values * element_bytes + self.flags + 8 * self.indices)

    def rerun_bytes(self, batch: int, element_bytes: int) -> int:
        """Bytes of its own kept tensors where a reversible region reruns it on what its inverse
        rebuilt (``rerun_values``, else ``values``), with its flags and indices."""
        values = self.values if self.rerun_values is None else self.rerun_values
        return batch * (int(values) * element_bytes + self.flags + 8 * self.indices)

    def forward_bytes(self, batch: int, element_bytes: int) -> int:
        """Bytes the forward holds for a moment beside the outputs, for ``batch`` samples."""
        return batch * (self.forward_values * element_bytes + self.forward_flags)

    def backward_bytes(self, batch: int, element_bytes: int) -> int:
        """Bytes the backward holds at once beside the gradients, for ``batch`` samples."""
        return batch * (self.backward_values * element_bytes + self.backward_flags)


COUNTS = ("values", "flags", "indices", "forward_values", "forward_flags", "backward_values", "backward_flags")
FREEING_COUNTS = ("backward_values", "backward_flags")  # a backward may free more than it makes


SavedRule = Callable[[Mapping[str, Any], Sequence[ShapeT], Sequence[ShapeT]], "SavedTensors | Sequence[str]"]


@dataclass(frozen=True)
class NodeSpec:
    """The one declaration of a node type."""

    type_id: str
    category: str
    help: str
    params: Mapping[str, Param]
    inputs: PortsRule
    outputs: PortsRule
    infer: Callable[[InferContext], dict[str, ShapeT]]
    count_params: Callable[[InferContext], int] | None = None
    build: Callable[[BuildContext], Any] | None = None
    invertible: bool = False
    key_params: tuple[str, ...] = ()
    legacy_ids: tuple[str, ...] = ()
    title: str = ""
    # Sample (params, input shapes) the catalog's tests build the type with: a
    # plugin's types run through the same shape, gradient and inverse checks.
    examples: tuple[tuple[Mapping[str, Any], tuple[ShapeT, ...]], ...] = ()
    # Whether its (first) output is memory of its own that its backward does not
    # read (a convolution's; not a ReLU's, whose backward reads its result, nor a
    # view of its input), given its params and input shapes: the reversible
    # backward may then write over it when it ends a coupling's F
    # (runtime_streams.sole decides at run time, the memory estimate counts by
    # this). None: the output is its input passed through (an identity), so the
    # node before it decides. Undeclared (a plugin's type): False.
    fresh_output: bool | Callable[[Mapping[str, Any], Sequence[ShapeT]], bool | None] | None = False
    # It only moves values around (a Split, Reshape or Permute): no arithmetic, so a checkpoint
    # segment does not weigh it and a reversible region of such steps alone saves nothing.
    layout_only: bool = False
    # The computing steps the reversible runtime makes of it (an AdditiveCoupling: F, then G);
    # checkpoint mode cuts a region into segments by these (compiler.checkpointing).
    runtime_steps: int = 1
    # Whether autograd never keeps its output, given its params: a region input it made and
    # nothing else reads may be released after forward and rebuilt in backward. Not an
    # activation's (it keeps its result, and a rebuilt value equal only to rounding could flip a
    # ReLU's mask), nor an output that is its input itself. Undeclared (a plugin's type): False.
    releasable_output: bool | Callable[[Mapping[str, Any]], bool] = False
    # What its backward keeps (``SavedTensors``, or just the ports whose tensors it reads),
    # or a function (params, input shapes, output shapes) -> either: the memory estimate counts
    # by it. () for a reshape or an addition, ("in",) for a convolution, ("out",) for a ReLU.
    # Undeclared (None, a plugin's type by default): nothing for a ``layout_only`` type,
    # otherwise every input is assumed kept and the estimate marks the node approximate.
    saved_for_backward: SavedTensors | Sequence[str] | SavedRule | None = None
    # The user's reference (``core.node_reference``: ``revstudio nodes``, docs/nodes.md, the palette
    # and inspector): the shape rule in words (which axis is which, what the output is), and what
    # its backward keeps in words (empty: said from ``saved_for_backward``).
    shape_rule: str = ""
    memory_note: str = ""
    # How it reads an input of a given shape, in words (``64 steps of 8 features (time is the last
    # axis)``; None: a shape it cannot read): the inspector and ``revstudio check`` show it.
    reading: Callable[[ShapeT | None], str | None] | None = None

    def input_ports(self, params: Mapping[str, Any], groups: Groups | None = None) -> tuple[str, ...]:
        return _ports(self.inputs, params, groups or {})

    def output_ports(self, params: Mapping[str, Any], groups: Groups | None = None) -> tuple[str, ...]:
        return _ports(self.outputs, params, groups or {})

    def defaults(self) -> dict[str, Any]:
        return {name: p.default for name, p in self.params.items()}

    def output_is_fresh(self, params: Mapping[str, Any], in_shapes: Sequence[ShapeT]) -> bool | None:
        rule = self.fresh_output
        return rule(params, in_shapes) if callable(rule) else rule

    def output_releasable(self, params: Mapping[str, Any]) -> bool:
        rule = self.releasable_output
        return bool(rule(params)) if callable(rule) else rule

    def saves_for_backward(self, params: Mapping[str, Any], in_shapes: Sequence[ShapeT],
                           out_shapes: Sequence[ShapeT]) -> SavedTensors | None:
        """What the backward keeps, as declared (None: undeclared); a type that only moves values
        around (``layout_only``) keeps nothing unless it says otherwise."""
        rule = self.saved_for_backward
        if rule is None and self.layout_only:
            return SavedTensors()
        saved = rule(params, in_shapes, out_shapes) if callable(rule) else rule
        if saved is None or isinstance(saved, SavedTensors):
            return saved
        return SavedTensors(ports=(saved,) if isinstance(saved, str) else tuple(saved))

    def reads(self, shape: ShapeT | None) -> str | None:
        """How it reads an input of ``shape``, in words (None: nothing to say, or a plugin's rule that
        fails: its words are a help, never a reason for a report or the inspector to stop)."""
        if self.reading is None:
            return None
        try:
            words = self.reading(shape)
        except Exception:
            return None
        return words if isinstance(words, str) and words else None

    @property
    def display_name(self) -> str:
        return self.title or self.type_id


class UnknownNodeType(KeyError):
    def __init__(self, type_id: str) -> None:
        super().__init__(type_id)
        self.type_id = type_id

    def __str__(self) -> str:
        return f"unknown node type {self.type_id!r}"


class Registry:
    """Type id -> spec, with legacy ids mapped to their current spec.

    Filled on first use from the ``revstudio.nodes`` entry points (``plugins``):
    the built-in catalog and every installed plugin, each type with its provider.
    """

    def __init__(self) -> None:
        self._specs: dict[str, NodeSpec] = {}
        self._legacy: dict[str, str] = {}
        self._providers: dict[str, Provider] = {}
        self._found: dict[str, Provider] = {}  # distribution -> plugin, whatever it declared
        self._loaded = False
        self._loading = False

    def register(self, spec: NodeSpec, provider: Provider | None = None) -> NodeSpec:
        if spec.type_id in self._specs:
            raise ValueError(f"node type {spec.type_id!r} is declared twice")
        self._specs[spec.type_id] = spec
        for old in spec.legacy_ids:
            self._legacy[old] = spec.type_id
        if provider is not None:
            self._providers[spec.type_id] = provider
        return spec

    def note_provider(self, provider: Provider) -> None:
        """Remember a plugin that was found, even if it declares no type (all skipped, or none)."""
        if provider.distribution:
            self._found.setdefault(provider.distribution, provider)

    def found(self) -> list[Provider]:
        """Every plugin package found (one entry point each), whether or not any of its types loaded."""
        self._ensure_loaded()
        return list(self._found.values())

    def installed(self, distribution: str) -> tuple[Provider | None, list[str]]:
        """The plugin package ``distribution`` as loaded here (None: not installed) and the type
        ids it provides, in declaration order."""
        self._ensure_loaded()
        types = [t for t, p in self._providers.items() if p.distribution == distribution]
        found = self._providers[types[0]] if types else self._found.get(distribution)
        return found, types

    def declares(self, type_id: str) -> bool:
        """Whether ``type_id`` is taken, as a current or a legacy id (no loading)."""
        return type_id in self._specs or type_id in self._legacy

    def provider(self, type_id: str) -> Provider | None:
        """Which installed package declares ``type_id`` (None: unknown, or registered by hand)."""
        self._ensure_loaded()
        return self._providers.get(self._legacy.get(type_id, type_id))

    def _ensure_loaded(self) -> None:
        """Load the entry points on first use (``revstudio.core`` never imports the catalog itself)."""
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            from .plugins import load_into

            load_into(self)
            self._loaded = True
        finally:
            self._loading = False

    def get(self, type_id: str) -> NodeSpec:
        self._ensure_loaded()
        spec = self._specs.get(type_id) or self._specs.get(self._legacy.get(type_id, ""))
        if spec is None:
            raise UnknownNodeType(type_id)
        return spec

    def find(self, type_id: str) -> NodeSpec | None:
        try:
            return self.get(type_id)
        except UnknownNodeType:
            return None

    def canonical(self, type_id: str) -> str:
        return self.get(type_id).type_id

    def __contains__(self, type_id: object) -> bool:
        return isinstance(type_id, str) and self.find(type_id) is not None

    def __iter__(self) -> Iterator[NodeSpec]:
        self._ensure_loaded()
        return iter(list(self._specs.values()))

    def categories(self) -> dict[str, list[NodeSpec]]:
        out: dict[str, list[NodeSpec]] = {}
        for spec in self:
            out.setdefault(spec.category, []).append(spec)
        return out


registry = Registry()


def register(spec: NodeSpec) -> NodeSpec:
    return registry.register(spec)


def get_spec(type_id: str) -> NodeSpec:
    return registry.get(type_id)
