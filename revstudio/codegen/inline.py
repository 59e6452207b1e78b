"""Copy torch-only classes and functions verbatim into the exported file.

The reversible runtime (``revstudio.compiler.runtime`` and ``.assembly``) and the node modules
(``revstudio.nodes.torch_modules``) import only torch and the standard
library, so their source can travel: :class:`Inliner` takes the definitions a
model needs, plus everything they reference, as the exact text of their
files (comments kept), and collects the imports they rely on. A plugin's
module may ask for the same treatment by setting ``__revstudio_inline__ = True``
(docs/plugins.md): it then has to import only torch and the standard library.
"""
from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
import sys
from dataclasses import dataclass, field
from typing import Any

# Modules whose source may be inlined: torch-only by contract (docs/architecture.md).
INLINABLE_PREFIXES = ("revstudio.nodes.torch_modules", "revstudio.compiler.runtime", "revstudio.compiler.assembly")
INLINE_FLAG = "__revstudio_inline__"
STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"math", "typing", "dataclasses", "itertools"}


class InlineError(ValueError):
    """A definition cannot be inlined; the message names it and why."""


def plugin_inlinable(module_name: str) -> bool:
    """Whether a plugin's module declares that its source may be copied into an export."""
    module = sys.modules.get(module_name)
    if module is None:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # not importable: then it cannot be inlined either
            return False
    return getattr(module, INLINE_FLAG, False) is True


def inlinable(module_name: str) -> bool:
    return module_name.startswith(INLINABLE_PREFIXES) or (
        not _is_revstudio(module_name) and plugin_inlinable(module_name))


def _is_revstudio(module_name: str) -> bool:
    return module_name == "revstudio" or module_name.startswith("revstudio.")


@dataclass(frozen=True)
class ImportFact:
    """What one imported name is bound to: ``module`` (from-import: ``module.name``)."""

    bound: str
    module: str
    name: str | None = None  # None: ``import module [as bound]``

    @property
    def target(self) -> str:
        return f"{self.module}.{self.name}" if self.name else self.module


@dataclass
class _Unit:
    """One source file: its lines and its top-level definitions and imports by name."""

    module: str
    lines: list[str]
    defs: dict[str, ast.stmt] = field(default_factory=dict)
    imports: dict[str, ImportFact] = field(default_factory=dict)
    local_imports: dict[str, tuple[str, str]] = field(default_factory=dict)  # bound -> (module, name)
    future_annotations: bool = False


@functools.cache
def _load_unit(module_name: str) -> _Unit:
    """Parse a module's source once per process: the live Code tab exports after every edit,
    and parsing the runtime's source was most of an export's time. Units are read-only."""
    module = importlib.import_module(module_name)
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError) as exc:
        raise InlineError(f"cannot read the source of {module_name} to inline it ({exc})") from None
    tree = ast.parse(source)
    unit = _Unit(module_name, source.splitlines())
    package = module_name.rpartition(".")[0]
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            unit.defs[stmt.name] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id != "__all__":
                    unit.defs[target.id] = stmt
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                unit.imports[bound] = ImportFact(bound, alias.name if alias.asname else bound)
        elif isinstance(stmt, ast.ImportFrom):
            source_module = stmt.module or ""
            if stmt.level:
                base = package.rsplit(".", stmt.level - 1)[0] if stmt.level > 1 else package
                source_module = f"{base}.{source_module}" if source_module else base
            for alias in stmt.names:
                bound = alias.asname or alias.name
                if source_module == "__future__":
                    unit.future_annotations = unit.future_annotations or alias.name == "annotations"
                elif _is_revstudio(source_module) or (stmt.level and inlinable(source_module)):
                    unit.local_imports[bound] = (source_module, alias.name)
                else:
                    unit.imports[bound] = ImportFact(bound, source_module, alias.name)
    return unit


@functools.cache
def _names_used(stmt: ast.stmt) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name):
            seen.setdefault(node.id, None)
    return tuple(seen)


