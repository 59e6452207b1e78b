"""The rows of ``revstudio train --json`` (CONTRACTS section 3) turned into a run's state and curves.

A worker prints one JSON object per line; :class:`LineSplitter` cuts the byte
stream read from the child into whole lines (a read may end mid-row), and
:meth:`RunData.feed` files each row: step rows into the loss, accuracy,
throughput and memory series, validation rows into the validation series,
gradient-check rows into one series per region, events into the run's status
(started, checkpoint, nan, oom, stopped, finished, failed). The same class
reads a finished run's ``metrics.jsonl``. No Qt here, and no numpy until the
first curve exists.
"""
from __future__ import annotations

import json
import math
import time
from collections import deque
from collections.abc import Generator, Iterable
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from revstudio.qt.training.words import in_app_words
from revstudio.training.runs import human_duration as human_duration  # (re-exported: the Runs tab, the plots)

if TYPE_CHECKING:  # pragma: no cover
    from revstudio.qt.plots.series import Series

DEFAULT_CAPACITY = 1 << 18  # points kept per curve: a 100,000-step run logged every step fits whole

# The step rows' values kept as curves: those a plot draws (and its CSV export writes; panel.py's
# channels). A row's "lr" (every row) and "estimate_bytes" (every memory_every) were kept too, drawn by
# nothing: a 100,000-step run held 5 MiB for its learning rate alone (benchmarks/bench_plot_overlay.py).
# The memory plot's estimate lines read the started row's estimates (``info``).
STEP_SERIES = ("loss", "accuracy", "samples_per_s", "peak_bytes")
VAL_SERIES = ("val_loss", "val_accuracy")
GRAD_PREFIX = "grad_rel_error/"
INV_PREFIX = "inversion_error/"
NOISE_KEEP = 40  # lines on stdout that were not rows (kept for a failed run's message)
ENDED = ("finished", "stopped", "failed")


class LineSplitter:
    """Bytes in, whole lines out; a partial last line waits for the next read."""

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, data: bytes) -> list[bytes]:
        if not data:
            return []
        *lines, self._rest = (self._rest + data).split(b"\n")
        return lines

    def flush(self) -> list[bytes]:
        rest, self._rest = self._rest, b""
        return [rest] if rest.strip() else []


class LinePump:
    """Lines read from a worker, filed into its run a few milliseconds at a time.

    A fast run (or a backlog after a busy moment) delivers hundreds of rows in
    one read; filing them all in that turn of the event loop held input up for
    tens of milliseconds (benchmarks/bench_plots.py). :meth:`pump` files rows
    until ``budget_ms`` is spent and keeps the rest for the next turn.
    """

    CHECK_EVERY = 16  # lines between looks at the clock

    def __init__(self, run: RunData, budget_ms: float = 4.0) -> None:
        self.run = run
        self.budget_ms = budget_ms
        self.pending: deque[bytes | str] = deque()

    def __len__(self) -> int:
        return len(self.pending)

    def push(self, lines: Iterable[bytes | str]) -> None:
        self.pending.extend(lines)

    def pump(self, everything: bool = False) -> int:
        """File pending lines for at most ``budget_ms`` (all of them with ``everything``); returns rows filed."""
        deadline = None if everything else time.perf_counter() + self.budget_ms / 1000.0
        filed = 0
        pending, run = self.pending, self.run
        while pending:
            batch = [pending.popleft() for _ in range(min(self.CHECK_EVERY, len(pending)))]
            filed += len(run.feed_lines(batch))
            if deadline is not None and time.perf_counter() > deadline:
                break
        return filed


