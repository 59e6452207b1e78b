"""The live-tensor tracker: exact accounting of the tensor storages alive on any device.

:func:`LiveTensorTracker` is a context manager: a ``TorchDispatchMode`` sees every op's
outputs (including tensors autograd keeps on its graph or on a Function's ``ctx``) and a
finalizer on each storage reports its release. With ``explain`` it also remembers which
tensors made up the peak (:class:`LiveTensor`). ``memory.measure_step`` uses it on the CPU,
where there is no allocator to ask.
"""
from __future__ import annotations

import os
import sys
import weakref
from types import FrameType
from typing import Any, TypedDict


class LiveTensor(TypedDict):
    """One storage alive at the peak: what a user needs to find where memory goes."""

    bytes: int
    dtype: str
    shape: list[int]
    op: str        # the op that allocated it, e.g. "aten.convolution"
    grad_fn: str   # the autograd node running when it was allocated ("" outside backward ops)
    where: str     # the innermost Python frame outside torch, "revstudio/x.py:12 fn"
    module: str    # the innermost named module running (a node id in a compiled graph), or ""


# Frames that may run a named layer or a reversible region, and what names them: a
# module of the measured model (a node id in a compiled graph) or a region (its id).
_RUNNERS = frozenset({"forward", "backward", "run", "__call__", "_checkpointed"})


def _owner_name(local: dict[str, Any], modules: dict[int, str]) -> str:
    owner = local.get("self")
    if owner is not None and id(owner) in modules:
        return modules[id(owner)]
    region = local.get("region", owner)
    rid = getattr(region, "id", None)
    if isinstance(rid, str) and hasattr(region, "steps"):
        return rid if rid.startswith("region") else f"region {rid}"
    return ""


def _locals(frame: FrameType) -> dict[str, Any]:
    """The ``self`` and ``region`` locals of a running frame, without keeping its other locals
    alive: before Python 3.13 ``frame.f_locals`` is a snapshot the frame holds until it is read
    again, and this walk stops at the innermost named module, so an outer frame's snapshot
    (a region's backward) held tensors it had deleted to the end of the step (``memory --top``
    listed a peak 13 % above the one measured without it)."""
    local = frame.f_locals
    found: dict[str, Any] = {k: local[k] for k in ("self", "region") if k in local}
    if type(local) is dict and sys.version_info < (3, 13):  # (3.13's is a live view: nothing held)
        local.clear()  # the next read of the frame's locals fills it again
    return found


_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))


def _frozen_folder() -> str | None:
    """The frozen app's folder of modules (PyInstaller's ``sys._MEIPASS``, ending in a separator), where
    every module's code names its file relative to it (``revstudio/cli.py``, ``torch/nn/modules/module.py``,
    ``contextlib.py``); None in a Python install, where those names are absolute."""
    folder = getattr(sys, "_MEIPASS", None) if getattr(sys, "frozen", False) else None
    return os.path.join(os.path.abspath(folder), "") if folder else None


def _code_file(name: str, app: str | None) -> str:
    """A frame's file as an absolute path (the frozen app's relative names joined to its folder)."""
    if app and name and not name.startswith("<") and not os.path.isabs(name):
        return app + name
    return name


def _in_stdlib(name: str, stdlib_dir: str, app: str | None) -> bool:
    """Whether ``name`` is the standard library's: the frozen app keeps it in the one folder with
    everything else, so there its first part names it (``contextlib.py``, ``json/decoder.py``)."""
    if app and name.startswith(app):
        top = name[len(app):].split(os.sep, 1)[0]
        return (top[:-3] if top.endswith(".py") else top) in _STDLIB
    return name.startswith(stdlib_dir) and "-packages" not in name