class Inliner:
    """Collects definitions (in dependency order) and the imports they need."""

    def __init__(self) -> None:
        self._units: dict[str, _Unit] = {}
        self._done: dict[str, str] = {}  # name in the export -> module it came from
        self._busy: set[tuple[str, str]] = set()
        self._entries: list[tuple[str, int, str]] = []  # (module, line, text) in completion order
        self.imports: dict[str, ImportFact] = {}
        self.future_annotations = False

    def _unit(self, module: str) -> _Unit:
        if not inlinable(module):
            raise InlineError(
                f"{module} is not a torch-only module, so its code cannot go into an export "
                f"(only {', '.join(INLINABLE_PREFIXES)} and plugin modules that set {INLINE_FLAG} can)"
            )
        if module not in self._units:
            self._units[module] = _load_unit(module)
        return self._units[module]

    def require(self, obj: Any) -> str:
        """Inline the class or function ``obj``; returns the name to call it by."""
        module, name = getattr(obj, "__module__", ""), getattr(obj, "__qualname__", "")
        if "." in name:
            raise InlineError(f"{module}.{name} is nested; only top-level definitions can be inlined")
        return self.require_name(module, name)

    def require_name(self, module: str, name: str) -> str:
        if self._done.get(name) == module:
            return name
        if inlinable(module):
            unit = self._unit(module)
            if name in unit.local_imports and name not in unit.defs:
                # re-exported from a sibling torch-only file: the definition lives there
                return self.require_name(*unit.local_imports[name])
        if name in self._done:
            if self._same_text(module, name):
                return name
            raise InlineError(
                f"{module}.{name} and {self._done[name]}.{name} share a name; rename one of them "
                "so both can be inlined into one file"
            )
        unit = self._unit(module)
        stmt = unit.defs.get(name)
        if stmt is None:
            raise InlineError(f"{module} has no top-level definition {name!r} to inline")
        if (module, name) in self._busy:  # mutual references: order is already being settled
            return name
        self._busy.add((module, name))
        for used in _names_used(stmt):
            if used == name:
                continue
            if used in unit.defs:
                self.require_name(module, used)
            elif used in unit.local_imports:
                self.require_name(*unit.local_imports[used])
            elif used in unit.imports:
                self._add_import(unit.imports[used], module)
        self._busy.discard((module, name))
        if name in self._done:  # a cycle finished it meanwhile
            return name
        self._done[name] = module
        self.future_annotations = self.future_annotations or unit.future_annotations
        self._entries.append((module, stmt.lineno, self._text(unit, stmt)))
        return name

    def _add_import(self, fact: ImportFact, module: str) -> None:
        known = self.imports.get(fact.bound)
        if known is not None and known.target != fact.target:
            raise InlineError(
                f"{module} binds {fact.bound!r} to {fact.target} but another inlined file binds it to "
                f"{known.target}; use one meaning per name in torch-only modules"
            )
        self.imports.setdefault(fact.bound, fact)

    def _same_text(self, module: str, name: str) -> bool:
        """Two files may define the same small helper (``Tensors = Tuple[...]``) identically."""
        other_module = self._done[name]
        mine, theirs = self._unit(module), self._unit(other_module)
        if name not in mine.defs or name not in theirs.defs:
            return False
        return self._text(mine, mine.defs[name]).strip() == self._text(theirs, theirs.defs[name]).strip()

    @staticmethod
    def _text(unit: _Unit, stmt: ast.stmt) -> str:
        """The statement's exact lines, with its decorators and the comment block just above it."""
        start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])]) - 1
        while start > 0 and unit.lines[start - 1].lstrip().startswith("#"):
            start -= 1
        end = stmt.end_lineno or stmt.lineno
        return "\n".join(unit.lines[start:end]).rstrip() + "\n"

    def ordered(self) -> list[tuple[str, str]]:
        """(module, text) of every inlined definition, each file's in its own source order.

        Source order is what made the file importable (a class before the function
        whose annotation names it); a file another one imports from comes first,
        otherwise files come in the order their first definition was completed.
        """
        first: dict[str, int] = {}
        for i, (module, _line, _text) in enumerate(self._entries):
            first.setdefault(module, i)
        # A file that imports from another inlined file comes after it, whatever
        # completed first (a def's annotation may name the other file's class).
        rank: dict[str, int] = {}
        pending = sorted(first, key=first.__getitem__)
        while pending:
            ready = next((m for m in pending if all(
                dep in rank or dep not in first or dep == m
                for dep, _name in self._units[m].local_imports.values())), pending[0])
            rank[ready] = len(rank)
            pending.remove(ready)
        entries = sorted(self._entries, key=lambda e: (rank[e[0]], e[1]))
        return [(module, text) for module, _line, text in entries]

    @property
    def chunks(self) -> list[str]:
        return [text for _module, text in self.ordered()]

    @property
    def names(self) -> set[str]:
        return set(self._done)


