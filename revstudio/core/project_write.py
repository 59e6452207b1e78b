"""Writing a :class:`Graph` as project text (DESIGN section 2) and saving it atomically.

``dumps`` is deterministic: node and edge order as in the graph, params and groups
sorted by name, only explicitly set params, ASCII only, so save -> load -> save is
byte-identical. ``revstudio.core.project`` re-exports all of it beside the reader.
"""
from __future__ import annotations

import copy as _copy
import errno
import json
import math
import os
import warnings
from typing import Any

from . import data_paths, tempfiles
from .graph import Graph
from .migrations import CURRENT_VERSION
from .project_format import FORMAT, MADE_BY, MAX_POS, ProjectError
from .scripting import expect_graph


def _value(value: Any, where: str, indent: int | None = None) -> str:
    try:
        return json.dumps(value, ensure_ascii=True, allow_nan=False, sort_keys=True, indent=indent)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ProjectError(f"<graph>: {where}: cannot be saved as JSON ({exc})", "<graph>", where) from None


def _number(value: float, where: str) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ProjectError(f"<graph>: {where}: position {value!r} is not a finite number", "<graph>", where)
    if abs(value) > MAX_POS:  # the reader refuses it: the saved file would not reopen
        raise ProjectError(f"<graph>: {where}: position {value!r} is off the canvas (beyond {MAX_POS:g})",
                           "<graph>", where)
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _renamed_lines(graph: Graph, pad: str) -> list[str]:
    """``"renamed": {...}``, written only once a node was renamed: older files stay byte-identical."""
    if not graph.renamed:
        return []
    text = _value(dict(sorted(graph.renamed.items())), "renamed", indent=2)
    return [f'{pad}"renamed": ' + text.replace("\n", "\n" + pad)]


def _graph_lines(graph: Graph, pad: str) -> list[str]:
    """``"nodes": [...]`` and ``"edges": [...]``, one node or edge per line."""
    out: list[str] = []
    node_lines = []
    for node in graph.nodes.values():
        where = f"node {node.id!r}"
        x, y = node.pos
        node_lines.append(
            f'{pad}  {{"id": {_value(node.id, where)}, "type": {_value(node.type, where)}, '
            f'"params": {_value(node.params, where)}, "pos": [{_number(x, where)}, {_number(y, where)}]}}'
        )
    edge_lines = [f"{pad}  {_value(edge.to_json(), f'edge {edge}')}" for edge in graph.edges]
    for key, lines in (("nodes", node_lines), ("edges", edge_lines)):
        if lines:
            out.append(f'{pad}"{key}": [\n' + ",\n".join(lines) + f"\n{pad}]")
        else:
            out.append(f'{pad}"{key}": []')
    return out


def plugin_records(graph: Graph) -> dict[str, dict[str, str]]:
    """For every plugin node type the project uses: the package (and version) that provides it.

    Installed types are recorded from the registry; a type that is not installed
    keeps the record the file came with, so nothing is lost by saving.
    """
    from .spec import registry

    used: set[str] = set()
    for part in (graph, *graph.groups.values()):
        used.update(node.type for node in part.nodes.values() if isinstance(node.type, str))
    kept = getattr(graph, "plugins", {})
    out: dict[str, dict[str, str]] = {}
    for type_id in sorted(used):
        spec = registry.find(type_id)
        if spec is None:
            if type_id in kept:
                out[type_id] = dict(kept[type_id])
            continue
        provider = registry.provider(spec.type_id)
        if provider is not None and not provider.builtin and provider.distribution:
            record = {"distribution": provider.distribution}
            if provider.version:
                record["version"] = provider.version
            out[spec.type_id] = record
    return out


