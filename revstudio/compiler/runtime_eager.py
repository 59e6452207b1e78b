"""``eager``: ``torch.compiler.disable`` applied on first use inside ``torch.compile``.

``torch.compiler.disable`` imports ``torch._dynamo`` (seconds, more than ``import torch``
itself), so applying it as a decorator made every import of the runtime, and of every
exported file, pay for the compiler whether or not anything was ever compiled. ``eager``
calls the function directly until a trace sees it (``torch.compiler.is_compiling``, which
dynamo reads as True while tracing), and there calls the disabled function, made once:
dynamo skips it as it skipped the decorated one, a graph break, and it runs eagerly.
Imports only torch and the standard library: the code exporter inlines this file verbatim.
"""
import functools
from collections.abc import Callable
from typing import Any

import torch

# function -> torch.compiler.disable(function), made the first time a trace calls it
_DISABLED: dict[Callable[..., Any], Callable[..., Any]] = {}


def eager(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` that ``torch.compile`` never traces (as ``@torch.compiler.disable``) and that
    imports nothing until a trace reaches it."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if torch.compiler.is_compiling():
            return run_eagerly(fn, *args, **kwargs)
        return fn(*args, **kwargs)

    return call


def run_eagerly(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` through ``torch.compiler.disable(fn)``, made once per ``fn``: for a
    trace that reaches ``fn`` (a method can ask ``torch.compiler.is_compiling()`` itself, where its
    class is written before this file's functions, as an exported ``Model`` is)."""
    disabled = _DISABLED.get(fn)
    if disabled is None:
        disabled = _DISABLED[fn] = torch.compiler.disable(fn)
    return disabled(*args, **kwargs)
