"""Small walks shared by identical layers: a ``peak.simulate`` answer reused under a renaming.

A wired coupling's F is walked alone (``peak_steps.wired_walk``), 200 times at 1,000 nodes of
hand-wired RevNet blocks, though the blocks repeat a few distinct layers. The walk reads only
its units (every field but the name), and the bytes, storage and gradient flag of each value
they name: :func:`walk_key` writes those with node ids replaced by their order of first
appearance, so two walks with equal keys are the same walk under a renaming of ids, and its
figures (bytes, which no id enters) are the same. A bounded table keeps them across edits
(``simulations`` counts the walks run, what tests count instead of timing). Torch-free.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import fields
from typing import Any

from .peak import Unit, Value

# a unit's fields the walk reads, besides its name (it only labels where the peak is) and the
# storages it caches on the unit (derived from ``reads``, ``makes`` and the storage function)
_READ = tuple(f.name for f in fields(Unit) if f.name not in ("name", "read_bases", "make_bases"))
SIZE = 512


class WalkTable:
    """The last ``SIZE`` answers by :func:`walk_key`, most recent last."""

    def __init__(self) -> None:
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()
        self.simulations = 0  # walks run (a miss); a hit runs none

    def get(self, key: Hashable | None, walk: Callable[[], Any]) -> Any:
        """The answer kept for ``key``, else ``walk()``'s (kept, unless ``key`` is None)."""
        if key is not None and key in self._kept:
            self._kept.move_to_end(key)
            return self._kept[key]
        self.simulations += 1
        found = walk()
        if key is not None:
            self._kept[key] = found
            while len(self._kept) > SIZE:
                self._kept.popitem(last=False)
        return found

    def clear(self) -> None:
        self._kept.clear()


WIRED = WalkTable()


def walk_key(units: list[Unit], nbytes: Callable[[Value], int], base: Callable[[Value], Value | None],
             needs_grad: Callable[[Value], bool], *values: Iterable[Value]) -> Hashable | None:
    """What ``simulate(units, nbytes, base, needs_grad, ...)`` reads, with node ids renamed by
    first appearance (``values``: the other values the call names, in its argument order).
    None where a value's facts cannot be read (the walk then runs, and says why itself)."""
    label: dict[str, int] = {}
    seen: dict[Value, tuple[int, str]] = {}

    def value(v: Value) -> tuple[int, str]:
        found = seen.get(v)
        if found is None:
            found = seen[v] = (label.setdefault(v[0], len(label)), v[1])
        return found

    def enc(x: Any) -> Hashable:
        if x is None or isinstance(x, (bool, int, float)):
            return x
        if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) and isinstance(x[1], str):
            return value(x)
        if isinstance(x, AbstractSet):  # unordered: sorted once renamed (the walk sums and compares)
            return ("s", tuple(sorted((enc(i) for i in x), key=repr)))
        if isinstance(x, Mapping):
            return ("m", tuple(sorted(((enc(k), enc(i)) for k, i in x.items()), key=repr)))
        if isinstance(x, (tuple, list)):
            return ("t", tuple(enc(i) for i in x))
        raise TypeError(f"no key for {type(x).__name__}")

    try:
        parts: list[Hashable] = [tuple(enc(getattr(u, f)) for f in _READ) for u in units]
        parts += [("t", tuple(value(v) for v in vs)) for vs in values]
        facts = []
        todo = list(seen)
        while todo:  # every named value's storage, bytes and gradient flag (storages named too)
            v = todo.pop(0)
            b = base(v)
            if b is not None and b not in seen:
                todo.append(b)
            facts.append((value(v), None if b is None else value(b), nbytes(v), needs_grad(v)))
    except Exception:  # a value without a size: the walk itself reports it, uncached
        return None
    return tuple(parts), tuple(sorted(facts, key=repr))
