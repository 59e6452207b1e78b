"""``rs.memory``: ``revstudio memory`` from Python, returning what ``memory --json`` prints.

The command's own measurement (:func:`revstudio.clicmd.memory.measured`): the same check, the same
refusals (raised as ValueError with its words), the same steps and figures; the object keeps the
JSON and prints the command's table.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from revstudio.core.notebook_repr import NotebookRepr

MODES = ("standard", "reversible", "checkpoint")


class MemoryReport(NotebookRepr):
    """The measured peak per mode beside the static estimate: ``modes[mode]["peak_bytes"]``,
    ``estimate["modes"][mode]["peak_bytes"]``, ``budget`` (with ``budget=``) and ``to_json()``, the
    object of ``revstudio memory --json``; its repr is the command's table."""

    def __init__(self, data: dict[str, Any], repeat: int, top: int) -> None:
        self._data = data
        self._repeat = repeat
        self._top = top
        self.modes: dict[str, dict[str, Any]] = data["modes"]
        self.estimate: dict[str, Any] = data["estimate"]
        self.budget: dict[str, Any] | None = data.get("budget")

    def peak(self, mode: str) -> int:
        """The measured peak bytes of one training step in ``mode``."""
        return int(self.modes[mode]["peak_bytes"])

    def estimated_peak(self, mode: str) -> int | None:
        """The static estimate's peak bytes in ``mode`` (None where there is none: bf16/fp16)."""
        value = self.estimate.get("modes", {}).get(mode, {}).get("peak_bytes")
        return value if isinstance(value, int) else None

    def to_json(self) -> dict[str, Any]:
        return self._data

    def __repr__(self) -> str:
        from revstudio.clicmd.memory import text

        return text(self._data, self._repeat, self._top)


class DepthSweep(NotebookRepr):
    """Memory against depth (``rs.memory(..., depth=[...])``): ``node`` (the Repeat node varied),
    ``depths``, ``rows`` (per depth its ``parameters``, ``network_digest`` and per mode the measured
    and estimated peak), ``bytes_per_block`` and ``to_json()``, the object of ``revstudio memory
    --depth ... --json``; its repr is the command's table."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.node: str = data["node"]
        self.depths: list[int] = data["depths"]
        self.rows: list[dict[str, Any]] = data["rows"]
        self.bytes_per_block: dict[str, dict[str, int | None]] = data["bytes_per_block"]

    def peaks(self, mode: str) -> list[int]:
        """The measured peak bytes of one training step in ``mode`` at each depth, in ``depths`` order."""
        return [int(row["modes"][mode]["peak_bytes"]) for row in self.rows]

    def growth(self, mode: str) -> int | None:
        """How many bytes ``mode``'s measured peak grows per added block (least squares; None with one depth)."""
        return self.bytes_per_block[mode]["measured"]

    def to_json(self) -> dict[str, Any]:
        return self._data

    def __repr__(self) -> str:
        from revstudio.clicmd.memory_depth import table

        return table(self._data)


def memory(graph: Any, batch: int = 8, modes: Sequence[str] = MODES, budget: float | str | None = None, *,
           device: str = "cpu", precision: str = "fp32", repeat: int | None = None, seed: int = 0,
           top: int = 0, depth: Sequence[int] | int | str | None = None,
           depth_node: str | None = None) -> MemoryReport | DepthSweep:
    """Measure one training step of ``graph`` in each of ``modes`` as ``revstudio memory`` does.

    ``graph``: an ``rs.Graph`` or a project file's path. ``batch`` (default 8), ``device`` ("cpu",
    "cuda", "auto", ...), ``precision``, ``repeat`` (timed steps per mode), ``seed`` and ``top`` (the
    largest tensors at each peak) are the command's flags; ``modes``: which of "standard",
    "reversible", "checkpoint" to measure (default all three); ``budget``: also run reversible mode
    under this memory budget (bytes, "64MiB", "unlimited"), which needs "standard" and
    "reversible" among ``modes``.

    ``depth`` (e.g. ``[1, 2, 4, 8]``): measure memory against depth as ``revstudio memory --depth``
    does, with the project's Repeat node (the only one, or ``depth_node``) running each many copies,
    and return a :class:`DepthSweep`; it measures every mode once per depth, so ``modes``, ``repeat``,
    ``top`` and ``budget`` are left out.

    Raises FileNotFoundError for a path that is not there and ValueError, with the command's
    message, for a bad value, a graph with errors or one too big for the machine.
    """
    from revstudio.cli import CliError
    from revstudio.clicmd import _runargs as flags
    from revstudio.clicmd.memory import _budget_arg, measured

    file, graph = _project(graph)
    if depth is not None or depth_node is not None:
        return _sweep(file, graph, batch, modes, budget, device, precision, repeat, seed, top, depth, depth_node)
    repeat = 5 if repeat is None else repeat
    chosen = _modes(modes, budget is not None)
    # each value read by the command's own parser of its flag: the same rules and words
    readers = {"batch": flags.positive_int, "repeat": flags.repeats, "seed": flags.seed, "top": flags.count,
               "budget": _budget_arg}
    values = {"batch": batch, "repeat": repeat, "seed": seed, "top": top, "budget": budget}
    read: dict[str, Any] = {}
    for name, value in values.items():
        if name == "budget" and (value is None or isinstance(value, float) and value == float("inf")):
            read[name] = value
            continue
        read[name] = _flag_value(name, value, readers[name])
    _precision(precision)
    batch, repeat, seed, top, limit = (read[k] for k in values)
    try:
        data = measured(file, batch, str(device), precision, repeat, seed, top, limit, chosen, graph=graph)
    except CliError as exc:
        raise ValueError(str(exc)) from None
    return MemoryReport(data, repeat, top)


