"""A run that is not learning: its loss has not fallen, or its accuracy stays at chance.

Labels that do not belong to their inputs (shuffled, or a ``y`` in another order than its ``x``)
or a learning rate so small that nothing moves give a run that goes on to its end and looks
finished. :class:`LearningWatch` looks once, at :func:`check_step` (one epoch, but at least
:data:`MIN_STEPS` and at most :data:`MAX_STEPS` steps; a run that ends sooner, at its last step),
and warns with an ``event: "not_learning"`` row when the mean loss of the last :data:`LOSS_STEPS`
steps is not below the mean of the first by :data:`FALL` of its size, or a classification's
training accuracy over the last :data:`ACC_STEPS` steps is within :data:`SIGMAS` standard errors
of chance: the share of the most frequent label among the labels trained on so far (what always
guessing that class scores; 1 / classes where the labels are balanced or unknown). The run goes
on; the final row and the run's status repeat the note, as for ``diverged``. A run shorter than
:data:`MIN_STEPS` is not judged, and its end says so (:func:`unchecked_note`) unless its accuracy is
plainly above chance (:meth:`LearningWatch.plainly_learns`): at 40 steps, two_branch
at its own settings had fallen by only 1.2 % at chance accuracy, and would have been told wrongly.

Measured on the example projects at their own settings (tests/training/test_not_learning.py trains
them all): at the check their loss has fallen by 9 % (glow_flow, the slowest) to 94 %, and every
classification is far above chance; two_branch with shuffled labels falls by -0.2 % at 23 %
accuracy (chance 25 %), and at lr 1e-7 by 0.0 %.
"""
from __future__ import annotations

import math
from typing import Any

MIN_STEPS = 100   # the earliest step the rule looks at
MAX_STEPS = 1000  # the latest: a large data set's first epoch is not waited for
LOSS_STEPS = 10   # the steps whose mean loss is the start, and the latest
ACC_STEPS = 50    # the steps whose accuracy is measured against chance
FALL = 0.02       # the share of the start's size the loss must have fallen by
SIGMAS = 3.0      # how many standard errors above chance an accuracy must be


def check_step(steps_per_epoch: int, total: int | None = None) -> int | None:
    """The step at which the rule looks: one epoch (at least MIN_STEPS, at most MAX_STEPS), or
    the last of a run of ``total`` steps that ends sooner; None for a run shorter than MIN_STEPS."""
    at = max(MIN_STEPS, min(steps_per_epoch, MAX_STEPS))
    if total is not None and total < at:
        return total if total >= MIN_STEPS else None
    return at


class LearningWatch:
    """Follows a run's step losses and correct counts; :meth:`see` is True once, when the run is not learning."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        state = state if isinstance(state, dict) else {}
        self.first: list[float] = _numbers(state.get("first"))
        self.last: list[float] = _numbers(state.get("last"))
        self.hits: list[list[float]] = [h for h in state.get("hits") or [] if _pair(h)]
        self.labels: list[float] = _numbers(state.get("labels"))  # each class's count among the labels seen
        self.checked = bool(state.get("checked"))
        self.seen = int(state["seen"]) if isinstance(state.get("seen"), int) else 0
        self.warned: dict[str, Any] | None = state.get("warned") if isinstance(state.get("warned"), dict) else None
        self.classes: int | None = None  # (of the last step seen)

    def state(self) -> dict[str, Any]:
        """What the checkpoint keeps (plain numbers: loaded with ``weights_only=True``)."""
        return {"first": self.first, "last": self.last, "hits": self.hits, "labels": self.labels,
                "checked": self.checked, "seen": self.seen, "warned": self.warned}

    def see(self, step: int, loss: float, correct: float, count: float, at: int, classes: int | None,
            labels: list[float] | None = None) -> bool:
        """Take step ``step``'s mean loss, its correct/total predictions and its label count per
        class; True the first time the run counts as not learning (then :attr:`warned` holds the
        numbers), looking at step ``at``."""
        if self.checked or not math.isfinite(loss):
            return False
        self.seen += 1
        self.classes = classes
        if labels:
            self.labels = [a + float(b) for a, b in zip(self.labels, labels)] \
                if len(self.labels) == len(labels) else [float(b) for b in labels]
        if len(self.first) < LOSS_STEPS:
            self.first.append(loss)
        self.last = (self.last + [loss])[-LOSS_STEPS:]
        self.hits = (self.hits + [[float(correct), float(count)]])[-ACC_STEPS:]
        if step < at:
            return False
        self.checked = True
        if self.seen < at // 2:  # resumed from a checkpoint that kept no watch: its start is unknown
            return False
        start, now = sum(self.first) / len(self.first), sum(self.last) / len(self.last)
        flat = start != 0 and start - now < FALL * abs(start)
        accuracy, chance, above = self._against_chance()
        if above:
            accuracy = None  # (above chance: not part of the note)
        if not flat and accuracy is None:
            return False
        self.warned = {"step": step, "loss": now, "start": start, "flat": flat, "accuracy": accuracy,
                       "chance": chance if accuracy is not None else None}
        return True

    def _against_chance(self) -> tuple[float | None, float | None, bool]:
        """(training accuracy over the last ACC_STEPS steps, chance, whether it is above chance by
        SIGMAS standard errors); (None, None, False) where the run is no classification."""
        classes, n = self.classes, sum(h[1] for h in self.hits)
        if not classes or classes < 2 or n <= 0:
            return None, None, False
        seen = sum(self.labels)
        chance = max(self.labels) / seen if seen > 0 and len(self.labels) == classes else 1.0 / classes
        accuracy = sum(h[0] for h in self.hits) / n
        return accuracy, chance, accuracy > chance + SIGMAS * math.sqrt(chance * (1 - chance) / n)

    def plainly_learns(self) -> bool:
        """A run too short for the rule that learns all the same: a classification whose accuracy is
        above chance as the rule measures it (a falling loss alone is no proof: one from a poor
        start falls to the labels' entropy with nothing learnt). Its end needs no "not checked" note."""
        return self.warned is None and self._against_chance()[2]


def _numbers(value: Any) -> list[float]:
    return [float(v) for v in value if isinstance(v, (int, float)) and math.isfinite(v)] \
        if isinstance(value, list) else []


def _pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value)


