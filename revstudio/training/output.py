"""Where a run's rows go: JSON lines on stdout, a progress bar for people, the run directory.

Each is a :class:`~revstudio.training.loop.Callback`. ``JsonRows`` prints one
object per line and flushes it (the app reads the pipe as it goes);
``Progress`` draws a one-line bar (step, epoch, loss, samples/s, ETA) on a
terminal and plain lines elsewhere; ``RunDirRows`` appends every row to
``metrics.jsonl`` and keeps ``status.json`` truthful.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import IO, Any

from .checkpoint import data_changed_note
from .inrun import WARN_LEVEL
from .inverse_words import inverse_words
from .loop import Callback
from .patience import early_status, early_words
from .runs import BEST, CHECKPOINT, RunWriter, finite, json_text, now_iso


def dumps(row: dict[str, Any]) -> str:
    return json_text(row)


class _Out(Callback):
    """Writes to stdout (or ``stream``) until its reader goes away (``train --json | head``).

    Then it writes nothing more and calls ``on_gone`` once: the session stops the run as a
    signal would (a checkpoint, a ``stopped`` row in the run directory), so the run neither
    dies mid-step with its status still ``running`` nor trains on for nobody.
    """

    def __init__(self, stream: IO[str] | None = None, on_gone: Callable[[], None] | None = None) -> None:
        self.stream = stream
        self.on_gone = on_gone
        self.gone = False

    def write(self, text: str) -> None:
        if self.gone:
            return
        out = self.stream or sys.stdout
        try:
            out.write(text)
            out.flush()
        except BrokenPipeError:
            self.gone = True
            if out is sys.stdout:
                from revstudio.cli import reader_gone

                reader_gone()  # (stdout to the null device: the exit's own flush cannot fail again)
            if self.on_gone is not None:
                self.on_gone()


class JsonRows(_Out):
    def on_row(self, row: dict[str, Any]) -> None:
        self.write(dumps(row) + "\n")


def _fmt_bytes(n: Any) -> str:
    from revstudio.diagnostics.estimate import fmt_bytes  # (torch-free)

    return fmt_bytes(n) if isinstance(n, (int, float)) else "-"


def _budget_note(row: dict[str, Any]) -> str:
    """" (memory budget 64.0 MiB: keeps the first 3/8 steps)" for a run with one (said to do
    nothing outside reversible mode)."""
    budget = (row.get("config") or {}).get("memory_budget")
    if budget is None:
        return ""
    if row.get("mode") != "reversible":
        return f" (memory budget {_fmt_bytes(budget)}, unused outside reversible mode)"
    kept = row.get("budget") or {}
    regions = kept.get("regions") or []
    parts = []
    for r in regions:
        shown = ("kept_compute_steps", "compute_steps") if "compute_steps" in r else ("kept_steps", "steps")
        what = ("whole" if r.get("state") == "kept" else f"the first {r.get(shown[0])}/{r.get(shown[1])} steps"
                if r.get("kept_steps") else "nothing")
        parts.append(what if len(regions) == 1 else f"{r.get('region')} {what}")
    keeps = f": keeps {', '.join(parts)} at batch {kept.get('batch')}" if parts else ""
    return f" (memory budget {_fmt_bytes(budget)}{keeps})"


def _budget_over_standard(row: dict[str, Any]) -> str:
    """A note where a run under a memory budget has an estimated peak above standard mode's:
    the budget keeps a region's first steps alive while the rest rebuilds, or it keeps nothing
    and reversible mode itself peaks higher. Then standard mode is smaller and faster."""
    est, std = row.get("estimate_bytes"), row.get("standard_estimate_bytes")
    if (row.get("config") or {}).get("memory_budget") is None or row.get("mode") != "reversible" \
            or not isinstance(est, int) or not isinstance(std, int) or est <= std:
        return ""  # (without a budget, estimates this close are no advice to act on)
    kept = (row.get("budget") or {}).get("kept_bytes")
    cause = ("under this memory budget the estimated peak" if kept else "reversible mode's estimated peak")
    return (f"note: {cause} ({_fmt_bytes(est)}) is above standard mode's ({_fmt_bytes(std)}); "
            "--mode standard would be smaller and faster")


def _eta(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Progress(_Out):
    """Human output: a redrawn bar on a terminal, one line per step row otherwise."""

    WIDTH = 24

    def __init__(self, stream: IO[str] | None = None, on_gone: Callable[[], None] | None = None) -> None:
        super().__init__(stream or sys.stdout, on_gone)
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = 1
        self.batch = 1
        self.drawn = False
        self.run_dir: str | None = None

    def _line(self, text: str) -> None:
        from revstudio.cli import printable  # (paths and messages may hold what a terminal acts on)

        if self.drawn and self.tty:
            self.write("\r\033[K")
            self.drawn = False
        self.write(printable(text) + "\n")

    def on_train_start(self, row: dict[str, Any]) -> None:
        self.total = int(row.get("total_steps") or 1)
        self.batch = int(row.get("batch_size") or 1)
        self.run_dir = row.get("run_dir") or None
        resumed = f", resumed from {row['resumed_from']}" if row.get("resumed_from") else ""
        changed = row.get("changed") or {}
        if resumed and changed:  # (config.json now holds only the new values: say what they replaced)
            resumed += " with " + ", ".join(f"{k} {_setting(v[0])} -> {_setting(v[1])}" for k, v in changed.items())
        self._line(f"training {row.get('parameters', 0):,} parameters on {row.get('device')} in "
                   f"{row.get('mode')} mode{_budget_note(row)}, {row.get('task')}, {_count(self.total, 'step')} "
                   f"({row.get('steps_per_epoch')} per epoch){resumed}")
        over = _budget_over_standard(row)
        if over:
            self._line(over)
        if row.get("estimate_note"):
            self._line(f"note: {row['estimate_note']}")
        if row.get("data"):
            self._line(f"data: {row['data']}")
        if row.get("inputs"):  # (uint8 inputs scaled to [0, 1], or kept raw: said, never silent)
            self._line(f"note: {row['inputs']}")
        if row.get("schedule_note"):
            self._line(f"note: {row['schedule_note']}")
        if row.get("data_changed"):
            self._line(f"note: {data_changed_note(row['data_changed'])}")
        for note in (*(row.get("threads_notes") or ()), *(row.get("device_notes") or ())):
            self._line(f"note: {note}")  # (another thread count than the run's or the CPUs', another device)
        asked = (row.get("config") or {}).get("batch_size")
        if isinstance(asked, int) and self.batch < asked:
            self._line(f"note: the training data has only {self.batch} samples, fewer than the batch size {asked}: "
                       f"each step trains on all {self.batch} (one step per epoch)")
        if row.get("run_dir"):
            self._line(f"run directory: {row['run_dir']}")

    def on_step_end(self, row: dict[str, Any]) -> None:
        step = int(row["step"])
        done = step / self.total
        # the latest throughput, not the average since the start (which holds one-time costs)
        rate = float(row.get("samples_per_s") or 0.0) / max(1, self.batch)
        eta = _eta((self.total - step) / rate) if rate > 0 else "--:--"
        bar = "#" * int(self.WIDTH * done) + "-" * (self.WIDTH - int(self.WIDTH * done))
        acc = f" acc {row['accuracy']:.3f}" if "accuracy" in row else ""
        mem = f" peak {_fmt_bytes(row['peak_bytes'])}" if "peak_bytes" in row else ""
        text = (f"[{bar}] step {step}/{self.total} epoch {row['epoch']:.2f} loss {row['loss']:.4g}{acc} "
                f"{row['samples_per_s']:.0f} samples/s ETA {eta}{mem}")
        if self.tty:
            self.write("\r\033[K" + text)
            self.drawn = True
        else:
            self._line(text)

    def on_validation_end(self, row: dict[str, Any]) -> None:
        acc = f", accuracy {row['val_accuracy']:.4f}" if "val_accuracy" in row else ""
        self._line(f"validation at step {row['step']}: loss {row['val_loss']:.4g}{acc}")

    def on_gradcheck(self, row: dict[str, Any]) -> None:
        grad, inv = row["max_grad_rel_error"], row["max_inversion_error"]
        # the app's Gradient check plot warns from the same level (qt/plots/panel.WARN_LEVEL)
        off = [r["region"] for r in row.get("regions", ())
               if not all((r.get(k) or 0.0) <= WARN_LEVEL for k in ("grad_rel_error", "inversion_error"))]
        verdict = (f"; OFF in region {', '.join(off)} (over {WARN_LEVEL:g}): reversible mode loses precision there; "
                   "try --mode checkpoint, a lower --lr, or float64" if off else "")
        layers = [layer for r in row.get("regions", ()) if r["region"] in off for layer in r.get("inverse_off", ())]
        if layers:  # (which layer's inverse misses: a plugin's wrong inverse is no precision loss)
            verdict = f"; OFF in region {', '.join(off)} (over {WARN_LEVEL:g}): {inverse_words(layers[0])}"
        self._line(f"gradient check at step {row['step']}: reversible vs standard max error "
                   f"{_figure(grad)}, inversion error {_figure(inv)}{verdict}")

    def on_event(self, row: dict[str, Any]) -> None:
        event = row.get("event")
        if event == "finished":
            m = row.get("metrics", {})
            parts = [f"{k} {v}" if isinstance(v, int) else f"{k} {v:.4g}" for k, v in m.items()
                     if isinstance(v, (int, float))]  # (a count, steps_scored, in full)
            self._line(f"finished {_count(int(row['step']), 'step')} in {row['wall_s']:.1f} s: " + ", ".join(parts))
            if isinstance(row.get("early_stopped"), dict):  # (why it ended before its steps, and the weights to keep)
                self._line(early_words(row["early_stopped"], os.path.join(self.run_dir, BEST) if self.run_dir else None))
            if row.get("warning"):
                self._line(f"warning: {row['warning']}")
            if row.get("note"):  # (a run too short to check whether it learns)
                self._line(f"note: {row['note']}")
            self._use_it()
        elif event == "stopped" and row.get("forced"):  # (a second Ctrl+C: the step in progress is lost)
            self._line(f"stopped now, the step after {row['step']} unfinished"
                       + (f"; the run is at its checkpoint of step {row['step']}{self._resumable(row['checkpoint'])}"
                          if row.get("checkpoint") else "; no checkpoint was written: nothing to resume"))
        elif event == "stopped":
            self._line(f"stopped at step {row['step']}{self._resumable(row.get('checkpoint'))}")
            if row.get("warning"):
                self._line(f"warning: {row['warning']}")
        elif event in ("diverged", "not_learning"):
            self._line(f"warning: {row.get('message')}")
        elif event in ("nan", "oom", "failed"):
            self._line(f"error: {row.get('message')}")


    def _use_it(self) -> None:
        """How a finished run's network and weights go into one's own code (the run directory held
        both, but nothing said so: docs/cli.md's list of its files did)."""
        if not self.run_dir or not all(os.path.isfile(os.path.join(self.run_dir, f)) for f in ("model.py", CHECKPOINT)):
            return
        self._line("use it: the run directory's model.py is the network as PyTorch code (from model import Model), "
                   f"{CHECKPOINT} its weights: model = Model(); model.load_state_dict(torch.load("
                   f"{CHECKPOINT!r}, map_location='cpu', weights_only=True)['model'])")
        import shlex

        self._line(f"ship it: revstudio export {shlex.quote(self.run_dir)} -o model.py writes the code and its "
                   "trained weights alone beside it (model.pt, a plain state_dict: no optimizer, no data paths)")

    def _resumable(self, checkpoint: str | None) -> str:
        """Where a stopped run's checkpoint is (the row's path is the run directory's) and the command
        that continues it, quoted for a shell: what a Ctrl+C leaves someone to do next."""
        if not checkpoint:
            return ""
        if not self.run_dir:
            return f"; checkpoint {checkpoint} in the run directory; continue it with --resume"
        import shlex

        return (f"; checkpoint {os.path.join(self.run_dir, checkpoint)}; "
                f"continue it with: revstudio train --resume {shlex.quote(self.run_dir)}")


class LastStep(Callback):
    """The last step row's step (None before the first): what a failure during the run reports;
    and whether the run started (a failure before it is a refusal, which keeps no run folder)."""

    def __init__(self) -> None:
        self.step: int | None = None
        self.started = False  # (the ``started`` row went out: the run is no longer refused, it failed)

    def on_train_start(self, row: dict[str, Any]) -> None:
        self.started = True

    def on_step_end(self, row: dict[str, Any]) -> None:
        self.step = int(row["step"])


class LastCheckpoint(Callback):
    """The step of the last checkpoint written (None before one): where a run stopped at once stands."""

    def __init__(self) -> None:
        self.step: int | None = None

    def on_event(self, row: dict[str, Any]) -> None:
        if row.get("event") == "checkpoint" and not row.get("best"):  # (best.pt is not where it stands)
            self.step = int(row["step"])


class RunDirRows(Callback):
    """Every row into metrics.jsonl; status.json follows the run."""

    def __init__(self, writer: RunWriter, stop: Any = None) -> None:
        self.writer = writer
        self.stop = stop  # (a StopFlag whose reason, where one set it, is the stopped run's message)
        self.stop_message = "stopped by a signal; --resume continues it"  # (or runs.READER_GONE)

    def on_row(self, row: dict[str, Any]) -> None:
        self.writer.row(finite(row))
        kind, event = row.get("kind"), row.get("event")
        metrics: dict[str, Any]
        if kind == "step":
            metrics = {k: row[k] for k in ("loss", "accuracy") if k in row}
            self.writer.update_status(step=row["step"], metrics={**self.writer.status["metrics"], **metrics})
        elif kind == "val":
            metrics = {k: row[k] for k in ("val_loss", "val_accuracy") if k in row}
            self.writer.update_status(metrics={**self.writer.status["metrics"], **metrics})
        elif event == "started":
            self.writer.update_status(status="running", total_steps=row.get("total_steps"), message=None,
                                      ended=None, inputs=row.get("inputs"), network_digest=row.get("network_digest"),
                                      data_digest=row.get("data_digest"))
        elif event == "finished":
            self.writer.update_status(status="finished", step=row["step"], ended=now_iso(),
                                      metrics=finite(row.get("metrics", {})),
                                      message=early_status(row["early_stopped"])
                                      if isinstance(row.get("early_stopped"), dict) else
                                      f"warning: {row['warning']}" if row.get("warning") else
                                      f"note: {row['note']}" if row.get("note") else None)
        elif event == "stopped":
            warning = f" (warning: {row['warning']})" if row.get("warning") else ""
            reason = getattr(self.stop, "reason", None)
            self.writer.update_status(status="stopped", step=row["step"], ended=now_iso(),
                                      message=(reason or self.stop_message) + warning)
        elif event in ("diverged", "not_learning"):  # (the run goes on: its status says so while it does)
            self.writer.update_status(message=f"warning: {row.get('message')}")
        elif event in ("nan", "oom", "failed"):
            step = row.get("step") if isinstance(row.get("step"), int) else self.writer.status["step"]
            self.writer.update_status(status="failed", step=step, ended=now_iso(), message=row.get("message"))


def _setting(value: Any) -> str:
    return "null" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _count(n: int, word: str) -> str:
    """``1 step``, ``2 steps``."""
    return f"{n} {word}{'s' * (n != 1)}"


def _figure(value: float | None) -> str:
    """A measured figure, or what a null one means (a gradcheck row's maxima are null where unmeasured)."""
    return "not measured" if value is None else f"{value:.2g}"