def inlinable_modules() -> list[str]:
    """Every module whose code an export may inline (found on disk, so a new runtime file counts)."""
    found: list[str] = []
    for package in ("revstudio.compiler", "revstudio.nodes.torch_modules"):
        pkg = importlib.import_module(package)
        names = [package] + [f"{package}.{info.name}" for info in pkgutil.iter_modules(pkg.__path__)]
        found += [name for name in names if name.startswith(INLINABLE_PREFIXES)]
    return sorted(set(found))


@functools.lru_cache(maxsize=1)
def names_in_inlinable_code() -> frozenset[str]:
    """Every top-level name (definition or import binding) any inlined file may bring into an export.

    The export's namespace starts with all of them, so a generated class, value or
    function can never take a name that inlined runtime code defines or imports,
    whichever parts of it a given model ends up needing.
    """
    names: set[str] = set()
    for module in inlinable_modules():
        unit = _load_unit(module)
        names |= set(unit.defs) | set(unit.imports) | set(unit.local_imports)
    return frozenset(names)


def import_block(facts: list[ImportFact], future_annotations: bool) -> str:
    """Imports grouped like isort does: __future__, standard library, then third party."""
    plain: dict[str, set[str]] = {}
    froms: dict[str, set[str]] = {}
    for fact in facts:
        if fact.name is None:
            line = f"import {fact.module}" + (f" as {fact.bound}" if fact.bound != fact.module else "")
            plain.setdefault(fact.module.split(".")[0], set()).add(line)
        else:
            alias = f" as {fact.bound}" if fact.bound != fact.name else ""
            froms.setdefault(fact.module, set()).add(f"{fact.name}{alias}")
    sections: list[list[str]] = [[], []]
    # ruff/isort order: in each section every ``import x`` first, then ``from x import y``,
    # names ordered constants, classes, then the rest.
    for top in sorted(plain, key=str.lower):
        sections[0 if top in STDLIB else 1].extend(sorted(plain[top], key=str.lower))
    for module in sorted(froms, key=str.lower):
        names = sorted(froms[module], key=_name_order)
        sections[0 if module.split(".")[0] in STDLIB else 1].append(f"from {module} import {', '.join(names)}")
    blocks = [["from __future__ import annotations"]] if future_annotations else []
    blocks += [s for s in sections if s]
    return "\n\n".join("\n".join(b) for b in blocks) + "\n"


def unquote_annotations(source: str) -> str:
    """``source`` with its string annotations (``x: "torch.dtype | None"``) written bare.

    revstudio's runtime quotes forward references, since it runs without ``from __future__
    import annotations``; when an inlined plugin module brings that import, the quotes are
    redundant (ruff's UP037). Under the import annotations are never evaluated, so this
    changes nothing at run time.
    """
    tree = ast.parse(source)
    spans: list[tuple[int, int, int, int, str]] = []
    for node in ast.walk(tree):
        notes: list[ast.expr | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            notes += [a.annotation for a in every if a is not None]
            notes.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            notes.append(node.annotation)
        for note in notes:
            if isinstance(note, ast.Constant) and isinstance(note.value, str) and note.end_lineno is not None \
                    and note.lineno == note.end_lineno and _is_expression(note.value):
                spans.append((note.lineno, note.col_offset, note.end_lineno, note.end_col_offset or 0, note.value))
    lines = source.splitlines(keepends=True)
    for line, start, _end_line, end, text in sorted(spans, reverse=True):
        row = lines[line - 1].encode("utf-8")  # ast offsets count UTF-8 bytes
        lines[line - 1] = (row[:start] + text.encode("utf-8") + row[end:]).decode("utf-8")
    return "".join(lines)


def _is_expression(text: str) -> bool:
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    return "\n" not in text and "#" not in text


def _name_order(name: str) -> tuple[int, str]:
    base = name.split(" as ")[0]
    kind = 0 if base.isupper() and len(base) > 1 else 1 if base[:1].isupper() else 2
    return kind, base
