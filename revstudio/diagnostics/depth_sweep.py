"""Memory against depth, torch-free: which Repeat node a sweep varies, the depths it takes, and
the least-squares growth per added block that makes "flat" a number.

``revstudio memory FILE --depth 1,2,4,8`` (``clicmd.memory_depth``) measures each depth; the
editor's Memory tab (``qt.depth_sweep``) runs that in a child process and draws it. Both pick the
node and read the depths here, so they refuse the same projects with the same words.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_TIMES = 256  # the Repeat node's own limit on ``times`` (nodes/groups.py)
HOW_TO_REPEAT = ("in the app select the repeated blocks, Edit > Group Selection, then "
                 "Edit > Repeat This Group, and save")


class DepthError(ValueError):
    """A sweep that cannot run as asked; the message names the node or value and what to do."""


def parse_depths(text: str) -> list[int]:
    """'1,2,4,8' -> [1, 2, 4, 8] (sorted, each once); DepthError naming a bad entry."""
    parts = [p.strip() for p in (text or "").split(",")]
    if not any(parts):
        raise DepthError("no depths given; list the Repeat's times to measure, e.g. --depth 1,2,4,8")
    depths: set[int] = set()
    for part in parts:
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise DepthError(f"depth {part!r} is not a whole number; list them with commas, "
                             "e.g. 1,2,4,8") from None
        if not 1 <= value <= MAX_TIMES:
            raise DepthError(f"depth {value} is out of range; a Repeat runs 1 to {MAX_TIMES} copies")
        depths.add(value)
    return sorted(depths)


def repeat_nodes(graph: Any) -> list[str]:
    """The ids of the project's own Repeat nodes (not those inside group bodies), in node order."""
    return [n.id for n in graph if n.type == "Repeat"]


def pick_repeat(graph: Any, name: str | None = None) -> str:
    """The Repeat node a sweep varies: ``name``, or the project's only one; DepthError otherwise,
    naming the Repeat nodes there are and how to choose or make one."""
    repeats = repeat_nodes(graph)
    listed = ", ".join(repeats)
    if name:
        if name not in graph.nodes:
            there = f"its Repeat nodes are {listed}" if repeats else "it has no Repeat node"
            raise DepthError(f"--depth-node {name}: the project has no node {name!r}; {there}")
        kind = graph.nodes[name].type
        if kind != "Repeat":
            there = f"; its Repeat nodes are {listed}" if repeats else f"; to make one, {HOW_TO_REPEAT}"
            raise DepthError(f"--depth-node {name}: {name} is a {kind} node, not a Repeat, so it has no "
                             f"times to vary{there}")
        return name
    if not repeats:
        raise DepthError("the project has no Repeat node, so there is no depth to vary; a sweep sets a "
                         f"Repeat node's times: to make one, {HOW_TO_REPEAT}")
    if len(repeats) > 1:
        raise DepthError(f"the project has {len(repeats)} Repeat nodes ({listed}); name the one to vary, "
                         f"e.g. --depth-node {repeats[0]}")
    return repeats[0]


def slope(xs: Sequence[float], ys: Sequence[float | None]) -> float | None:
    """The least-squares slope of ``ys`` against ``xs`` (bytes per added block); None with fewer
    than two distinct depths or a missing value."""
    if len(xs) != len(ys) or any(y is None for y in ys):
        return None
    n = len(xs)
    if n < 2:
        return None
    mx = sum(xs) / n
    my = sum(float(y) for y in ys if y is not None) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (float(y) - my) for x, y in zip(xs, ys) if y is not None) / sxx


def signed_bytes(value: Any, fmt: Any) -> str:
    """'+64.0 KiB' / '-12 B' of a growth in bytes (``fmt``: ``fmt_bytes``); '-' for none."""
    if not isinstance(value, (int, float)):
        return "-"
    return ("-" if round(value) < 0 else "+") + fmt(abs(round(value)))


def growth_words(slopes: dict[str, dict[str, float | None]], fmt: Any) -> str:
    """'standard +64.0 KiB (estimate +64.0 KiB), reversible +0 B (estimate +0 B), ...'."""
    parts = []
    for mode, s in slopes.items():
        est = s.get("estimate")
        parts.append(f"{mode} {signed_bytes(s.get('measured'), fmt)}"
                     + (f" (estimate {signed_bytes(est, fmt)})" if est is not None else ""))
    return ", ".join(parts)


__all__ = ["DepthError", "growth_words", "parse_depths", "pick_repeat", "repeat_nodes", "signed_bytes", "slope"]
