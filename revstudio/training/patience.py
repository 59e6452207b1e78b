"""Early stopping: a run ends once its ``val_loss`` has not improved for ``patience`` validations in a row.

An improvement is a finite ``val_loss`` below the best so far by more than ``min_delta`` (the first
finite one is); a NaN is none. The count and that best travel in every checkpoint (``"patience"``),
so a resumed run goes on counting where the stopped one was. The weights to keep are best.pt's
(``checkpoint.Best``, the lowest ``val_loss`` whatever ``min_delta``), which the run's end names.
Torch-free.
"""
from __future__ import annotations

import math
from typing import Any


class Patience:
    """The validations without improvement so far, against the best that counts."""

    def __init__(self, patience: int | None, min_delta: float, resume: dict[str, Any] | None = None) -> None:
        self.patience, self.min_delta = patience, float(min_delta)
        saved = (resume or {}).get("patience")
        self.best: float | None = None
        self.waited = 0
        if isinstance(saved, dict):
            if isinstance(saved.get("best"), (int, float)) and math.isfinite(saved["best"]):
                self.best = float(saved["best"])
            if isinstance(saved.get("waited"), int) and not isinstance(saved["waited"], bool):
                self.waited = max(0, saved["waited"])

    def see(self, val_loss: Any) -> bool:
        """Count one validation's ``val_loss``; whether the run should stop now (never without a patience)."""
        finite = isinstance(val_loss, (int, float)) and math.isfinite(val_loss)
        if finite and (self.best is None or val_loss < self.best - self.min_delta):
            self.best, self.waited = float(val_loss), 0
        else:
            self.waited += 1
        return self.stop

    @property
    def stop(self) -> bool:
        return self.patience is not None and self.waited >= self.patience

    def state(self) -> dict[str, Any]:
        return {"best": self.best, "waited": self.waited}


def early_fields(patience: Patience, step: int, best: Any) -> dict[str, Any]:
    """The ``finished`` row's ``early_stopped``: the step it stopped at, the patience, and the best
    validation's step and ``val_loss`` (best.pt's; None where no validation was finite)."""
    return {"early_stopped": {"step": step, "patience": patience.patience, "min_delta": patience.min_delta,
                              "best_step": best.step, "best_val_loss": best.val_loss}}


def early_words(early: dict[str, Any], best_file: str | None) -> str:
    """The line that says why a run stopped early and where its best weights are."""
    n = early.get("patience")
    why = (f"stopped early at step {early.get('step')}: val_loss has not improved"
           + (f" by more than {early['min_delta']:g}" if early.get("min_delta") else "")
           + f" for {n} validation{'s' * (n != 1)} in a row")
    if early.get("best_step") is None:
        return why + "; no validation gave a finite val_loss, so there are no best weights"
    where = f" are in {best_file}" if best_file else " are best.pt's"
    return why + f"; the best weights (step {early['best_step']}, val_loss {early['best_val_loss']:.4g}){where}"


def early_status(early: dict[str, Any]) -> str:
    """A run's short word for it (status.json's message, the app's run status)."""
    best = early.get("best_step")
    return f"stopped early at step {early.get('step')}" + (f" (best at {best})" if best is not None else "")