def _flag_value(name: str, value: Any, reader: Any, who: str = "rs.memory") -> Any:
    """``value`` read by the command's own parser of its flag (the same rules and words); ValueError naming it
    (and the function, ``who``: rs.gradcheck reads its batch and seed so too)."""
    try:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise argparse.ArgumentTypeError(f"{value!r} is not a whole number")
        return reader(str(value))
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"{who}: {name}={value!r}: {exc}") from None


def _precision(precision: str) -> None:
    if precision not in ("fp32", "bf16", "fp16"):
        raise ValueError(f"rs.memory: precision={precision!r}: give one of fp32, bf16, fp16")


def _keyword(name: str, value: Any = None) -> str:
    """How ``rs.memory``'s refusals name an option: its keyword ('top=', "depth_node='blocks'")."""
    key = name.replace("-", "_")
    return f"{key}=" if value is None else f"{key}={value!r}"


def _sweep(file: str, graph: Any, batch: Any, modes: Sequence[str], budget: Any, device: str, precision: str,
           repeat: Any, seed: Any, top: Any, depth: Any, depth_node: str | None) -> DepthSweep:
    """``rs.memory(..., depth=...)``: the command's sweep (``memory_depth.sweep``), its refusals as ValueError."""
    from revstudio.cli import CliError
    from revstudio.clicmd import _runargs as flags
    from revstudio.clicmd.memory_depth import refuse_other_options, sweep
    from revstudio.diagnostics.depth_sweep import DepthError, parse_depths

    given = argparse.Namespace(depth=depth, depth_node=depth_node, top=top, budget=budget, repeat=repeat)
    try:
        refuse_other_options(given, _keyword)  # the command's refusal, naming the keywords
    except CliError as exc:
        raise ValueError(f"rs.memory: {exc}") from None
    if _modes(modes, False) != MODES:
        raise ValueError("rs.memory: depth= measures every mode at each depth; leave out modes=")
    values = (depth,) if isinstance(depth, (int, str)) else tuple(depth)
    try:
        if any(isinstance(v, bool) for v in values):
            raise DepthError("True/False is not a depth; give the Repeat's times, e.g. depth=[1, 2, 4, 8]")
        depths = parse_depths(",".join(str(v) for v in values))
    except DepthError as exc:
        raise ValueError(f"rs.memory: depth={depth!r}: {exc}") from None
    batch, seed = _flag_value("batch", batch, flags.positive_int), _flag_value("seed", seed, flags.seed)
    _precision(precision)
    try:
        data = sweep(file, batch, depths, depth_node, flags.resolve_device(str(device)), seed, precision,
                     graph=graph)
    except CliError as exc:
        raise ValueError(str(exc)) from None
    return DepthSweep(data)


def _project(graph: Any) -> tuple[str, Any]:
    """(the name the messages give, the Graph or None: the command reads the file itself)."""
    from revstudio.core.graph import Graph
    from revstudio.core.project_write import moved_to
    from revstudio.core.scripting import expect_graph, stand_in_path

    if isinstance(graph, Graph):  # (a loaded graph's relative data paths re-pointed for the stand-in file)
        return stand_in_path(graph), moved_to(graph, stand_in_path(graph))
    if not isinstance(graph, (str, os.PathLike)):
        expect_graph(graph, "rs.memory")
    path = os.fspath(graph)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"rs.memory: {path}: no such file; give a project file's path or an rs.Graph")
    return path, None


def _modes(modes: Sequence[str], budget: bool) -> tuple[str, ...]:
    if not isinstance(modes, (str, list, tuple, set, frozenset)):  # (modes=5 said "'int' object is not iterable")
        raise ValueError(f"rs.memory: modes={modes!r}: give a mode or a list of them, some of {', '.join(MODES)}")
    chosen = (modes,) if isinstance(modes, str) else tuple(modes)
    wrong = [m for m in chosen if m not in MODES]
    if wrong or not chosen:
        raise ValueError(f"rs.memory: modes={modes!r}: {'no mode given' if not chosen else repr(wrong[0]) + ' is not a mode'}"
                         f"; give some of {', '.join(MODES)}")
    if budget and not {"standard", "reversible"} <= set(chosen):
        raise ValueError("rs.memory: budget= compares the budget's step with standard and reversible mode; "
                         "keep both in modes")
    return tuple(m for m in MODES if m in chosen)  # (the command's order)


__all__ = ["DepthSweep", "MemoryReport", "memory"]
