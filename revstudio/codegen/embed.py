"""The project embedded in an exported file as data, and read back without running it.

An export ends with ``REVSTUDIO_PROJECT = (...)``: the project's JSON text as
adjacent string literals, one per JSON line, each written with ``repr`` so no
character of the project can become code. Reading it back parses the file with
``ast`` and evaluates only that literal; the file is never executed.
"""
from __future__ import annotations

import ast

CONSTANT = "REVSTUDIO_PROJECT"


class EmbeddedProjectError(ValueError):
    """The source holds no readable ``REVSTUDIO_PROJECT`` string constant."""


def embed(json_text: str) -> str:
    """The module-level assignment that carries ``json_text``.

    Each line becomes its own literal so the constant reads like the JSON it
    holds; ``repr`` escapes quotes, backslashes, newlines and any unicode.
    """
    lines = json_text.splitlines(keepends=True) or [""]
    body = "\n".join(f"    {line!r}" for line in lines)
    return f"{CONSTANT} = (\n{body}\n)\n"


def extract(source: str, filename: str = "<export>") -> str:
    """The JSON text embedded in ``source`` (a Python file), found with ``ast``.

    Raises :class:`EmbeddedProjectError` naming ``filename`` when the file does
    not parse or carries no such constant.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise EmbeddedProjectError(
            f"{filename}: line {exc.lineno}: not valid Python ({exc.msg}); it cannot hold a revstudio project"
        ) from None
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target = stmt.targets[0]
        if isinstance(target, ast.Name) and target.id == CONSTANT:
            value = stmt.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
            raise EmbeddedProjectError(
                f"{filename}: line {stmt.lineno}: {CONSTANT} must be a plain string constant"
            )
    raise EmbeddedProjectError(f"{filename} is not a revstudio export (no {CONSTANT} constant)")
