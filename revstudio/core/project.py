"""Project files (``*.revs``): versioned JSON to and from a :class:`Graph`.

The format is DESIGN section 2. Loading is strict on structure (malformed JSON,
wrong field types, duplicate ids or edges, dangling edges: a
:class:`ProjectError` naming the file and the node/edge/field) and lenient on
meaning: unknown node types, unknown params and out-of-range values are kept
so the checker can mark them in the editor. Legacy type ids become current
ones. Nothing in a file is ever executed or unpickled, and every walk over it
is iterative and linear, so hostile files cannot blow the stack or hang.

Reading lives here; writing (``dumps``, ``save``) in ``project_write``, both
re-exported from this module. ``dumps`` is deterministic: node and edge order as in the graph, params and
groups sorted by name, only explicitly set params, ASCII only. So
save -> load -> save is byte-identical. ``made_by`` names the revstudio that
wrote the file; ``plugins`` records, for each node type a plugin provides, the
package to install (kept as read for types that are not installed, so such a
project saves back unchanged and ``check`` can say what is missing).

Versions. ``CURRENT_VERSION`` is what we write; ``MIGRATIONS[v]`` (in
``migrations.py``) turns a version-``v`` document into a version ``v + 1`` one,
and the loader applies them step by step.
"""
from __future__ import annotations

import errno
import json
import math
import os
import re
import shlex
from typing import Any

from .graph import ID_PATTERN, Edge, Graph, Node, PortRef, valid_id
from .migrations import CURRENT_VERSION, MIGRATIONS, migrate_0_to_1
from .nogc import without_cyclic_gc
from .project_format import FORMAT, MADE_BY, MAX_POS, SNAPSHOT, ProjectError, made_by_newer
from .project_write import dumps, plugin_records, save
from .pyfile import EmbeddedError, decode_source, holds_embedded, read_embedded

MAX_FILE_BYTES = 64 << 20   # far beyond any real project; stops a stray multi-GB file
MAX_DEPTH = 32              # nesting allowed inside params, training and view
MAX_NAME = 1000
MAX_DIGITS = 1000           # of a whole number

TOP_FIELDS = ("format", "version", "made_by", "name", "nodes", "edges", "groups", "renamed", "plugins",
              "training", "view")
NODE_FIELDS = ("id", "type", "params", "pos")
_NODE_FIELD_SET = frozenset(NODE_FIELDS)
_NUMBER = (int, float)
_NESTED = (dict, list)
_ORIGIN = [0.0, 0.0]
BODY_FIELDS = ("nodes", "edges", "renamed")


# ---- reading ---------------------------------------------------------------

def folder_words(path: str, is_run: bool) -> str:
    """The words for a folder given where a project file goes, one wording for the commands
    (``clicmd._paths.folder_problem``), the app and ``rs.load``: a run's folder (``is_run``) names the
    project it trained where it holds one."""
    inside = os.path.join(path, SNAPSHOT)
    if is_run:
        return (f"{path}: is a folder (a run directory); the project it trained is {inside}"
                if os.path.isfile(inside) else f"{path}: is a folder (a run directory), not a project file")
    return f"{path}: is a folder, not a project file; give the .revs file"


def cannot_read(source: str, reason: str | None = None) -> str:
    """The words for a project file that cannot be read (``reason``: the OS's, "No such file or
    directory" where not given): one wording for the loader, ``check``, ``train``, ``runs``, ``export``
    and ``rs.train``, which said "no such file" where ``check`` said this."""
    return f"{source}: cannot read the file ({reason or os.strerror(errno.ENOENT)}); check the path"


