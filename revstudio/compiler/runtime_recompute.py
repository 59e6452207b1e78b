"""What a recomputation in backward must see as its forward saw it.

Backward rebuilds activations by running layers again: reversible regions (the
region Function) and torch checkpointing alike. That second run must draw the
same random numbers (:class:`RngState`), leave BatchNorm statistics alone
(:func:`frozen_batch_stats`, :class:`RecomputeGuard`), run each layer in the
train/eval state of the forward (:class:`TrainedAs`) and with the weights and
buffers the forward ran with (:class:`StateAs`), whatever the caller changed in
between. Imports only torch and the standard library: the code exporter inlines it.
"""
import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch import nn

Tensor = torch.Tensor


def _owners(modules: Sequence[nn.Module]) -> list[nn.Module]:
    """Every module in these trees, once (the structure is fixed after building, so a step
    walks it once; the parameters themselves are read fresh on every call)."""
    seen: set[int] = set()
    out: list[nn.Module] = []
    for root in modules:
        for m in root.modules():
            if id(m) not in seen:
                seen.add(id(m))
                out.append(m)
    return out


@contextlib.contextmanager
def frozen_batch_stats(modules: Sequence[nn.Module]) -> Iterator[None]:
    """Recomputation must not update BatchNorm running statistics a second time.

    With ``track_running_stats`` off, a training-mode BatchNorm normalises with
    the batch statistics exactly as before but leaves its buffers alone.
    """
    touched = []
    for root in modules:
        for m in root.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training and m.track_running_stats:
                m.track_running_stats = False
                touched.append(m)
    try:
        yield
    finally:
        for m in touched:
            m.track_running_stats = True


class TrainedAs:
    """A context that puts ``modules`` back in the train/eval state ``flags`` noted (one per
    module) and, on exit, in the one it found: a recomputation must run every layer as the
    forward ran it, even after ``model.eval()`` between forward and backward (BatchNorm
    would normalise with its running statistics, Dropout would drop nothing: silently other
    gradients). Only the ``training`` attribute of the modules that differ is touched."""

    __slots__ = ("flags", "flipped", "modules")

    def __init__(self, modules: Sequence[nn.Module], flags: Sequence[bool]) -> None:
        self.modules, self.flags = modules, flags
        self.flipped: list[nn.Module] = []

    def __enter__(self) -> None:
        self.flipped = [m for m, t in zip(self.modules, self.flags) if m.training != t]
        for m in self.flipped:
            m.training = not m.training

    def __exit__(self, *exc: object) -> None:
        for m in self.flipped:
            m.training = not m.training
        self.flipped = []


def state_slots(tree: Sequence[nn.Module]) -> list[tuple[dict[str, Any], str]]:
    """Where each weight and buffer of these modules lives: (its module's dict, its name)."""
    return [(d, k) for m in tree for d in (m._parameters, m._buffers) for k in d]


_ABSENT = object()


class StateAs:
    """A context that puts back, for a recomputation, the weights and buffers a forward ran
    with (``tensors``, one per slot of :func:`state_slots`) where the modules hold others
    now, and on exit what it found. ``torch.func.functional_call(model, weights, x)`` swaps
    weights in for the forward only; the recomputation in backward ran the model's own:
    other gradients, and none for the weights the forward used."""

    __slots__ = ("slots", "swapped", "tensors")

    def __init__(self, slots: Sequence[tuple[dict[str, Any], str]], tensors: Sequence[Any]) -> None:
        self.slots, self.tensors = slots, tensors
        self.swapped: list[tuple[dict[str, Any], str, Any]] = []

    def __enter__(self) -> None:
        for (d, k), t in zip(self.slots, self.tensors):
            now = d.get(k, _ABSENT)
            if now is not t:
                self.swapped.append((d, k, now))
                d[k] = t

    def __exit__(self, *exc: object) -> None:
        for d, k, now in reversed(self.swapped):
            if now is _ABSENT:
                d.pop(k, None)
            else:
                d[k] = now
        self.swapped = []


