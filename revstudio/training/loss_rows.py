"""Each run's loss rows read once and kept compactly: what comparing runs reads again and again.

The Runs tab compares the selected runs at every selection change, and a running run's
``metrics.jsonl`` grows while it is selected. A run's rows are kept here in the file's order as two
flat columns (``array('q')`` steps, ``array('d')`` losses: 16 bytes a row, where a list of tuples
took about 90), with the few losses that are not floats (an int, a null, another writer's value)
beside them by row, and the file's identity (device, inode), size, mtime and the bytes just before
where the reading stopped. A file that only grew is read from there on; one shrunk, replaced or
rewritten is read whole again. At most :data:`KEPT` runs (and :data:`KEPT_BYTES`) are kept, the least
recently read dropped first. Thread-safe (the Runs tab reads on a worker thread); torch-free, no Qt.
"""
from __future__ import annotations

import collections
import json
import os
import re
import threading
from array import array
from typing import Any

KEPT = 32  # runs whose rows are kept (ten 200,000-row runs take about 32 MB) ...
KEPT_BYTES = 128 * 2**20  # ... and at most this much of their columns (the largest file read: 7 MB)
_PART = 2**20  # bytes of lines parsed at once
_CHECK = 64  # bytes before the read-up-to offset compared to see that the file was only appended to

# A step row as the worker writes it (``runs.json_text``): its step and loss read without parsing the
# line, which took three quarters of comparing two 200,000-row runs; any other line (another writer's
# spacing, an old NaN, a row without a loss) is parsed as JSON, and a line cut short is neither
_STEP_LOSS = re.compile(rb'\{"kind": "step", "step": (\d+), (?:[^\n]*?, )?"loss": (-?\d[\d.eE+-]*|null)[,}][^\n]*\}\s*\Z')
_NO_FLOAT = float("nan")


class _Rows:
    """One file's step rows in the order written, read up to ``offset`` (the end of a whole line)."""

    def __init__(self, ident: tuple[int, int]) -> None:
        self.ident = ident
        self.size = -1
        self.mtime = -1
        self.offset = 0
        self.check = b""  # the file's bytes just before ``offset``
        self.steps: array[int] | list[int] = array("q")
        self.losses = array("d")
        self.odd: dict[int, Any] = {}  # row index -> a loss that is not a float
        self.tail: list[tuple[int, Any]] = []  # a last line without its newline (read again next time)

    def add(self, step: int, loss: Any) -> None:
        try:
            self.steps.append(step)
        except OverflowError:  # (a step past 2**63: kept, as a plain list)
            self.steps = [*self.steps, step]
        if isinstance(loss, float):
            self.losses.append(loss)
        else:
            self.odd[len(self.losses)] = loss
            self.losses.append(_NO_FLOAT)

    def rows(self) -> list[tuple[int, Any]] | None:
        values: list[Any] = self.losses.tolist()
        for i, v in self.odd.items():
            values[i] = v
        by_step = dict(zip(self.steps, values, strict=True))  # (the row written last for a step)
        by_step.update(self.tail)
        return sorted(by_step.items()) or None

    def nbytes(self) -> int:
        return len(self.steps) * 16


_lock = threading.Lock()  # one read at a time (two threads reading one file would mix its rows)
_kept: collections.OrderedDict[str, _Rows] = collections.OrderedDict()
reads: collections.Counter[tuple[str, str]] = collections.Counter()  # ("whole" | "grown", path): times read


def _parse(data: bytes, into: Any) -> None:
    """Call ``into(step, loss)`` for each step row of ``data``'s lines."""
    match = _STEP_LOSS.match
    for line in data.split(b"\n"):
        found = match(line)
        if found is not None:
            text = found.group(2)
            into(int(found.group(1)), None if text == b"null" else float(text) if any(
                c in text for c in b".eE") else int(text))
            continue
        if b'"step"' not in line:
            continue
        try:
            row = json.loads(line.decode("utf-8", "replace"))  # (bytes that are not text: a line skipped)
        except ValueError:  # (a line a kill cut short)
            continue
        if isinstance(row, dict) and row.get("kind") == "step" and isinstance(row.get("step"), int):
            into(row["step"], row.get("loss"))


def read_rows(path: str, limit: int) -> list[tuple[int, Any]] | None:
    """``[(step, loss), ...]`` of ``path``'s step rows, the row written last for a step; None where there
    are none, the file cannot be read or is larger than ``limit`` bytes. Reads only what is new."""
    with _lock:
        return _read(os.path.abspath(path), limit)


def _read(key: str, limit: int) -> list[tuple[int, Any]] | None:
    try:
        with open(key, "rb") as handle:
            info = os.fstat(handle.fileno())
            if info.st_size > limit:
                return None
            kept = _kept.get(key)
            ident = (info.st_dev, info.st_ino)
            if kept is not None and kept.ident == ident and kept.size == info.st_size \
                    and kept.mtime == info.st_mtime_ns:
                _kept.move_to_end(key)
                return kept.rows()
            start = 0
            if kept is not None and kept.ident == ident and kept.offset <= info.st_size:
                handle.seek(kept.offset - len(kept.check))
                if handle.read(len(kept.check)) == kept.check:
                    start = kept.offset  # (only appended to: read on from there)
            if start == 0:
                kept = _Rows(ident)
            assert kept is not None
            handle.seek(start)
            data = handle.read(info.st_size - start)
    except OSError:
        return None
    reads["grown" if start else "whole", key] += 1
    end = data.rfind(b"\n") + 1  # (what follows the last newline may still be being written)
    begin = 0
    while begin < end:  # (a few MB at a time: one split of 30 MB held the interpreter for 40 ms)
        stop = data.find(b"\n", min(begin + _PART, end - 1)) + 1
        _parse(data[begin:stop], kept.add)
        begin = stop
    kept.offset = start + end
    kept.check = (kept.check + data[:end])[-_CHECK:]
    kept.tail = []
    _parse(data[end:], lambda step, loss: kept.tail.append((step, loss)))
    kept.size, kept.mtime = info.st_size, info.st_mtime_ns
    _kept[key] = kept
    _kept.move_to_end(key)
    while len(_kept) > KEPT or (len(_kept) > 1 and sum(r.nbytes() for r in _kept.values()) > KEPT_BYTES):
        _kept.popitem(last=False)
    return kept.rows()


def forget() -> None:
    """Drop every kept run's rows (tests; a benchmark's cold start)."""
    with _lock:
        _kept.clear()