def parse_row(line: bytes | str) -> dict[str, Any] | None:
    """One row as a dict, or None for a line that is not a contract row (a stray print)."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        row = json.loads(text)
    except ValueError:
        return None
    if not isinstance(row, dict) or not isinstance(row.get("kind"), str):
        return None
    return row


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


class RunData:
    """What is known about one run: its settings, status, progress and every curve."""

    @property
    def title(self) -> str:
        """What the legend calls the run: its label, else its folder's name."""
        return self.label or self.name

    def __init__(self, name: str = "run", capacity: int = DEFAULT_CAPACITY, weight: float = 0.0) -> None:
        self.name = name
        self.label: str | None = None         # the user's label of the run (its folder's label.json)
        self.capacity = capacity
        self.weight = weight
        self.series: dict[str, Series] = {}
        self.info: dict[str, Any] = {}       # the "started" row
        self.inputs_said = False             # whether the Log has said what became of uint8 inputs
        self.status = "starting"              # starting | running | finished | stopped | failed
        self.step = 0
        self.epoch = 0.0
        self.time = 0.0
        self.total_steps: int | None = None
        self.samples_per_s: float | None = None
        self.message: str | None = None
        self.warning: str | None = None       # a loss that diverged, a run not learning (it goes on)
        self.note: str | None = None          # a finished run too short to check whether it learns
        self.early: str | None = None         # "stopped early at step S (best at B)": early stopping ended it
        self.metrics: dict[str, Any] = {}     # final metrics (finished row) or the latest seen
        self.checkpoint: str | None = None
        self.events: list[dict[str, Any]] = []  # nan / oom / diverged / checkpoint rows, for the log
        # region -> the layer whose inverse misses most, of its latest gradient check (inverse_off)
        self.inverse_off: dict[str, dict[str, Any]] = {}
        self.noise: list[str] = []
        self.rows = 0
        self.peak_max: float | None = None  # the largest measured peak so far (the memory plot's number)
        self.version = 0
        self.time_offset = 0.0  # a resumed worker counts its time from 0 again; the curves go on
        self._rewinding: set[str] = set()  # curves whose next point may repeat a step (a resumed run)

    # ---- reading ---------------------------------------------------------
    def feed_lines(self, lines: Iterable[bytes | str]) -> list[dict[str, Any]]:
        """File every row among ``lines``; returns the rows (stray lines go to ``noise``)."""
        rows = []
        for line in lines:
            row = parse_row(line)
            if row is None:
                text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
                if text.strip():
                    self.noise = (self.noise + [text.rstrip()])[-NOISE_KEEP:]
                continue
            self.feed(row)
            rows.append(row)
        return rows

    def feed(self, row: dict[str, Any]) -> None:
        kind = row.get("kind")
        if kind == "event" and row.get("event") == "started" and row.get("resumed_from") and self.rows:
            self.time_offset = self.time
            self._rewinding = set(self.series)  # each curve goes on from the checkpoint's step (``_add``)
        self.rows += 1
        self.version += 1
        t = _num(row.get("time"))
        if t is not None:
            t += self.time_offset
            self.time = max(self.time, t)
        step = _num(row.get("step"))
        if step is not None:
            self.step = max(self.step, int(step))
        epoch = _num(row.get("epoch"))
        if epoch is not None:
            self.epoch = max(self.epoch, epoch)
        # where this row's points go, read once per row (not once per series: 40 % of a row's cost)
        pos = (self.step if step is None else step, self.epoch if epoch is None else epoch,
               self.time if t is None else t)
        if kind == "step":
            self._add_all(row, STEP_SERIES, pos)
            peak = _num(row.get("peak_bytes"))
            if peak is not None and math.isfinite(peak) and (self.peak_max is None or peak > self.peak_max):
                self.peak_max = peak
            self.samples_per_s = _num(row.get("samples_per_s")) or self.samples_per_s
            for key in ("loss", "accuracy"):
                if _num(row.get(key)) is not None:
                    self.metrics[key] = row[key]
        elif kind == "val":
            self._add_all(row, VAL_SERIES, pos)
            for key in VAL_SERIES:
                if _num(row.get(key)) is not None:
                    self.metrics[key] = row[key]
        elif kind == "gradcheck":
            for region in row.get("regions") or []:
                if not isinstance(region, dict):
                    continue
                name = str(region.get("region", "?"))
                bad = region.get("nonfinite") or ()
                layers = region.get("inverse_off")
                if isinstance(layers, list) and layers and isinstance(layers[0], dict):
                    self.inverse_off[name] = layers[0]
                else:
                    self.inverse_off.pop(name, None)
                for key, prefix in (("grad_rel_error", GRAD_PREFIX), ("inversion_error", INV_PREFIX)):
                    value = _num(region.get(key))
                    # null is NaN or Inf where the row says so (a gap in the curve and a warning), else
                    # not measured (no point)
                    self._add(prefix + name, pos, math.nan if value is None and key in bad else value)
        elif kind == "event":
            self._event(row)

    def _event(self, row: dict[str, Any]) -> None:
        event = row.get("event")
        if event == "started":
            self.info = dict(row)
            self.inputs_said = False  # (each start says it: a resume may change it)
            self.status = "running"
            total = _num(row.get("total_steps"))
            self.total_steps = int(total) if total is not None else None
        elif event == "checkpoint":
            if row.get("path") and not row.get("best"):  # (best.pt: not the one a resume continues)
                self.checkpoint = str(row.get("path"))
            self.events.append(row)
        elif event in ("nan", "oom"):
            self.events.append({**row, "message": in_app_words(str(row.get("message") or event))})
            self.message = self.events[-1]["message"]
        elif event in ("diverged", "not_learning"):  # (the run goes on; the newest note is the one shown)
            default = "the loss diverged" if event == "diverged" else "the run is not learning"
            self.events.append({**row, "message": in_app_words(str(row.get("message") or default))})
            self.warning = self.events[-1]["message"]
        elif event == "stopped":
            self.status = "stopped"
            self.checkpoint = str(row.get("checkpoint")) if row.get("checkpoint") else self.checkpoint
        elif event == "finished":
            self.status = "finished"
            if isinstance(row.get("metrics"), dict):
                self.metrics.update(row["metrics"])
            if row.get("note"):
                self.note = in_app_words(str(row["note"]))
            if isinstance(row.get("early_stopped"), dict):
                from revstudio.training.patience import early_status  # (torch-free)

                self.early = early_status(row["early_stopped"])
        elif event == "failed":
            self.status = "failed"
            self.message = in_app_words(str(row.get("message") or "the run failed"))

    def _add_all(self, row: dict[str, Any], keys: tuple[str, ...], pos: tuple[float, float, float]) -> None:
        for key in keys:
            value = row.get(key)
            if value is not None:
                self._add(key, pos, _num(value))

    def _add(self, name: str, pos: tuple[float, float, float], value: float | None) -> None:
        """Append ``value`` at ``pos`` (step, epoch, wall time) to the series ``name``."""
        if value is None:
            return
        series = self.series.get(name)
        if series is None:
            # numpy loads with the first curve, not with the editor (the Runs tab lists runs without it)
            from revstudio.qt.plots.series import Series

            series = self.series[name] = Series(name, self.capacity, self.weight, self.smoothing_gap())
        elif name in self._rewinding:  # a resumed run repeats the steps after its checkpoint
            self._rewinding.discard(name)
            series.rewind(pos[0])
        series.append(pos[0], pos[1], pos[2], value)

    # ---- derived ---------------------------------------------------------
    def trim(self) -> None:
        """Each curve's room cut to its points (``Series.trim``): what a run read whole holds."""
        for series in self.series.values():
            series.trim()

    def smoothing_gap(self) -> float | None:
        """Steps between two logged rows (``log_every``): the smoothing weight is per this many steps,
        so a curve logged more sparsely (validation, gradient checks) smooths over the same steps."""
        every = _num((self.info.get("config") or {}).get("log_every"))
        return every if every is not None and every > 0 else None

    def set_weight(self, weight: float) -> None:
        self.weight = weight
        for series in self.series.values():
            series.set_weight(weight)
        self.version += 1

    def regions(self) -> list[str]:
        names = [str(r) for r in self.info.get("regions") or []]
        for key in self.series:
            if key.startswith(GRAD_PREFIX) and key[len(GRAD_PREFIX):] not in names:
                names.append(key[len(GRAD_PREFIX):])
        return names

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    def fraction(self) -> float | None:
        if not self.total_steps:
            return None
        return min(1.0, self.step / self.total_steps)

    def eta_seconds(self) -> float | None:
        """Remaining time at the pace so far (None before the first step)."""
        if not self.total_steps or self.step <= 0 or self.time <= 0 or self.ended:
            return None
        return max(0.0, (self.total_steps - self.step) * self.time / self.step)

    def peak_fraction_of_standard(self) -> float | None:
        """The largest measured peak over the static standard-mode estimate (the memory plot's number)."""
        standard = _num(self.info.get("standard_estimate_bytes"))
        if self.peak_max is None or not standard:
            return None
        return self.peak_max / standard