class RecomputeGuard:
    """The recompute context of torch checkpointing: the recomputation must see the weights
    the forward saw and must leave BatchNorm buffers as the forward left them.

    ``forward()`` is the forward context: on its exit the weights' version counters are
    noted; entering the guard itself (the recomputation, in backward) raises, as
    autograd does for a saved tensor, when one was modified in place since, instead of
    silently differentiating other weights. Re-entrant: torch enters it once per
    recomputation, and a second backward (``retain_graph=True``) or a double backward
    recomputes again with the same object, which a generator context manager refuses.
    """

    def __init__(self, modules: Sequence[nn.Module]) -> None:
        self.norms: list[Any] = [m for root in modules for m in root.modules()
                                 if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats]
        self.params = [p for root in modules for p in root.parameters()]
        self.versions: list[int] | None = None
        self._saved: list[list[list[Tensor]]] = []
        self.tree = _owners(modules)
        self.training: list[bool] | None = None  # each module's train/eval state in the forward
        self._trained: list[TrainedAs] = []
        self.slots = state_slots(self.tree)
        self.state: list[Any] | None = None  # the weights and buffers the forward ran with
        self._states: list[StateAs] = []

    @contextlib.contextmanager
    def forward(self) -> Iterator[None]:
        yield
        self.versions = [p._version for p in self.params]  # after the forward: its own edits count
        self.training = [m.training for m in self.tree]
        self.state = [d[k] for d, k in self.slots]

    def __enter__(self) -> None:
        if self.versions is not None:
            for p, version in zip(self.params, self.versions):
                if p._version != version:
                    raise RuntimeError(
                        "one of the variables needed for gradient computation has been modified by an "
                        f"inplace operation: a weight of shape {list(p.shape)} of a checkpointed part is at "
                        f"version {p._version}; expected version {version} instead. Call backward() before "
                        "changing weights in place (optimizer.step() after loss.backward())")
        self._saved.append([[m.running_mean.clone(), m.running_var.clone(), m.num_batches_tracked.clone()]
                            for m in self.norms])
        trained = TrainedAs(self.tree, self.training if self.training is not None else [m.training for m in self.tree])
        trained.__enter__()
        self._trained.append(trained)
        state = StateAs(self.slots, self.state if self.state is not None else [d[k] for d, k in self.slots])
        state.__enter__()
        self._states.append(state)

    def __exit__(self, *exc: object) -> None:
        self._states.pop().__exit__()
        self._trained.pop().__exit__()
        saved = self._saved.pop()
        with torch.no_grad():
            for m, (mean, var, count) in zip(self.norms, saved):
                m.running_mean.copy_(mean)
                m.running_var.copy_(var)
                m.num_batches_tracked.copy_(count)


def recompute_contexts(modules: Sequence[nn.Module]) -> tuple[contextlib.AbstractContextManager[None],
                                                              contextlib.AbstractContextManager[None]]:
    """``context_fn`` of torch.utils.checkpoint over ``modules`` (see :class:`RecomputeGuard`)."""
    guard = RecomputeGuard(modules)
    return guard.forward(), guard


def restored_batch_stats(modules: Sequence[nn.Module]) -> RecomputeGuard:
    """A context that restores BatchNorm buffers on exit (see :class:`RecomputeGuard`)."""
    return RecomputeGuard(modules)


class RngState:
    """The random state before a step ran, so its recomputation draws the same dropout masks."""

    def __init__(self, device: torch.device) -> None:
        self.cpu = torch.get_rng_state()
        self.device = device
        self.cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None

    @contextlib.contextmanager
    def replay(self) -> Iterator[None]:
        devices = [self.device] if self.cuda is not None else []
        with torch.random.fork_rng(devices=devices):
            torch.set_rng_state(self.cpu)
            if self.cuda is not None:
                torch.cuda.set_rng_state(self.cuda, self.device)
            yield