def _tracker_class() -> type:
    # Built lazily: this module is imported by torch-free code paths (the CLI
    # parser), and TorchDispatchMode needs torch at class-creation time.
    global _TRACKER
    if _TRACKER is not None:
        return _TRACKER
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    torch_dir = os.path.dirname(torch.__file__) + os.sep
    stdlib_dir = os.path.dirname(os.__file__) + os.sep
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
    # the measuring harness (this module, ``memory``'s step, the CLI commands) is never where memory goes
    app = _frozen_folder()
    here = os.path.dirname(os.path.abspath(__file__))
    harness = (os.path.abspath(__file__), os.path.join(here, "memory.py"),
               os.path.join(package_root, "revstudio", "clicmd") + os.sep,
               os.path.join(package_root, "revstudio", "cli.py"), os.path.join(package_root, "revstudio", "__main__.py"))

    def where(modules: dict[int, str]) -> tuple[str, str]:
        """The innermost caller outside torch, the standard library and the harness, and
        the innermost named module (or reversible region) that is running."""
        frame: FrameType | None = sys._getframe(3)
        place, module = "", ""
        while frame is not None and not (place and module):
            code = frame.f_code
            name = _code_file(code.co_filename, app)
            if not module and code.co_name in _RUNNERS:
                module = _owner_name(_locals(frame), modules)
            library = name.startswith(torch_dir) or _in_stdlib(name, stdlib_dir, app)
            if not place and not library and not name.startswith(harness) and not name.startswith("<"):
                shown = name[len(package_root):] if name.startswith(package_root) else os.path.basename(name)
                place = f"{shown}:{frame.f_lineno} {code.co_name}"
            frame = frame.f_back
        return place, module

    class _Tracker(TorchDispatchMode):
        """Counts the bytes of storages allocated while active, each once."""

        def __init__(self) -> None:
            super().__init__()
            # id(storage) -> (weak ref, bytes when first seen, description or None).
            # Weak, so the tracker never extends a tensor's life.
            self._live: dict[int, tuple[weakref.ref, int, Any]] = {}
            # Storages that existed before (weights, inputs): never counted.
            self._external: dict[int, weakref.ref] = {}
            self.current_bytes = 0
            self.peak_bytes = 0
            self.allocations = 0
            self.phase = ""  # set by the caller ("forward", "backward"); recorded with the peak
            self._finalizers: list[weakref.finalize] = []
            self._explain = False
            self._peak_pending = False  # a new peak whose tensors are not yet listed
            self._peak_live: list[tuple[int, Any]] = []
            self._peak_phase = ""
            # id(module) -> its name in the measured model: says which layer allocated what
            self.module_names: dict[int, str] = {}

        # -- accounting -----------------------------------------------------
        def _storage(self, t: Any) -> Any:
            if not isinstance(t, torch.Tensor) or t.device.type == "meta" or t.is_sparse:
                return None
            try:
                return t.untyped_storage()
            except (RuntimeError, NotImplementedError):  # tensor subclasses without storage
                return None

        def _forget(self, key: int, table: dict) -> None:
            if table is self._live and self._peak_pending:
                # the first release after a new peak: the live set is still the peak's
                self._snapshot()
            entry = table.pop(key, None)
            if entry is not None and table is self._live:
                self.current_bytes -= entry[1]

        def _note_external(self, storage: Any) -> None:
            key = id(storage)
            if key in self._live or key in self._external:
                return
            self._external[key] = weakref.ref(storage)
            self._finalizers.append(weakref.finalize(storage, self._forget, key, self._external))

        def _note_output(self, storage: Any, func: Any, leaf: Any) -> bool:
            key = id(storage)
            if key in self._live or key in self._external:
                return False  # a view or an in-place result: no new memory
            nbytes = int(storage.nbytes())
            info = self._describe(func, leaf) if self._explain else None
            self._live[key] = (weakref.ref(storage), nbytes, info)
            self._finalizers.append(weakref.finalize(storage, self._forget, key, self._live))
            self.current_bytes += nbytes
            self.allocations += 1
            return True

        def _describe(self, func: Any, leaf: Any) -> tuple[str, tuple[int, ...], str, str, str, str]:
            node = torch._C._current_autograd_node()
            place, module = where(self.module_names)
            return (str(leaf.dtype).replace("torch.", ""), tuple(leaf.shape), str(func.overloadpacket),
                    node.name() if node is not None else "", place, module)

        def _entry_bytes(self, entry: tuple[weakref.ref, int, Any]) -> int:
            return entry[1]  # kept current by ``resized`` when sizes may change

        def recount(self) -> int:
            """Exact live bytes now (a storage shrunk with ``resize_`` counts at its new size)."""
            return sum(self._entry_bytes(e) for e in list(self._live.values()))

        def resized(self, storage: Any) -> None:
            """A storage changed size in place (``resize_(0)`` frees an activation while its
            tensor lives on): count it at its new size. Called for that one storage, so a
            step costs what it allocates, not allocations x live storages."""
            key = id(storage)
            entry = self._live.get(key)
            alive = entry[0]() if entry is not None else None
            if entry is None or alive is None or alive is not storage:
                return
            if self._peak_pending:  # the live set is still the peak's: list it first
                self._snapshot()
            nbytes = int(alive.nbytes())
            self._live[key] = (entry[0], nbytes, entry[2])
            self.current_bytes += nbytes - entry[1]

        def _snapshot(self) -> None:
            self._peak_pending = False
            self._peak_phase = self.phase
            self._peak_live = [(self._entry_bytes(e), e[2]) for e in list(self._live.values())]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            for leaf in tree_leaves((args, kwargs)):
                storage = self._storage(leaf)
                if storage is not None:
                    self._note_external(storage)
            out = func(*args, **kwargs)
            grew = False
            for leaf in tree_leaves(out):
                storage = self._storage(leaf)
                if storage is not None:
                    if self._note_output(storage, func, leaf):
                        grew = True
                    elif self._shrinkable:  # an in-place op (aten.resize_, set_) may resize it
                        self.resized(storage)
            if grew:
                if self.current_bytes > self.peak_bytes:
                    self.peak_bytes = self.current_bytes
                    if self._explain:
                        # a storage shrunk in place frees no finalizer: list the peak now;
                        # otherwise wait for the first release (far cheaper while memory grows)
                        if self._shrinkable:
                            self._snapshot()
                        else:
                            self._peak_pending = True
            return out

        _shrinkable = False

        def live_bytes(self) -> int:
            return self.current_bytes

        def __enter__(self) -> Any:
            if self._shrinkable:
                _watch_resizes(self)
            return super().__enter__()

        def reset_peak(self) -> None:
            self.peak_bytes = self.live_bytes()
            if self._explain:
                self._snapshot()

        def peak_tensors(self) -> list[LiveTensor]:
            """The storages alive at the peak, largest first (needs ``explain``)."""
            if not self._explain:
                raise RuntimeError("create the tracker with explain=True to list the tensors at the peak")
            if self._peak_pending:
                self._snapshot()
            out = [LiveTensor(bytes=n, dtype=info[0], shape=list(info[1]), op=info[2], grad_fn=info[3],
                              where=info[4], module=info[5]) for n, info in self._peak_live if n > 0]
            out.sort(key=lambda t: -t["bytes"])
            return out

        @property
        def peak_phase(self) -> str:
            """What the caller was doing (``phase``) when the peak was reached."""
            if self._peak_pending:
                return self.phase
            return self._peak_phase

        def __exit__(self, *exc: Any) -> Any:
            if self._peak_pending:
                self._snapshot()
            # Finalizers on long-lived storages (weights) would otherwise pile up
            # in the global registry across measurements.
            for fin in self._finalizers:
                fin.detach()
            self._finalizers.clear()
            if self._shrinkable:
                _unwatch_resizes(self)
            return super().__exit__(*exc)

    _TRACKER = _Tracker
    return _Tracker


