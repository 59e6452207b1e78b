"""What a gradient check found: :class:`GradReport` (the verdict, the failures naming each tensor,
region or node, the JSON of ``revstudio gradcheck --json``) and :func:`summarize`, the CLI's lines.
``gradcheck.compare_modes`` fills it in; torch-free.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from revstudio.core.notebook_repr import NotebookRepr, short_repr


@dataclass
class TensorError:
    """How far one tensor's gradient (or value) in a mode is from standard mode's."""

    name: str
    max_abs: float      # max |other - standard|
    error: float        # max_abs / the global gradient norm (or the reference scale)
    norm: float         # |standard| (2-norm), for context

    def to_json(self) -> dict[str, float]:
        return {"error": self.error, "max_abs": self.max_abs, "norm": self.norm}


# how many failures ``repr(GradReport)`` lists before it says how many more there are
REPR_FAILURES = 5


@dataclass
class GradReport(NotebookRepr):
    """The outcome of :func:`compare_modes`; ``ok`` is the pass/fail verdict."""

    dtype: str
    batch: int
    seed: int
    tolerance: float
    mode: str
    gradient_norm: float
    parameters: list[TensorError] = field(default_factory=list)
    inputs: list[TensorError] = field(default_factory=list)
    outputs: list[TensorError] = field(default_factory=list)
    buffers: list[TensorError] = field(default_factory=list)
    inversion: dict[str, float] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)
    # where a region's inversion error is over the tolerance: per node of its steps whose layer
    # has an inverse, |x - inverse(forward(x))| relative to x (:func:`node_inversion_errors`)
    node_inversion: dict[str, float] = field(default_factory=dict)
    node_types: dict[str, str] = field(default_factory=dict)  # those nodes' types

    def _all(self) -> list[TensorError]:
        return [*self.parameters, *self.inputs, *self.outputs, *self.buffers]

    @property
    def max_error(self) -> float:
        return max((t.error for t in self._all()), default=0.0)

    @property
    def max_inversion_error(self) -> float | None:
        """The worst measured region; None where no region's inversion error was measured (none
        is 0.0 for that: a region the runtime could not measure is absent from ``inversion``)."""
        return max(self.inversion.values(), default=None)

    def failures(self) -> list[str]:
        """One line per disagreement, naming the tensor or region and the numbers."""
        out = [f"{t.name}: error {t.error:.3g} > {self.tolerance:g}" for t in self._all()
               if not t.error <= self.tolerance]
        out += [f"region {rid}: inversion error {e:.3g} > {self.tolerance:g}"
                for rid, e in self.inversion.items() if not e <= self.tolerance]
        out += [f"{name}: exists in only one mode" for name in self.unmatched]
        out += [_inverse_failure(node, self.node_types.get(node, "?"), e)
                for node, e in self.node_inversion.items() if not e <= self.tolerance]
        return out

    @property
    def ok(self) -> bool:
        return not self.failures()

    def __repr__(self) -> str:
        # a notebook's display: the verdict and the worst figures, not one entry per tensor
        failures = self.failures()
        inv = self.max_inversion_error
        head = (f"<GradReport {self.mode} vs standard, {self.dtype}, batch {self.batch}: "
                f"{'OK' if not failures else f'{len(failures)} FAILED'} (tolerance {self.tolerance:g}); "
                f"max error {self.max_error:.3g} over {len(self._all())} tensors"
                + (f", max inversion error {inv:.3g}" if inv is not None else "") + ">")
        return short_repr(head, failures, REPR_FAILURES, "report.failures()")

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "mode": self.mode,
            "reference": "standard",
            "dtype": self.dtype,
            "batch": self.batch,
            "seed": self.seed,
            "tolerance": self.tolerance,
            "max_error": self.max_error,
            "gradient_norm": self.gradient_norm,
            "parameters": {t.name: t.to_json() for t in self.parameters},
            "inputs": {t.name: t.to_json() for t in self.inputs},
            "outputs": {t.name: t.to_json() for t in self.outputs},
            "buffers": {t.name: t.to_json() for t in self.buffers},
            "inversion_error": dict(self.inversion),
            "node_inversion_error": dict(self.node_inversion),
            "max_inversion_error": self.max_inversion_error,
            "unmatched": list(self.unmatched),
            "failures": self.failures(),
        }


def _inverse_failure(node: str, type_id: str, error: float) -> str:
    """A failure line for a node whose layer does not invert, naming the plugin that declares its
    type (where one does)."""
    from revstudio.core.spec import registry

    provider = registry.provider(type_id)
    blame = (f": a bug in the plugin {provider.label}; update the plugin or tell its authors"
             if provider is not None and not provider.builtin else "")
    return (f"node {node} ({type_id}): inverse(forward(x)) differs from x by {error:.3g}; "
            f"the layer's inverse does not undo its forward{blame}")


def summarize(report: GradReport, limit: int = 20) -> list[str]:
    """Human lines for the CLI: worst tensors first."""
    lines = [f"{report.mode} vs standard, {report.dtype}, batch {report.batch}, seed {report.seed}: "
             f"max error {report.max_error:.3g} (tolerance {report.tolerance:g}), "
             f"gradient norm {report.gradient_norm:.4g}"]
    rows: list[tuple[str, str, TensorError]] = []
    rows += [("param", t.name, t) for t in report.parameters]
    rows += [("input", t.name, t) for t in report.inputs]
    rows += [("output", t.name.removeprefix("output "), t) for t in report.outputs]
    rows += [("buffer", t.name.removeprefix("buffer "), t) for t in report.buffers]
    rows.sort(key=lambda r: -r[2].error)
    width = max([len(r[1]) for r in rows[:limit]] + [4])
    lines.append(f"  {'kind':<7}{'name':<{width}}  {'error':>10}  {'max |diff|':>10}  {'|grad|':>10}")
    for kind, name, t in rows[:limit]:
        lines.append(f"  {kind:<7}{name:<{width}}  {t.error:>10.3g}  {t.max_abs:>10.3g}  {t.norm:>10.3g}")
    if len(rows) > limit:
        rest = rows[limit][2].error
        how = f"errors at most {rest:.3g}" if rest > 0 else "all exactly equal"
        lines.append(f"  ... and {len(rows) - limit} more ({how})")
    for rid, err in sorted(report.inversion.items()):
        lines.append(f"  region {rid}: inversion error {err:.3g}")
    for node, err in sorted(report.node_inversion.items(), key=lambda item: -item[1]):
        lines.append(f"    node {node}: inverse(forward(x)) error {err:.3g}")
    return lines