def not_learning_message(warned: dict[str, Any], lr: float, steps_per_epoch: int) -> str:
    """The ``not_learning`` row's message: what did not move, and what to try."""
    step, start, loss = int(warned["step"]), float(warned["start"]), float(warned["loss"])
    fell = (start - loss) / abs(start) if start else 0.0
    what = []
    if warned.get("flat"):
        what.append(f"the training loss went from {start:.4g} to {loss:.4g} (mean of {LOSS_STEPS} steps each; "
                    f"{fell:+.1%}, under the {FALL:.0%} that counts as a fall)")
    if warned.get("accuracy") is not None:
        what.append(f"the training accuracy of the last {ACC_STEPS} steps, {warned['accuracy']:.1%}, is at "
                    f"chance ({warned['chance']:.1%}, what always guessing the most frequent label scores)")
    epochs = f"{step / max(steps_per_epoch, 1):.3g}"
    return (f"the run is not learning: after {step} steps ({epochs} epoch{'' if epochs == '1' else 's'}) "
            f"{' and '.join(what)}. Check that the targets belong to their inputs (shuffled labels, or a "
            f"data file's y in another order than its x, cannot be learned), try a higher --lr (now {lr:g}), "
            "and check the inputs' scale. The run goes on")


UNCHECKED = "not checked whether the run learns"  # how unchecked_note begins (``revstudio runs`` groups them)


def unchecked_why() -> str:
    """Why a short run is not checked, and what to do: the part of :func:`unchecked_note` that is the
    same for every run (``revstudio runs`` prints it once under a listing of many)."""
    return (f"the check needs at least {MIN_STEPS} steps (it looks after one epoch, at least {MIN_STEPS} and at "
            f"most {MAX_STEPS} steps, or at the end of a shorter run): fewer cannot tell a slow start from a run "
            f"that does not learn. Train at least {MIN_STEPS} steps (--steps {MIN_STEPS}) to have it checked")


def unchecked_note(steps: int) -> str:
    """The end's note of a run too short for the rule (``steps`` < MIN_STEPS)."""
    return (f"{UNCHECKED}: it ran {steps} step{'s' * (steps != 1)}, and the check needs "
            f"at least {MIN_STEPS} (it looks after one epoch, at least {MIN_STEPS} and at most {MAX_STEPS} steps, "
            "or at the end of a shorter run): fewer cannot tell a slow start from a run that does not learn. "
            f"Train at least {MIN_STEPS} steps (--steps {MIN_STEPS}) to have it checked")


def label_counts(targets: Any, task: Any) -> list[float]:
    """A classification batch's count of each class among its (scored) labels (the chance level's source)."""
    if task.kind != "classification" or targets is None or not task.num_classes:
        return []
    import torch

    labels = targets.reshape(-1).long()
    labels = labels[labels >= 0]  # (per-step labels: -100 marks a step not scored)
    return [float(v) for v in torch.bincount(labels, minlength=task.num_classes).tolist()]


def watch_learning(run: Any, watch: LearningWatch, step: int, stats: Any, steps_per_epoch: int, task: Any,
                   total: int) -> None:
    """Emit the ``not_learning`` row (once) if the run is not learning at step ``step`` (``stats``:
    the step's summed loss, correct predictions and sample count; its label counts from ``stats[6]``)."""
    count, at = float(stats[2]), check_step(steps_per_epoch, total)
    at = total + 1 if at is None else at  # (a run too short for the rule is followed, never judged)
    classes = task.num_classes if task.kind == "classification" else None
    if count <= 0 or not watch.see(step, float(stats[0]) / count, float(stats[1]), count, at,
                                   classes, [float(v) for v in stats[6:]]) or watch.warned is None:
        return
    msg = not_learning_message(watch.warned, run.cfg.lr, steps_per_epoch)
    watch.warned["message"] = msg
    run.emit({"kind": "event", "event": "not_learning", "step": step, "loss": watch.warned["loss"],
              "start": watch.warned["start"], "accuracy": watch.warned["accuracy"],
              "chance": watch.warned["chance"], "message": msg})


def note_fields(diverged: dict[str, Any], watch: LearningWatch, unchecked: int | None = None) -> dict[str, Any]:
    """The ``finished`` (or ``stopped``) row's ``warning`` (with the divergence's fields
    ``diverged``), adding ``not_learning_at`` and the note when the run was not learning, and
    ``note`` (:func:`unchecked_note`) for a run of ``unchecked`` steps too short to be checked."""
    if unchecked is not None and watch.warned is None and not watch.plainly_learns():
        return {**diverged, "note": unchecked_note(unchecked)}
    if watch.warned is None:
        return diverged
    note = str(watch.warned.get("message") or "the run is not learning")
    warning = f"{diverged['warning']}; {note}" if diverged.get("warning") else note
    return {**diverged, "warning": warning, "not_learning_at": watch.warned.get("step")}
