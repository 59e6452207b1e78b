"""Record how the compiler constructed each module, and write that call as Python source.

The exported ``Model`` must build its layers with the very classes and
arguments ``revstudio.compile`` used (same parameter order, names and random
initialisation). Rather than keep a second table of constructor arguments
that could drift, :func:`recording` watches ``__init__`` calls of
``nn.Module`` objects while the compiler builds, and :func:`call_source`
turns a recorded call back into code, writing every value through ``repr``.
"""
from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

_CO_VARARGS = 0x04
_CO_VARKEYWORDS = 0x08


class ConstructionError(ValueError):
    """A constructor argument cannot be written as source; the message says which."""


@dataclass
class Construction:
    """One recorded ``cls(**arguments)`` call; ``obj`` keeps the id stable while recording."""

    obj: Any
    cls: type
    arguments: dict[str, Any]
    varargs: str | None = None
    varkw: str | None = None


@dataclass
class Record:
    """Every module constructed inside a :func:`recording` block, by ``id``."""

    calls: dict[int, Construction] = field(default_factory=dict)

    def of(self, module: Any) -> Construction | None:
        found = self.calls.get(id(module))
        return found if found is not None and found.obj is module else None


@contextmanager
def recording() -> Iterator[Record]:
    """Record the arguments of every ``nn.Module.__init__`` run in this thread.

    A profile hook (not a monkeypatch) sees each ``__init__`` frame on entry,
    when its locals are exactly the call's arguments. The first ``__init__``
    seen for an object is its most derived one; ``super().__init__`` calls
    after it are ignored.
    """
    import torch.nn as nn

    record = Record()
    previous = sys.getprofile()

    def hook(frame: Any, event: str, _arg: Any) -> None:
        if event != "call" or frame.f_code.co_name != "__init__":
            return
        code = frame.f_code
        if not code.co_argcount:
            return
        local = frame.f_locals
        obj = local.get(code.co_varnames[0])
        if not isinstance(obj, nn.Module) or id(obj) in record.calls:
            return
        count = code.co_argcount + code.co_kwonlyargcount
        names = list(code.co_varnames[1:count])
        varargs = varkw = None
        if code.co_flags & _CO_VARARGS:
            varargs = code.co_varnames[count]
            names.append(varargs)
            count += 1
        if code.co_flags & _CO_VARKEYWORDS:
            varkw = code.co_varnames[count]
            names.append(varkw)
        arguments = {name: local[name] for name in names if name in local}
        record.calls[id(obj)] = Construction(obj, type(obj), arguments, varargs, varkw)

    sys.setprofile(hook)
    try:
        yield record
    finally:
        sys.setprofile(previous)


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b) or not isinstance(a, (int, float, str, bool, tuple, list, type(None))):
        return False
    try:
        return bool(a == b)
    except Exception:  # exotic equality: treat as different and write it out
        return False


def value_source(value: Any, module_source: Callable[[Any], str], where: str) -> str:
    """``value`` as a Python expression that needs only torch.

    Modules are written by ``module_source`` (a nested constructor call);
    strings and numbers go through ``repr`` so nothing becomes code.
    """
    import torch

    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "math.nan"
        if math.isinf(value):
            return "math.inf" if value > 0 else "-math.inf"
        return repr(value)
    if isinstance(value, tuple):
        items = [value_source(v, module_source, where) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(value_source(v, module_source, where) for v in value) + "]"
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        inner = ", ".join(f"{k!r}: {value_source(v, module_source, where)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, torch.dtype):
        return str(value)  # 'torch.float32'
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if isinstance(value, torch.nn.Module):
        return module_source(value)
    if isinstance(value, torch.Tensor):
        if value.numel() > 4096:
            raise ConstructionError(f"{where}: a tensor argument of {value.numel()} elements is too large to write")
        return f"torch.tensor({value.detach().cpu().tolist()!r}, dtype={value.dtype})"
    qualified = _torch_callable(value)
    if qualified:
        return qualified
    raise ConstructionError(f"{where}: cannot write a {type(value).__name__} argument as source")


def _torch_callable(value: Any) -> str | None:
    """``torch.relu`` / ``F.gelu`` style references to torch functions."""
    import torch
    import torch.nn.functional as F  # noqa: N812 - the usual alias

    name = getattr(value, "__name__", None)
    if not callable(value) or not name:
        return None
    for prefix, namespace in (("F", F), ("torch", torch)):
        if getattr(namespace, name, None) is value:
            return f"{prefix}.{name}"
    return None


def call_source(
    construction: Construction,
    class_ref: str,
    module_source: Callable[[Any], str],
    where: str,
) -> str:
    """``ClassRef(required, ..., keyword=value)``: defaults that were not changed are left out."""
    try:
        signature = inspect.signature(construction.cls.__init__)  # type: ignore[misc]
    except (TypeError, ValueError):
        signature = None
    if signature is None:
        if construction.arguments:
            raise ConstructionError(f"{where}: cannot read the signature of {construction.cls.__name__}")
        return f"{class_ref}()"
    params = list(signature.parameters.values())[1:]
    # Parameters before a ``*args`` can only be passed by position.
    star = next((i for i, p in enumerate(params) if p.kind is p.VAR_POSITIONAL), -1)
    args: list[str] = []
    keywords: list[str] = []
    positional_ok = True
    values = construction.arguments
    for i, param in enumerate(params):
        if param.name not in values:
            positional_ok = False
            continue
        value = values[param.name]
        if param.kind is param.VAR_POSITIONAL:
            args += [value_source(v, module_source, where) for v in value]
        elif param.kind is param.VAR_KEYWORD:
            keywords += [f"{k}={value_source(v, module_source, where)}" for k, v in value.items()]
        elif i < star:
            args.append(value_source(value, module_source, where))
        elif param.default is not param.empty and _same(value, param.default):
            positional_ok = False  # later arguments must be named once one is left out
        elif param.default is param.empty and positional_ok and param.kind is not param.KEYWORD_ONLY:
            args.append(value_source(value, module_source, where))
        else:
            positional_ok = False
            keywords.append(f"{param.name}={value_source(value, module_source, where)}")
    return f"{class_ref}({', '.join(args + keywords)})"