def dumps(graph: Graph) -> str:
    """The project as JSON text (DESIGN section 2): deterministic, ASCII, one node/edge per line."""
    fields = [
        f'  "format": "{FORMAT}"',
        f'  "version": {CURRENT_VERSION}',
        f'  "made_by": {_value(MADE_BY, "made_by")}',
        f'  "name": {_value(graph.name, "name")}',
        *_graph_lines(graph, "  "),
    ]
    if graph.groups:
        bodies = []
        for gname in sorted(graph.groups):
            body = graph.groups[gname]
            inner = ",\n".join(_graph_lines(body, "      ") + _renamed_lines(body, "      "))
            bodies.append(f"    {_value(gname, 'group name')}: {{\n{inner}\n    }}")
        fields.append('  "groups": {\n' + ",\n".join(bodies) + "\n  }")
    else:
        fields.append('  "groups": {}')
    fields += _renamed_lines(graph, "  ")
    plugins = plugin_records(graph)
    if plugins:
        fields.append('  "plugins": ' + _value(plugins, "plugins", indent=2).replace("\n", "\n  "))
    for key in ("training", "view"):
        text = _value(getattr(graph, key), key, indent=2)
        fields.append(f'  "{key}": ' + text.replace("\n", "\n  "))
    return "{\n" + ",\n".join(fields) + "\n}\n"


def save(graph: Graph, path: str | os.PathLike[str]) -> None:
    """Write ``graph`` to ``path`` atomically (:func:`tempfiles.write_atomic`).

    A graph read from a file in another folder (``graph.source``) is written with its relative data
    paths re-expressed from ``path``'s folder (:func:`data_paths.portable_spec`, as the app's Save As;
    absolute ones stay as written, but for one in a home folder within ``MAX_UP`` folders of the file,
    written relative), so they name the same data; the graph in memory is left as it is. A data path written absolute
    inside a home folder is warned of (a teammate's checkout will not find it). On any error the
    original file is untouched, the temp file is removed, and a :class:`ProjectError` names the path.
    """
    expect_graph(graph, "rs.save", "the graph comes first: rs.save(graph, path)")
    written = moved_to(graph, os.fspath(path))
    try:
        data = dumps(written).encode("ascii")
    except ProjectError as exc:  # (dumps knows no path: its "<graph>" becomes the file not written)
        target = os.fspath(path)
        raise ProjectError(f"{target}: not saved, the file on disk is unchanged: "
                           f"{str(exc).removeprefix('<graph>: ')}", target, exc.where) from None
    try:
        tempfiles.write_atomic(path, data)
    except OSError as exc:
        hint = "check that the folder exists and is writable; " if exc.errno in _FOLDER_ERRORS else ""
        raise ProjectError(
            f"{os.fspath(path)}: cannot save ({exc.strerror or exc}); {hint}the file on disk is unchanged",
            os.fspath(path),
        ) from None
    for key, data_path in data_paths.personal_paths(written.training):  # (saved: said once, as a warning)
        warnings.warn(f"{os.fspath(path)}: {data_paths.personal_path_note(key, data_path)}", UserWarning,
                      stacklevel=2)


def moved_to(graph: Graph, path: str) -> Graph:
    """``graph`` as a file at ``path`` should hold it: a shallow stand-in with its data paths
    re-expressed where the folder its relative paths start from is another, and an absolute one in a
    home folder near the file written relative (:func:`data_paths.home_paths_relative`; else ``graph`` itself)."""
    old = data_paths.source_folder(graph)
    new = os.path.dirname(os.path.abspath(path))
    if old is None or os.path.realpath(old) == os.path.realpath(new):
        section = data_paths.home_paths_relative(graph.training, new)  # (else kept as written)
    else:
        section = data_paths.portable_section(graph.training, old, new, relative_only=True)
    if section == graph.training:
        return graph
    out = _copy.copy(graph)  # (dumps reads its facts; nothing is edited, so sharing them is safe)
    out.training = section
    return out


# errors that mean the folder, not the disk or the data, is what stops the save
_FOLDER_ERRORS = (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.EROFS)


__all__ = ["dumps", "moved_to", "plugin_records", "save"]
