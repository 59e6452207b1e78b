"""The compiler: lowering to a plan, reversibility analysis, the reversible runtime, nn.Modules.

``plan`` and ``regions`` are torch-free (the editor runs them on every edit);
``compile`` (torch) is loaded lazily so importing this package stays cheap.
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
