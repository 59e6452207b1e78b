"""Early stopping: a run ends once its ``val_loss`` has not improved for ``patience`` validations in a row.

An improvement is a finite ``val_loss`` below the best so far by more than ``min_delta`` (the first
finite one is); a NaN is none. The count and that best travel in every checkpoint (``"patience"``),
so a resumed run goes on counting where the stopped one was (as Lightning's EarlyStopping state does):
a run that stopped early is refused by ``--resume`` with its own patience (:func:`resume_refusal`), and a
larger ``--patience`` trains on until that many validations in a row, the ones it stopped after included,
have not improved; ``--patience none`` turns it off. The weights to keep are best.pt's
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


def early_stop_facts(saved: dict[str, Any], patience: int | None, min_delta: float) -> dict[str, Any] | None:
    """Where a checkpoint's count already reaches ``patience`` (a run resumed from it would stop at its
    next validation): its step, that patience, its best validation, the count (``waited``) and whether
    the run stopped early itself (``stopped``: its count reached its own patience, the checkpoint's
    config's; a checkpoint without one is taken to have); else None."""
    count = Patience(patience, min_delta, saved)
    if not count.stop:
        return None
    best: dict[str, Any] = saved["best"] if isinstance(saved.get("best"), dict) else {}
    config = saved.get("config")
    own = config.get("patience") if isinstance(config, dict) and "patience" in config else patience
    stopped = isinstance(own, int) and not isinstance(own, bool) and count.waited >= own
    return {"step": saved.get("step"), "patience": patience, "min_delta": float(min_delta),
            "best_step": best.get("step"), "best_val_loss": best.get("val_loss"), "waited": count.waited,
            "stopped": stopped}


def early_reason(early: dict[str, Any], waited: int) -> str:
    """Why a resume of a run that stopped early (its ``finished`` row's ``early_stopped``, or the same
    facts read from its checkpoint) would train nothing: ``waited`` validations without improvement
    already reach the ``patience`` it would go on with. Facts whose ``stopped`` is False (a run that did
    not stop early, resumed with a smaller patience than its count) say so instead."""
    best = early.get("best_step")
    at = f"best at {best}, val_loss {early['best_val_loss']:.4g}" if best is not None else "no finite val_loss"
    rows = f"{waited} validation{'s' * (waited != 1)} in a row"
    if early.get("stopped", True) is False:
        return (f"the run did not stop early, but at step {early.get('step')} ({at}) val_loss has not improved for "
                f"{rows}, which already reaches the patience of {early.get('patience')} given now: it would stop "
                "at its next validation")
    return (f"the run stopped early at step {early.get('step')} ({at}): val_loss has not improved for {rows}, "
            f"and its patience is {early.get('patience')}")


def resume_refusal(early: dict[str, Any], waited: int) -> str:
    """The refusal of ``--resume`` of a run that stopped early, and the two ways to train on."""
    return (early_reason(early, waited) + "; to train on, give a larger --patience (the count of "
            f"{waited} goes on: --patience M stops once M validations in a row have not improved) or "
            "--patience none to turn early stopping off")
