"""Reading the project embedded in an exported ``.py`` file, without running it.

The code exporter ends its file with a module-level ``REVSTUDIO_PROJECT = "..."``
holding the project's JSON (adjacent string literals are fine: Python joins
them into one constant). We find that assignment with ``ast`` and take its
literal value; nothing in the file is ever executed or evaluated.

The bytes are decoded as Python would (PEP 263 ``# coding:`` lines, a BOM;
an encoding Python refuses is refused), and a file whose code is too large to
parse cheaply (a syntax tree costs hundreds of bytes per token) is read from
the constant's own statement only, found by a scan of its lines.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize

CONSTANT = "REVSTUDIO_PROJECT"
# Code (everything but the constant's statement) up to this size is parsed whole, so
# the file is checked exactly as Python would read it; beyond it only the statement is.
FULL_PARSE_BYTES = 1 << 20
_ASSIGNMENT = re.compile(r"^REVSTUDIO_PROJECT[ \t]*(?::[^\n=]*)?=(?!=)", re.M)


class EmbeddedError(ValueError):
    """The file holds no readable ``REVSTUDIO_PROJECT`` string; the message names the file."""


def holds_embedded(text: str) -> bool:
    """Whether ``text`` assigns the embedded project as ``revstudio export`` writes it (a ``.py`` renamed)."""
    return _ASSIGNMENT.search(text) is not None


def _target_is_constant(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == CONSTANT for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return isinstance(stmt.target, ast.Name) and stmt.target.id == CONSTANT and stmt.value is not None
    return False


def decode_source(data: bytes, filename: str = "<export>") -> str:
    """``data`` decoded as Python decodes source: BOM, then a ``# coding:`` line, else UTF-8.

    An encoding Python would refuse (unknown, or not a text encoding Python accepts
    for source, such as rot13 or utf-7) raises :class:`EmbeddedError` with Python's words.
    """
    try:
        encoding, lines = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise EmbeddedError(f"{filename}: {exc.msg if hasattr(exc, 'msg') else exc}; Python cannot read it") from None
    if encoding not in ("utf-8", "utf-8-sig"):
        # Python's own tokenizer judges the declaration (it refuses rot13 and utf-7, which
        # detect_encoding names without complaint); only the declaring lines are compiled
        try:
            compile(b"".join(lines) + b"\n", filename, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as exc:
            if "encoding" in str(exc.msg):
                # Python's advice ("use codecs.decode() to handle arbitrary codecs") is for code
                # that reads the file, not for its user: leave it out
                msg = str(exc.msg).split("; use codecs.decode()")[0]
                raise EmbeddedError(f"{filename}: line {exc.lineno or 1}: {msg}; Python cannot read "
                                    "it, so it cannot hold a revstudio project; save it as UTF-8") from None
        except (ValueError, MemoryError, RecursionError):
            pass
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        where = f" (byte {exc.start})" if isinstance(exc, UnicodeDecodeError) else ""
        raise EmbeddedError(f"{filename}: not valid {encoding} text{where}, the encoding it declares") from None


def _position(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line}, column {offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def not_an_export(filename: str) -> str:
    """A .py file without the constant: most often a model of the user's own, written in PyTorch."""
    return (f"{filename} is not a revstudio export (no {CONSTANT} constant); open a .revs project, or a "
            ".py file that revstudio export wrote. A PyTorch model of your own (MemCNN, RevLib, plain "
            "torch) is not read from its code: rebuild it as a graph (in the editor, or with rs.Graph from "
            "Python) and load its weights with rs.load_weights (docs/porting.md)")


def read_embedded(source_text: str, filename: str = "<export>") -> str:
    """The JSON text of ``REVSTUDIO_PROJECT`` in ``source_text`` (the last module-level assignment)."""
    nul = source_text.find("\0")
    if nul >= 0:
        raise EmbeddedError(f"{filename}: {_position(source_text, nul)}: a NUL byte; Python refuses source "
                            "code with null bytes, so it cannot hold a revstudio project")
    matches = list(_ASSIGNMENT.finditer(source_text))
    if not matches:
        if len(source_text) <= FULL_PARSE_BYTES:
            _parse(source_text, filename, 1)  # invalid Python is the clearer message
        raise EmbeddedError(not_an_export(filename))
    match = matches[-1]
    end = _statement_end(source_text, match.start())
    if end is not None and len(source_text) - (end - match.start()) > FULL_PARSE_BYTES:
        # a huge file: its code is not parsed, only the constant's own statement
        first_line = source_text.count("\n", 0, match.start()) + 1
        tree = _parse(source_text[match.start():end], filename, first_line)
    else:
        tree = _parse(source_text, filename, 1)
    found: ast.stmt | None = None
    for stmt in tree.body:
        if _target_is_constant(stmt):
            found = stmt
    if found is None:
        raise EmbeddedError(not_an_export(filename))
    value = found.value  # type: ignore[attr-defined]
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    raise EmbeddedError(
        f"{filename}: line {found.lineno}: {CONSTANT} must be a plain string literal; "
        "re-export the project from revstudio"
    )


def _statement_end(text: str, start: int) -> int | None:
    """The offset just past the statement starting at ``start`` (None: it does not tokenize)."""
    lines = io.StringIO(text[start:])
    try:
        for token in tokenize.generate_tokens(lines.readline):
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                return start + lines.tell() if token.type == tokenize.NEWLINE else len(text)
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


def _parse(text: str, filename: str, first_line: int) -> ast.Module:
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        line = (exc.lineno or 1) + first_line - 1
        raise EmbeddedError(
            f"{filename}: line {line}: not valid Python ({exc.msg}); it cannot hold a revstudio project"
        ) from None
    except MemoryError:
        raise EmbeddedError(f"{filename}: too large to read as Python ({len(text) >> 20} MB of code ran this "
                            "machine out of memory); not a revstudio export") from None
    except (ValueError, RecursionError) as exc:  # absurd nesting
        raise EmbeddedError(f"{filename}: not readable as Python ({type(exc).__name__}: {exc})") from None
    return tree


def embed(json_text: str) -> str:
    """Python source assigning ``json_text`` to ``REVSTUDIO_PROJECT``, one literal per line.

    ``repr`` escapes quotes, backslashes, newlines and any unicode, so no
    character of the project can become code.
    """
    lines = json_text.splitlines(keepends=True) or [""]
    body = "\n".join(f"    {line!r}" for line in lines)
    return f"{CONSTANT} = (\n{body}\n)\n"