_TRACKER: type | None = None
_WATCHERS: list[Any] = []  # exact trackers told of every UntypedStorage.resize_ while active


def _watch_resizes(tracker: Any) -> None:
    """``UntypedStorage.resize_`` is no dispatched op: while an exact tracker is active it is
    wrapped, so the tracker hears of each storage resized (MemCNN's and our runtime's frees)."""
    import torch

    if not _WATCHERS:
        original = torch.UntypedStorage.resize_

        def resize_(storage: Any, size: int) -> Any:
            out = original(storage, size)
            for watcher in list(_WATCHERS):
                watcher.resized(storage)
            return out

        resize_.original = original  # type: ignore[attr-defined]
        resize_.own = "resize_" in vars(torch.UntypedStorage)  # type: ignore[attr-defined]  # (not inherited)
        torch.UntypedStorage.resize_ = resize_  # type: ignore[method-assign, assignment]
    _WATCHERS.append(tracker)


def _unwatch_resizes(tracker: Any) -> None:
    import torch

    if tracker in _WATCHERS:
        _WATCHERS.remove(tracker)
    wrapped: Any = torch.UntypedStorage.resize_
    if not _WATCHERS and hasattr(wrapped, "original"):
        if wrapped.own:  # a torch that defines it on UntypedStorage itself: put that one back
            torch.UntypedStorage.resize_ = wrapped.original  # type: ignore[method-assign]
        else:
            del torch.UntypedStorage.resize_  # back to the inherited method


def LiveTensorTracker(exact_resizes: bool = False, explain: bool = False) -> Any:
    """A context manager counting live bytes of tensors created inside it (CPU or any device).

    ``tracker.current_bytes`` / ``tracker.live_bytes()`` are the bytes alive
    now, ``tracker.peak_bytes`` the most alive at once (after any op).
    Storages that existed before entering (weights, inputs, a view of them)
    are never counted. With ``exact_resizes`` a storage resized in place (``resize_(0)``,
    how reversible runtimes free activations: ``UntypedStorage.resize_`` is watched while
    the tracker is active, and in-place ops' outputs are re-read) counts at its new size. With ``explain`` every
    allocation records its op, dtype, shape and caller, and
    ``tracker.peak_tensors()`` lists what was alive at the peak (their bytes
    add up to ``peak_bytes``); ``tracker.phase = "backward"`` labels the peak.
    """
    tracker = _tracker_class()()
    tracker._shrinkable = exact_resizes
    tracker._explain = explain
    return tracker
