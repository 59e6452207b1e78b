"""What the scripting API is handed: a Graph where one is due, and param values as a project
file holds them, numbers of NumPy or torch made plain Python.

A script computes sizes with NumPy (``np.prod``, ``arr.shape``) or torch (``t.size(1)``,
``torch.tensor(4)``) and hands them to ``Graph.add_node`` / ``set_param``. The check wants
``int`` (and said "expected an integer, got np.int64(4)"), and JSON cannot write them, so the
graph stores their plain values instead: ``tolist()``, which both libraries give every
scalar and array (no import of either here). Lists, tuples and dicts are walked; anything
else is stored as given, for the check to judge.
"""
from __future__ import annotations

from typing import Any

_ARRAY_LIBRARIES = ("numpy", "torch")
_PLAIN = (str, int, float, bool, type(None))


def plain_value(value: Any) -> Any:
    """``value`` with NumPy / torch scalars and arrays in it made Python numbers and lists."""
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, (list, tuple)):
        items = [plain_value(v) for v in value]
        return type(value)(items) if type(value) in (list, tuple) else items
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    library = type(value).__module__.partition(".")[0]
    if library in _ARRAY_LIBRARIES and callable(getattr(value, "tolist", None)):
        try:
            return value.tolist()
        except Exception:  # (a tensor that cannot leave its device, say): the check will name it
            return value
    return value


def expect_graph(value: object, call: str, path_hint: str | None = None) -> None:
    """Refuse what is not a :class:`Graph` where the scripting API takes one (``call``: the
    function, as a user writes it), with what to pass instead: a project's path or its
    parsed JSON failed deep inside the check with an AttributeError that named neither.
    ``path_hint``: what to say to a path given as the graph, where loading it is not the cure."""
    from .graph import Graph  # (graph imports this module)

    if isinstance(value, Graph):
        return
    got = type(value).__name__
    if isinstance(value, (str, bytes)) or hasattr(value, "__fspath__"):
        if path_hint is not None:
            raise TypeError(f"{call} takes a revstudio Graph, got the {got} {value!r}; {path_hint}")
        import os

        from .project_format import SNAPSHOT

        text = os.fsdecode(value) if isinstance(value, bytes) else os.fspath(value)  # type: ignore[arg-type]
        if os.path.isdir(text) and os.path.isfile(os.path.join(text, SNAPSHOT)):
            inside = os.path.join(text, SNAPSHOT)
            raise TypeError(f"{call} takes a revstudio Graph, got the {got} {value!r}, a run folder; load the "
                            f"project it trained first: {call}(rs.load({inside!r}))")
        raise TypeError(f"{call} takes a revstudio Graph, got the {got} {value!r}; load the project "
                        f"first: {call}(rs.load({str(value)!r}))")
    raise TypeError(f"{call} takes a revstudio Graph, got {got}; load one with rs.load(path) or build "
                    "one with rs.Graph()")


def stand_in_path(graph: Any) -> str:
    """The file a Graph in memory would be saved as in the current folder (its name, made a file
    name): where ``rs.train`` and ``rs.memory`` treat it as read from, so its runs go to ./runs and
    its relative data paths start here, as for a project saved here (a loaded graph's are re-pointed
    for it: ``project_write.moved_to``)."""
    import os
    import re

    stem = re.sub(r"[^\w.-]+", "_", str(getattr(graph, "name", "") or "")).strip("._") or "project"
    return os.path.join(os.getcwd(), f"{stem}.revs")

