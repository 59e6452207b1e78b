"""What a doc sample shows that the machine's speed decides, masked alike in the doc and the output.

A doc promises a command's columns and the values a run decides (its name, status, steps, metrics),
not how long it took on the machine that ran it: the tutorial's 400-step run took over a minute on a
loaded machine, and ``revstudio runs`` printed its duration as "1 min 04 s", wider than the "12 s" the
table was laid out for, so the header's padding no longer matched the page. Here a ``runs`` table's
duration cell reads ``D`` and its columns' padding one gap of two spaces, and a progress line's
``ETA 00:17`` (or ``1:02:03``) ``ETA T``; everything else is compared as written.
"""
from __future__ import annotations

import re

# revstudio.training.runs.human_duration's forms: "42 s", "3 min 05 s", "2 h 07 min", and "–" for none
DURATION = re.compile(r"\d+ s|\d+ min \d\d s|\d+ h \d\d min|–")
RUNS_HEADER = re.compile(r"^run +(?:label +)?status +step +duration(?: |$)")
ETA = re.compile(r"\bETA \d+(?::\d\d){1,2}\b")
GAP = re.compile(r" {2,}")


def _duration_masked(row: str, end: int) -> str:
    """``row`` with its duration cell, the right-aligned one ending at column ``end``, as ``D`` (where
    the text there is a duration: a doc's ``...`` there stays as it is)."""
    head, tail = row[:end], row[end:]
    if tail and not tail.startswith("  "):  # (not a cell ending there: a doc line's "..." runs on)
        return row
    start = head.rstrip().rfind("  ") + 2
    cell = head[start:].strip()
    return head[:start] + "D" + tail if DURATION.fullmatch(cell) else row


def timings_masked(lines: list[str]) -> list[str]:
    """``lines`` (a doc sample or a command's output) with the machine's timings masked (module doc)."""
    out: list[str] = []
    end = None  # the duration column's right edge while in a runs table
    for line in lines:
        if RUNS_HEADER.match(line):
            end = line.index("duration") + len("duration")
        elif end is not None and "  " not in line.strip():  # (a table's rows all have gaps; a message has none)
            end = None
        if end is not None:
            line = GAP.sub("  ", _duration_masked(line, end).rstrip())
        out.append(ETA.sub("ETA T", line))
    return out
