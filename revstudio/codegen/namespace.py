"""One namespace that turns project text (node ids, names, group names) into identifiers.

Nothing from a project file reaches generated code except through
:meth:`Namespace.name` (which yields a legal, unique ASCII identifier that is
never a keyword, soft keyword, builtin or a name the generated file itself
uses) or through ``repr``/JSON. The same text always maps to the same name.
"""
from __future__ import annotations

import builtins
import keyword
import re
import unicodedata
from collections.abc import Callable, Hashable, Iterable

# nn.Module's attributes and the ones compiled and exported models add (torch-free list)
from revstudio.compiler.plan import MODULE_ATTRS

# Names the exported file defines or imports itself; a project id must never shadow them.
RESERVED: frozenset[str] = frozenset(
    {
        "torch", "nn", "F", "math", "typing", "argparse", "json", "os", "sys", "self", "cls",
        "Model", "main", "train", "inputs", "outputs", "args", "kwargs", "mode", "annotations",
        "REVSTUDIO_PROJECT", "MODES", "INPUTS", "synthetic_batch", "region_dtypes", "checkpoint", "contextlib",
        "Callable", "Any",
    }
)

_FORBIDDEN: frozenset[str] = frozenset(
    set(keyword.kwlist) | set(getattr(keyword, "softkwlist", ())) | set(dir(builtins)) | RESERVED
)
_NON_WORD = re.compile(r"[^0-9A-Za-z_]+")
_MAX_LENGTH = 40  # long ids stay findable (the id is in a comment) but lines stay short


def comment_text(text: str) -> str:
    """Project text fit for a ``#`` comment: ``ascii`` escapes every newline and non-ASCII character."""
    return ascii(str(text))[1:-1]


def docstring_text(text: str) -> str:
    """Project text fit for a docstring: only plain characters survive; quotes and backslashes never."""
    return re.sub(r"[^A-Za-z0-9 _.,:;()+=/-]+", "_", str(text))[:80]


def sanitize(text: str, fallback: str = "v") -> str:
    """Text -> a readable ASCII identifier stem (not yet unique or reserved-safe).

    Accents are dropped (``héllo`` -> ``hello``), anything else that is not a
    word character becomes ``_``, and leading underscores are removed because
    ``self.__x`` would be name-mangled inside a class body.
    """
    folded = unicodedata.normalize("NFKD", str(text))
    ascii_text = "".join(ch for ch in folded if not unicodedata.combining(ch))
    stem = _NON_WORD.sub("_", ascii_text).strip("_").lower()
    stem = re.sub(r"_+", "_", stem)[:_MAX_LENGTH].rstrip("_")
    if not stem:
        stem = fallback
    if stem[0].isdigit():
        stem = f"{fallback}_{stem}"
    return stem


def is_safe_identifier(name: str) -> bool:
    """A legal ASCII identifier that shadows nothing the generated file relies on."""
    return (
        name.isidentifier()
        and name.isascii()
        and name not in _FORBIDDEN
        and not name.startswith("__")
    )


def is_safe_attribute(name: str) -> bool:
    """A legal public attribute name of a generated module (``self.F`` and ``self.Model`` are fine)."""
    return (
        name.isidentifier()
        and name.isascii()
        and not keyword.iskeyword(name)
        and not name.startswith("_")
        and name not in MODULE_ATTRS
        and name not in dir(object)
    )


class Namespace:
    """Hands out unique, legal, never-reserved identifiers.

    ``name(text, key)`` is idempotent per ``key`` (default: the text itself),
    so asking twice for the same node id gives the same identifier, while two
    different ids that sanitise alike (``a-b`` and ``a.b``) get ``a_b`` and
    ``a_b_1``.
    """

    def __init__(self, taken: Iterable[str] = (), parent: Namespace | None = None) -> None:
        self._used: set[str] = set(taken)
        self._by_key: dict[Hashable, str] = {}
        self._parent = parent

    def _is_free(self, name: str) -> bool:
        if name in self._used or not is_safe_identifier(name):
            return False
        return self._parent is None or self._parent._is_free(name)

    def reserve(self, name: str) -> None:
        """Mark an identifier the generated code uses itself."""
        self._used.add(name)

    def name(self, text: str, key: Hashable | None = None, fallback: str = "v",
             style: Callable[[str], str] | None = None) -> str:
        """The identifier for ``text`` (cached under ``key``).

        ``style`` turns the snake_case stem into its final form (``camel`` for a
        class); uniqueness is decided on that final form, so two stems that style
        alike (``x1`` and ``x_1`` both ``X1``) still get two names.
        """
        cache_key = text if key is None else key
        if cache_key in self._by_key:
            return self._by_key[cache_key]
        stem = sanitize(text, fallback)
        shape = style or (lambda s: s)
        # A keyword or builtin reads best with a trailing underscore (``class_``);
        # a clash between two ids is told apart by a counter (``a_b_1``).
        candidate = shape(stem)
        if not is_safe_identifier(candidate):
            candidate = shape(f"{stem}_") if style is None else f"{candidate}_"
        i = 1
        while not self._is_free(candidate):
            candidate = shape(f"{stem}_{i}")
            if style is not None and not is_safe_identifier(candidate):
                candidate += "_"
            i += 1
        self._used.add(candidate)
        self._by_key[cache_key] = candidate
        return candidate

    def child(self) -> Namespace:
        """A nested scope (a function body) that avoids every name taken here."""
        return Namespace(parent=self)

    def __contains__(self, name: object) -> bool:
        return name in self._used


def camel(name: str) -> str:
    """``group_x_1`` -> ``GroupX1``: a class name (always starting with a letter)."""
    parts = [p for p in name.split("_") if p]
    text = "".join(p[:1].upper() + p[1:] for p in parts) or "Group"
    return text if text.isidentifier() else "Group" + text
