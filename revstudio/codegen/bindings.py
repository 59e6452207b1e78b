"""The exported file's last check: no name bound twice where a later definition would win.

The namespace gives every generated name once; :func:`check_bindings` parses the
finished source and turns any slip into an error instead of a different model.
"""
from __future__ import annotations

import ast
from collections.abc import Sequence

from . import CodegenError


def check_bindings(source: str, classes: set[str]) -> None:
    """Refuse a file in which one name is bound twice: the later definition would win silently.

    Every module-level definition and import, every method of a class and every
    ``self.X = ...`` in an ``__init__`` must be unique; the namespace makes this so,
    and this check makes any future slip an error instead of a different model.
    """
    tree = ast.parse(source)

    def bound(stmts: Sequence[ast.stmt], where: str) -> None:
        seen: set[str] = set()
        for stmt in stmts:
            names: list[str] = []
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [stmt.name]
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                names = [(a.asname or a.name).split(".")[0] for a in stmt.names]
            elif isinstance(stmt, ast.Assign):
                names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                names = [stmt.target.id]
            for name in names:
                if name in seen:
                    raise CodegenError(f"the export would define {name!r} twice {where}; please report this")
                seen.add(name)

    bound(tree.body, "at module level")
    for cls in (s for s in tree.body if isinstance(s, ast.ClassDef)):
        methods = [s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if cls.name not in classes:
            continue  # inlined runtime classes are verbatim source, checked by their own tests
        # a property's setter reuses the property's name on purpose
        methods = [m for m in methods if not any(
            isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in m.decorator_list)]
        bound(methods, f"in class {cls.name}")
        init = next((m for m in methods if m.name == "__init__"), None)
        attrs = [t.attr for s in (init.body if init else []) if isinstance(s, ast.Assign)
                 for t in s.targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                 and t.value.id == "self"]
        duplicates = {a for a in attrs if attrs.count(a) > 1}
        if duplicates:
            raise CodegenError(f"the export would set self.{sorted(duplicates)[0]} twice in {cls.name}; "
                               "please report this")
