"""Reading the project embedded in an exported ``.py`` file, without running it.

The code exporter ends its file with a module-level ``REVSTUDIO_PROJECT = "..."``
holding the project's JSON (adjacent string literals are fine: Python joins
them into one constant). We find that assignment with ``ast`` and take its
literal value; nothing in the file is ever executed or evaluated.
"""
from __future__ import annotations

import ast

CONSTANT = "REVSTUDIO_PROJECT"


class EmbeddedError(ValueError):
    """The file holds no readable ``REVSTUDIO_PROJECT`` string; the message names the file."""


def _target_is_constant(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == CONSTANT for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return isinstance(stmt.target, ast.Name) and stmt.target.id == CONSTANT and stmt.value is not None
    return False


def read_embedded(source_text: str, filename: str = "<export>") -> str:
    """The JSON text of ``REVSTUDIO_PROJECT`` in ``source_text`` (the last module-level assignment)."""
    try:
        tree = ast.parse(source_text, filename=filename)
    except SyntaxError as exc:
        raise EmbeddedError(
            f"{filename}: line {exc.lineno}: not valid Python ({exc.msg}); it cannot hold a revstudio project"
        ) from None
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        raise EmbeddedError(f"{filename}: not readable as Python ({type(exc).__name__}: {exc})") from None
    found: ast.stmt | None = None
    for stmt in tree.body:
        if _target_is_constant(stmt):
            found = stmt
    if found is None:
        raise EmbeddedError(f"{filename} is not a revstudio export (no {CONSTANT} constant)")
    value = found.value  # type: ignore[attr-defined]
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    raise EmbeddedError(
        f"{filename}: line {found.lineno}: {CONSTANT} must be a plain string literal; "
        "re-export the project from revstudio"
    )


def embed(json_text: str) -> str:
    """Python source assigning ``json_text`` to ``REVSTUDIO_PROJECT``, one literal per line.

    ``repr`` escapes quotes, backslashes, newlines and any unicode, so no
    character of the project can become code.
    """
    lines = json_text.splitlines(keepends=True) or [""]
    body = "\n".join(f"    {line!r}" for line in lines)
    return f"{CONSTANT} = (\n{body}\n)\n"