class _JsonProblem(Exception):
    """Raised from json hooks; turned into a ProjectError with the source name."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _JsonProblem(f"the key {_short(key)} appears twice in one object; keep one")
            seen.add(key)
    return out


def _no_constant(name: str) -> Any:
    raise _JsonProblem(f"{name} is not a number JSON allows; use a finite number")


def _whole(text: str) -> int:
    # Python refuses to convert more than 4,300 digits and says to raise a limit in Python;
    # no value of a project has more than a few dozen.
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise _JsonProblem(f"the number {_short(text, 30)} has {digits:,} digits; no project value needs "
                           f"more than {MAX_DIGITS:,}")
    return int(text)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _JsonProblem(f"the number {_short(text)} is too large; use a finite number")
    return value


def _short(value: Any, limit: int = 60) -> str:
    """A bounded description of any JSON value, safe for error messages."""
    if isinstance(value, dict):
        return f"an object with {len(value)} field{'s' * (len(value) != 1)}"
    if isinstance(value, list):
        if len(value) <= 4 and all(isinstance(v, (str, int, float, bool, type(None))) for v in value):
            text = repr(value)
            return text if len(text) <= limit else text[: limit - 3] + "..."
        return f"a list of {len(value)} item{'s' * (len(value) != 1)}"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return {dict: "an object", list: "a list", str: "text", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists/objects nest more than ``limit`` levels (iterative: no recursion)."""
    if not isinstance(value, (dict, list)):
        return False
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def parse_json(text: str, source: str) -> Any:
    """JSON text -> Python values, rejecting NaN, duplicate keys and absurd nesting."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise ProjectError(f"{source}: the file is empty; it is not a revstudio project", source)
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite,
                          parse_int=_whole)
    except json.JSONDecodeError as exc:
        conflict = _conflict_line(text)
        if conflict:
            raise ProjectError(
                f"{source}: line {conflict}: the file holds git's merge conflict markers (<<<<<<<, =======, "
                ">>>>>>>): a merge of it was left unfinished. Edit the file to keep the lines each side needs "
                "(a comma after each list item but the last) and delete the marker lines, or take one side "
                f"whole with 'git checkout --ours {_as_path(source)}' (or --theirs); then open it again",
                source, f"line {conflict}",
            ) from None
        # the text ran out where more was due, or ends without a project's closing brace: cut short
        short = not text[exc.pos:].strip() or not text.rstrip().endswith("}")
        hint = "the file ends too early (truncated?)" if short else "the file is not valid JSON"
        if not text.lstrip().startswith("{"):  # (no project's opening brace: not one cut short, another file)
            hint = ("it is Python code 'revstudio export' wrote: name it with .py at the end to read its project"
                    if holds_embedded(text) else "this is not a revstudio project (one is JSON, starting with '{')")
        raise ProjectError(
            f"{source}: line {exc.lineno}, column {exc.colno}: {exc.msg.removesuffix(' starting at')}; {hint}",
            source, f"line {exc.lineno}, column {exc.colno}",
        ) from None
    except _JsonProblem as exc:
        raise ProjectError(f"{source}: {exc}", source) from None
    except RecursionError:
        raise ProjectError(
            f"{source}: lists or objects nest too deeply; this is not a revstudio project", source
        ) from None
    except ValueError as exc:  # e.g. an integer with thousands of digits
        raise ProjectError(f"{source}: {exc}; this is not a revstudio project", source) from None


def _as_path(source: str) -> str:
    """``source`` for a shell command where it is a file's path, else a placeholder (a text's label)."""
    return shlex.quote(source) if os.path.isfile(source) else "FILE"


def _conflict_line(text: str) -> int:
    """The line of the first ``<<<<<<<`` that git's merge leaves where both sides changed the
    same lines, if the text holds a whole conflict (its ``=======`` and ``>>>>>>>`` after it); else 0."""
    match = re.search(r"^<{7}(?: |$)", text, re.MULTILINE)
    if match is None or not re.search(r"^={7}$[\s\S]*^>{7}(?: |$)", text[match.end():], re.MULTILINE):
        return 0
    return text.count("\n", 0, match.start()) + 1


class _Reader:
    """One load: the source name for messages and a cache of canonical type ids."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.types: dict[str, str] = {}
        self.newer = ""  # the file's made_by where a newer revstudio wrote it

    def fail(self, where: str, problem: str) -> ProjectError:
        return ProjectError(f"{self.source}: {where}: {problem}", self.source, where)

    def fields(self, obj: dict[str, Any], allowed: tuple[str, ...], required: tuple[str, ...], where: str) -> None:
        for key in obj:
            if key not in allowed and self.newer:
                # a field of a newer format: removing it would drop what that version keeps there
                raise self.fail(where, f"unknown field {_short(key)}: the file was made by {_short(self.newer)}, "
                                       f"newer than this {MADE_BY}, which does not know the field; upgrade "
                                       "revstudio to open it (deleting the field loses what it holds)")
            if key not in allowed:
                raise self.fail(where, f"unknown field {_short(key)} (allowed: {', '.join(allowed)}); remove it")
        for key in required:
            if key not in obj:
                raise self.fail(where, f"the field {key!r} is missing")

    def renamed(self, obj: dict[str, Any], where: str) -> dict[str, str]:
        """A graph's (or group body's) ``renamed`` map: old node id -> current node id."""
        renamed = obj.get("renamed", {})
        if not isinstance(renamed, dict) or not all(
                valid_id(k) and isinstance(v, str) and valid_id(v) for k, v in renamed.items()):
            raise self.fail(where, 'expected an object of old node id: current node id, e.g. {"conv1": "stem"}')
        return dict(renamed)

    def canonical_type(self, type_id: str) -> str:
        """The current id of a (possibly legacy) type; unknown types stay as they are."""
        found = self.types.get(type_id)
        if found is None:
            from .spec import registry

            spec = registry.find(type_id)
            found = self.types[type_id] = spec.type_id if spec is not None else type_id
        return found

    def node(self, raw: Any, index: int, prefix: str) -> Node:
        where = f"{prefix}node {index}"
        if not isinstance(raw, dict):
            raise self.fail(where, f'expected an object like {{"id": "x", "type": "Conv"}}, got {_kind(raw)}')
        node_id = raw.get("id")
        if node_id is None:
            raise self.fail(where, "the field 'id' is missing; give every node a unique id")
        if type(node_id) is not str or not ID_PATTERN.fullmatch(node_id):
            raise self.fail(
                where, f"id {_short(node_id)} is not allowed; use 1-64 characters without spaces, dots "
                "or control characters",
            )
        where = f"{prefix}node {index} {node_id!r}"
        if "type" not in raw or len(raw) > 2 and not raw.keys() <= _NODE_FIELD_SET:
            self.fields(raw, NODE_FIELDS, ("type",), where)
        type_id = raw["type"]
        if not isinstance(type_id, str) or not 0 < len(type_id) <= 100:
            raise self.fail(where, f"'type' must be a node type name such as \"Conv\", not {_short(type_id)}")
        params = raw.get("params", {})
        if type(params) is not dict:
            raise self.fail(where, f"'params' must be an object of name: value, not {_kind(params)}")
        for name, value in params.items():
            if type(value) in _NESTED and _too_deep(value):
                raise self.fail(f"{where} param {_short(name)}", f"nests deeper than {MAX_DEPTH} levels")
        if None in params.values():
            # null means "not set": the spec's default applies (and the file stays minimal)
            params = {k: v for k, v in params.items() if v is not None}
        pos = raw.get("pos", _ORIGIN)
        if type(pos) is not list or len(pos) != 2 or type(pos[0]) not in _NUMBER or type(pos[1]) not in _NUMBER:
            raise self.fail(where, f"'pos' must be two numbers [x, y], not {_short(pos)}")
        try:
            x, y = float(pos[0]), float(pos[1])
        except OverflowError:
            x = y = math.inf
        if not (math.isfinite(x) and math.isfinite(y)):
            raise self.fail(where, f"'pos' must be two finite numbers, not {_short(pos)}")
        if abs(x) > MAX_POS or abs(y) > MAX_POS:
            raise self.fail(where, f"'pos' {_short(pos)} is off the canvas; use numbers from {-MAX_POS:g} "
                                   f"to {MAX_POS:g} (or remove 'pos')")
        return Node(node_id, self.canonical_type(type_id), params, (x, y))

    def graph_part(self, graph: Graph, raw_nodes: Any, raw_edges: Any, prefix: str) -> None:
        """Fill ``graph`` with the nodes and edges of a project or of a group body."""
        if not isinstance(raw_nodes, list):
            raise self.fail(f"{prefix}field 'nodes'", f"expected a list of nodes, got {_kind(raw_nodes)}")
        if not isinstance(raw_edges, list):
            raise self.fail(f"{prefix}field 'edges'", f"expected a list of edges, got {_kind(raw_edges)}")
        index: dict[str, int] = {}
        nodes = graph.nodes
        for i, raw in enumerate(raw_nodes):
            node = self.node(raw, i, prefix)
            if node.id in index:
                raise self.fail(
                    f"{prefix}node {i} {node.id!r}",
                    f"the id is already used by node {index[node.id]}; give each node its own id",
                )
            index[node.id] = i
            nodes[node.id] = node
        seen: dict[tuple[str, str], int] = {}
        good_ports: set[str] = set()
        edges = graph.edges
        for i, raw in enumerate(raw_edges):
            # Fast path for the common, well-formed edge; anything odd goes to _edge_problem.
            if type(raw) is not list or len(raw) != 2 or type(raw[0]) is not str or type(raw[1]) is not str:
                raise self.fail(f"{prefix}edge {i} {_short(raw)}", 'expected two port references like ["a.out", "b.in"]')
            a, b = raw
            src_node, _, src_port = a.rpartition(".")
            dst_node, _, dst_port = b.rpartition(".")
            if (src_node not in nodes or dst_node not in nodes
                    or src_port not in good_ports or dst_port not in good_ports):
                self._check_edge(raw, f"{prefix}edge {i} {_short(raw, 160)}", nodes, good_ports)
            key = (a, b)
            if key in seen:
                raise self.fail(f"{prefix}edge {i} {_short(raw, 160)}",
                                f"the same edge as edge {seen[key]}; remove one of them")
            seen[key] = i
            edges.append(Edge(PortRef(src_node, src_port), PortRef(dst_node, dst_port)))

    def _check_edge(self, raw: list[str], where: str, nodes: dict[str, Node], good_ports: set[str]) -> None:
        for text in raw:
            node_id, dot, port = text.rpartition(".")
            if not dot or not node_id or not valid_id(port):
                raise self.fail(where, f"{_short(text)} is not a port reference like 'node.port'")
            if node_id not in nodes:
                raise self.fail(where, f"there is no node {_short(node_id)}; remove the edge or add the node")
            good_ports.add(port)

    def document(self, doc: Any) -> Graph:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            found = _short(doc.get("format")) if isinstance(doc, dict) else _kind(doc)
            raise ProjectError(
                f'{self.source}: not a revstudio project (expected an object with "format": "revstudio", '
                f"found {found})",
                self.source,
            )
        version = doc.get("version")
        if "version" not in doc:
            raise self.fail("top level", f"the field 'version' is missing; a project file written now has "
                                         f'"version": {CURRENT_VERSION}')
        if not isinstance(version, int) or isinstance(version, bool):
            raise self.fail("field 'version'", f"expected a whole number, got {_short(version)}")
        if version > CURRENT_VERSION:
            raise ProjectError(
                f"{self.source}: made by a newer revstudio (file version {_short(version, 24)}, this revstudio reads up "
                f"to {CURRENT_VERSION}): upgrade revstudio",
                self.source, "field 'version'",
            )
        if version < min(MIGRATIONS, default=CURRENT_VERSION):
            raise self.fail("field 'version'", f"unknown file version {_short(version, 24)}")
        while version < CURRENT_VERSION:
            doc = MIGRATIONS[version](doc)
            version += 1
            doc["version"] = version
        return self.current(doc)

    def current(self, doc: dict[str, Any]) -> Graph:
        made_by = doc.get("made_by", "")
        if isinstance(made_by, str) and made_by_newer(made_by):
            self.newer = made_by
        self.fields(doc, TOP_FIELDS, ("format", "version", "nodes", "edges"), "top level")
        name = doc.get("name", "untitled")
        if not isinstance(name, str) or len(name) > MAX_NAME:
            raise self.fail("field 'name'", f"expected text of at most {MAX_NAME} characters")
        graph = Graph(name)
        self.graph_part(graph, doc["nodes"], doc["edges"], "")
        groups = doc.get("groups", {})
        if not isinstance(groups, dict):
            raise self.fail("field 'groups'", f'expected an object of name: {{"nodes": [...], "edges": [...]}}, '
                            f"got {_kind(groups)}")
        for gname, raw in groups.items():
            where = f"group {_short(gname)}"
            if not valid_id(gname):
                raise self.fail(where, "a group name has 1-64 characters without spaces, dots or control characters")
            if not isinstance(raw, dict):
                raise self.fail(where, f'expected an object {{"nodes": [...], "edges": [...]}}, got {_kind(raw)}')
            self.fields(raw, BODY_FIELDS, ("nodes", "edges"), where)
            body = Graph(gname, groups=graph.groups)
            self.graph_part(body, raw["nodes"], raw["edges"], f"{where}: ")
            body.renamed = self.renamed(raw, f"{where}: field 'renamed'")
            graph.groups[gname] = body
        graph.renamed = self.renamed(doc, "field 'renamed'")
        if not isinstance(made_by, str) or len(made_by) > MAX_NAME:
            raise self.fail("field 'made_by'", f"expected text such as {MADE_BY!r}, got {_short(made_by)}")
        graph.made_by = made_by
        graph.plugins = self.plugins(doc.get("plugins", {}))
        for body in graph.groups.values():
            body.plugins = graph.plugins  # one record per project, seen from every canvas
        for key in ("training", "view"):
            value = doc.get(key, {})
            if not isinstance(value, dict):
                raise self.fail(f"field {key!r}", f"expected an object, got {_kind(value)}")
            if _too_deep(value):
                raise self.fail(f"field {key!r}", f"nests deeper than {MAX_DEPTH} levels")
            setattr(graph, key, value)
        return graph


    def plugins(self, raw: Any) -> dict[str, dict[str, str]]:
        """``{"Type": {"distribution": "pkg", "version": "1.0"}}``: who provides each plugin type."""
        if not isinstance(raw, dict):
            raise self.fail("field 'plugins'", f'expected an object of type: {{"distribution": ...}}, got {_kind(raw)}')
        out: dict[str, dict[str, str]] = {}
        for type_id, record in raw.items():
            where = f"field 'plugins' {_short(type_id)}"
            if not isinstance(record, dict) or not isinstance(record.get("distribution"), str):
                raise self.fail(where, 'expected {"distribution": "package-name", "version": "1.0"}')
            for key, value in record.items():
                if key not in ("distribution", "version") or not isinstance(value, str) or len(value) > MAX_NAME:
                    raise self.fail(where, f"{_short(key)}: expected 'distribution' and 'version' as text")
            out[type_id] = dict(record)
        return out


