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
from collections.abc import Hashable, Iterable

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

    def name(self, text: str, key: Hashable | None = None, fallback: str = "v") -> str:
        """The identifier for ``text`` (cached under ``key``)."""
        cache_key = text if key is None else key
        if cache_key in self._by_key:
            return self._by_key[cache_key]
        stem = sanitize(text, fallback)
        # A keyword or builtin reads best with a trailing underscore (``class_``);
        # a clash between two ids is told apart by a counter (``a_b_1``).
        candidate = stem if is_safe_identifier(stem) else f"{stem}_"
        i = 1
        while not self._is_free(candidate):
            candidate = f"{stem}_{i}"
            i += 1
        self._used.add(candidate)
        self._by_key[cache_key] = candidate
        return candidate

    def child(self) -> Namespace:
        """A nested scope (a function body) that avoids every name taken here."""
        return Namespace(parent=self)

    def __contains__(self, name: object) -> bool:
        return name in self._used
