"""The compiler: lowering to a plan, reversibility analysis, the reversible runtime, nn.Modules.

``plan`` (``lower``) and ``regions`` (``analyze``) are torch-free (the editor runs
them on every edit); ``compile`` / ``CompiledModel`` (torch) load lazily so that
importing this package stays cheap. ``runtime`` imports only torch and is
inlined verbatim by the code exporter.
"""
from __future__ import annotations

from typing import Any

from .plan import CompileError, Plan, lower
from .regions import Region, RegionAnalysis, analyze

__all__ = ["CompileError", "CompiledModel", "Plan", "Region", "RegionAnalysis", "analyze", "compile", "lower"]


def __getattr__(name: str) -> Any:
    if name in ("compile", "CompiledModel"):
        from . import module

        return getattr(module, name)
    raise AttributeError(f"module 'revstudio.compiler' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})  # (the lazy compile and CompiledModel too: completion)