@without_cyclic_gc  # allocation-heavy and cycle-free: see revstudio.core.nogc
def loads(text: str | bytes, source: str = "<string>") -> Graph:
    """A project from JSON text; raises :class:`ProjectError` (and nothing else) on bad input."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProjectError(f"{source}: not UTF-8 text (byte {exc.start})", source) from None
    if not isinstance(text, str):
        raise ProjectError(f"{source}: expected JSON text, got {type(text).__name__}", source)
    return _Reader(source).document(parse_json(text, source))


def load(path: str | os.PathLike[str]) -> Graph:
    """Returns the :class:`Graph` of the project at ``path``: a ``.revs`` file, or the project
    embedded in an exported ``.py``. A file that cannot be read or is not a project raises
    :class:`ProjectError` naming the file (and the node or edge at fault)."""
    source = os.fspath(path)
    if not source:  # (an unset shell variable: open("") would say "No such file" of nothing)
        raise ProjectError("the project path is empty; name a project file (.revs) or an exported .py", source)
    try:
        with open(source, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        inside = os.path.join(source, SNAPSHOT)
        if os.path.isdir(source):  # (a training run's folder too: rs.load("runs/x"))
            raise ProjectError(folder_words(source, is_run=os.path.isfile(inside)), source) from None
        raise ProjectError(cannot_read(source, reason), source) from None
    if len(data) > MAX_FILE_BYTES:
        raise ProjectError(f"{source}: larger than {MAX_FILE_BYTES >> 20} MiB; not a revstudio project", source)
    if source.lower().endswith(".py"):
        try:  # decoded as Python would: a "# coding:" line counts
            text = read_embedded(decode_source(data, source), source)
        except EmbeddedError as exc:
            raise ProjectError(str(exc), source) from None
        return _read_from(loads(text, f"{source} (embedded project)"), source)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        zipped = ("; it is a zip file, such as torch.save writes (a run's checkpoints/last.pt holds trained "
                  "weights: its project is the run folder's project.revs)" if data[:4] == b"PK\x03\x04" else "")
        raise ProjectError(f"{source}: not UTF-8 text (byte {exc.start}); not a revstudio project{zipped}",
                           source) from None
    return _read_from(loads(text, source), source)


def _read_from(graph: Graph, source: str) -> Graph:
    """``graph`` marked as read from ``source``: its relative data paths start at that file's folder."""
    graph.source = os.path.abspath(source)
    return graph


__all__ = [
    "CURRENT_VERSION", "FORMAT", "MADE_BY", "MIGRATIONS", "ProjectError", "dumps", "load", "loads",
    "migrate_0_to_1", "parse_json", "plugin_records", "save",
]
