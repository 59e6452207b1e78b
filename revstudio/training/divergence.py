"""A loss that grew by orders of magnitude: a run diverging while its numbers are still finite.

NaN and Inf end a run (:mod:`.nonfinite`), but a loss of 1e10 is finite, and a run used to finish
with it and say nothing. :class:`DivergenceWatch` compares every step's loss with the run's start
(the lowest loss of its first :data:`START_STEPS` steps, kept in the checkpoint so a resumed run
measures against the same start) and warns once, with an ``event: "diverged"`` row, when the loss
rose above that start by more than :data:`FACTOR` times the start's size (at least 1, so a loss
near 0 does not trip on noise). The run goes on: a spike may come back down, and a stop is the
user's to ask for (the app's Stop, Ctrl-C); the final row and the run's status repeat the warning.

Healthy runs stay below the rule: every example project at its own learning rate keeps its loss
within 10 times its start's size above the start, and at 10 times that rate never trips the rule
(digits_revnet comes closest: a spike to about 430 times its start); tests/training/test_divergence.py
trains them all 30 steps at batch 16 and asserts both.
"""
from __future__ import annotations

import math
from typing import Any

START_STEPS = 10   # the steps whose lowest loss is the start
FACTOR = 1000.0    # how many times the start's size the loss may rise above it


class DivergenceWatch:
    """Follows a run's step losses; :meth:`see` returns the warning's message once, when it diverges."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        state = state if isinstance(state, dict) else {}
        self.start = _number(state.get("start"))
        self.seen = int(state.get("seen") or 0)
        self.warned: dict[str, Any] | None = state.get("warned") if isinstance(state.get("warned"), dict) else None

    def state(self) -> dict[str, Any]:
        """What the checkpoint keeps (plain numbers: loaded with ``weights_only=True``)."""
        return {"start": self.start, "seen": self.seen, "warned": self.warned}

    def limit(self) -> float | None:
        """The loss above which the run counts as diverged (None before its first step)."""
        if self.start is None:
            return None
        return self.start + FACTOR * max(abs(self.start), 1.0)

    def see(self, step: int, loss: float) -> bool:
        """Take step ``step``'s loss; True the first time it is over the limit (then :attr:`warned`
        holds the row's numbers)."""
        if not math.isfinite(loss):
            return False  # (the nan row's to report)
        if self.seen < START_STEPS:
            self.start = loss if self.start is None else min(self.start, loss)
            self.seen += 1
        limit = self.limit()
        if self.warned is not None or limit is None or loss <= limit:
            return False
        self.warned = {"step": step, "loss": loss, "start": self.start}
        return True


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def diverged_message(warned: dict[str, Any], cfg: Any, task: str, advice: str = "") -> str:
    """The ``diverged`` row's message: what grew, how much, and what to try."""
    loss, start = float(warned["loss"]), float(warned["start"])
    unit = " bits per dimension" if task == "flow" else ""
    clip = (f"a tighter --grad-clip (now {cfg.grad_clip:g})" if cfg.grad_clip is not None
            else "--grad-clip 1.0")  # (the app says "gradient clipping 1.0 (Run > Run Settings)")
    return (f"the loss diverged: {loss:.4g}{unit} at step {warned['step']}, against {start:.4g} at the start "
            f"(it rose by more than {FACTOR:g} times the start's size). The run goes on, as a spike may come back "
            f"down; stop it if the loss stays up. Try a lower --lr (now {cfg.lr:g}) or {clip}{advice}")


def watch_step(run: Any, watch: DivergenceWatch, step: int, loss: float, task: str) -> None:
    """Emit the ``diverged`` row (once) if step ``step``'s loss is the one that diverged."""
    if not watch.see(step, loss) or watch.warned is None:
        return
    from revstudio.diagnostics.coupling_init import identity_start_advice

    msg = diverged_message(watch.warned, run.cfg, task, identity_start_advice(run.graph) if task == "flow" else "")
    watch.warned["message"] = msg
    run.emit({"kind": "event", "event": "diverged", "step": step, "loss": loss, "start": watch.warned["start"],
              "message": msg})


def warning_fields(watch: DivergenceWatch) -> dict[str, Any]:
    """The ``finished`` (or ``stopped``) row's ``warning``, when the run diverged."""
    if watch.warned is None:
        return {}
    return {"warning": str(watch.warned.get("message") or "the loss diverged"),
            "diverged_at": watch.warned.get("step")}