def iter_jsonl(path: str | Path) -> Generator[bytes, None, None]:
    """The lines of a ``metrics.jsonl`` (a missing file is an empty run, not an error)."""
    try:
        with open(path, "rb") as fh:
            yield from fh
    except OSError:
        return


def read_metrics(path: str | Path, name: str | None = None, capacity: int = DEFAULT_CAPACITY) -> RunData:
    """A run's curves from its ``metrics.jsonl``, all read at once (:class:`SavedRows` reads a little at a time)."""
    data = RunData(name or Path(path).parent.name, capacity)
    data.feed_lines(iter_jsonl(path))
    data.trim()
    return data


class SavedRows:
    """A saved run's ``metrics.jsonl`` filed into ``run`` a few milliseconds at a time.

    A 200,000-row run takes seconds to file (benchmarks/bench_saved_runs.py); read whole when the
    Runs tab selected it, the window froze that long, and for each run of an overlay. Its curves
    now grow on screen while the event loop keeps taking input; ``then`` is called once the last
    row is filed (the Runs tab's status of the folder, a killed run's, is set after the rows' own).
    """

    def __init__(self, path: str | Path, run: RunData, then: Any = None) -> None:
        self.run = run
        self.then = then
        self._lines: Generator[bytes, None, None] | None = iter_jsonl(path)
        self.filed = 0

    @property
    def done(self) -> bool:
        return self._lines is None

    def pump(self, budget_ms: float = 8.0) -> bool:
        """File rows for about ``budget_ms``; returns whether the whole file is filed."""
        lines = self._lines
        if lines is None:
            return True
        deadline = time.perf_counter() + budget_ms / 1000.0
        while True:
            batch = list(islice(lines, LinePump.CHECK_EVERY * 4))
            if not batch:
                self.close()
                self.run.trim()  # (its curves hold their points, not room for more)
                if self.then is not None:
                    self.then(self.run)
                return True
            self.filed += len(self.run.feed_lines(batch))
            if time.perf_counter() > deadline:
                return False

    def close(self) -> None:
        """Stop reading (the run was deselected, deleted or moved): the file is let go."""
        if self._lines is not None:
            self._lines.close()
            self._lines = None


