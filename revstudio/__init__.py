"""revstudio: a studio for memory-saving reversible neural networks.

The scripting API (DESIGN section 3) is loaded lazily so that
``import revstudio`` stays cheap and never imports torch or Qt by itself::

    import revstudio as rs
    g = rs.load("model.revs")
    report = rs.check(g)
    model = rs.compile(g, mode="reversible", device="cpu")
    src = rs.export(g)
    run = rs.train(g, steps=200)        # what `revstudio train` does, in this process
    rs.memory(g, batch=8)                # `revstudio memory`: measured peaks beside the estimate
    rs.runs("runs")                      # `revstudio runs`: past runs and how they ended
    rs.evaluate(run)                     # `revstudio evaluate`: a trained run scored on data
    rs.sample(run, 16)                   # `revstudio sample`: a trained flow's inverse on Gaussian noise

(docs/python.md). ``dir(rs)`` lists this API only (``__all__``).
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Graph": ("revstudio.core.graph", "Graph"),
    "load": ("revstudio.core.project", "load"),
    "save": ("revstudio.core.project", "save"),
    "check": ("revstudio.diagnostics.check", "full_check"),
    "compile": ("revstudio.compiler", "compile"),
    "export": ("revstudio.codegen", "export"),
    "load_weights": ("revstudio.compiler.foreign_weights", "load_weights"),
    "gradcheck": ("revstudio.diagnostics.gradcheck_api", "gradcheck"),
    "train": ("revstudio.training.train_api", "train"),
    "TrainFailed": ("revstudio.training.train_api", "TrainFailed"),
    "memory": ("revstudio.diagnostics.memory_api", "memory"),
    "runs": ("revstudio.training.runs_api", "runs"),
    "evaluate": ("revstudio.training.evaluate_api", "evaluate"),
    "sample": ("revstudio.training.sampling_api", "sample"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'revstudio' has no attribute {name!r}")


def __dir__() -> list[str]:
    # the API only, the lazy names included: a notebook's completion (rs.<Tab>) and dir(rs) list
    # them before first use, and not this module's own helpers (Any, annotations, _LAZY)
    return sorted(__all__)


__all__ = ["Graph", "TrainFailed", "__version__", "check", "compile", "evaluate", "export", "gradcheck", "load",
           "load_weights", "memory", "runs", "sample", "save", "train"]
