"""Export a project as readable, standalone PyTorch code (DESIGN section 8).

``export(graph)`` lowers the graph with the compiler's own plan, records how the
compiler constructs every layer, and writes a ``.py`` file that needs only torch:
``class Model(nn.Module)`` with the compiled module's ``state_dict`` keys, the
reversible runtime inline, and the project embedded as data for reopening.
"""
from __future__ import annotations

from typing import Any

from .files import relocated_training, write_source


class CodegenError(ValueError):
    """The graph cannot be exported; ``problems`` lists what to fix (each names its node)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems or [message])


def export(graph: Any, *, with_training: bool = False, training: dict[str, Any] | None = None,
           onnx: Any = None, weights: Any = None, opset: int | None = None) -> Any:
    """Returns the standalone Python source of ``graph`` (an ``rs.Graph``) as a ``str``; nothing
    is written (``open(path, "w").write(source)`` or ``revstudio export`` writes it).

    ``with_training`` adds a training script. ``training`` replaces the project's own
    ``training`` section in the file (the script's and the embedded project's, so with or
    without ``with_training``); it is checked as ``revstudio train`` checks the section, and a
    bad key or value raises :class:`CodegenError` naming it.

    ``onnx`` (a path) writes the network as an ONNX file instead (``revstudio export FILE -o OUT.onnx``),
    with ``weights`` (a run folder, a checkpoint, a state_dict file or a state_dict) and ``opset``,
    and returns what it wrote (:class:`~revstudio.codegen.onnx_export.OnnxExport`)."""
    from revstudio.core.scripting import expect_graph

    from .emit import generate

    expect_graph(graph, "rs.export")
    if onnx is not None or weights is not None or opset is not None:
        from .onnx_export import export_api

        return export_api(graph, onnx, weights=weights, opset=opset, with_training=with_training, training=training)
    if training is not None and not isinstance(training, dict):
        raise TypeError(f"rs.export: training must be a dict like the project's training section "
                        f"({{'lr': 0.001, 'steps': 400}}), got {type(training).__name__}")
    if training is not None:  # (embedded in the reopenable project even without the script)
        from revstudio.training.config import ConfigError, TrainConfig

        try:
            TrainConfig.from_section(training)
        except ConfigError as exc:
            raise CodegenError(f"rs.export: the training section does not fit: {exc}") from None
    return generate(graph, with_training=with_training, training=training)


__all__ = ["CodegenError", "export", "relocated_training", "write_source"]
