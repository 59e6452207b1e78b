"""What differs between runs, and whether they computed the same losses: ``revstudio runs``'s comparison.

A reader reproducing a run (a paper's, a colleague's, yesterday's) wants two answers from the run
folders alone: what was different (a setting in ``config.json``, the network or the data, by their
digests in ``status.json``, the versions, device, threads or processes in ``environment.json``), and
whether the loss rows came out the same, bit for bit, or where they first part. Torch-free.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .runs import CONFIG, METRICS, STATUS, read_json


class RunFolder(Protocol):
    """A listed run: ``revstudio runs``'s RunInfo, or the app's RunEntry (a Runs-tab view of one RunInfo)."""

    @property
    def path(self) -> Any: ...  # (str or Path)

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> dict[str, Any]: ...

ENVIRONMENT = "environment.json"
# what of environment.json can change a run's numbers (not the host's name or the command line)
ENV_KEYS = ("revstudio", "torch", "python", "device", "cuda", "threads", "processes", "plugins")
DIGEST_KEYS = ("network_digest", "data_digest")
MAX_ROWS_BYTES = 64 * 2**20  # a metrics.jsonl larger than this is not read for the loss comparison
UNRECORDED = "not recorded"


def provenance(run_dir: Any) -> dict[str, Any]:
    """What a run folder records of what was trained, where: ``network_digest`` and ``data_digest`` (None
    for a run from before they were recorded) and ``environment`` (the keys of :data:`ENV_KEYS`)."""
    status = read_json(os.path.join(run_dir, STATUS))
    env = read_json(os.path.join(run_dir, ENVIRONMENT))
    status = status if isinstance(status, dict) else {}
    env = env if isinstance(env, dict) else {}
    return {**{k: status.get(k) if isinstance(status.get(k), str) else None for k in DIGEST_KEYS},
            "environment": {k: env[k] for k in ENV_KEYS if k in env}}


def _facts(run: RunFolder) -> dict[str, Any]:
    """Every fact of ``run`` the comparison looks at, by the name it is shown under."""
    record = provenance(run.path)
    config = run.config or read_json(os.path.join(run.path, CONFIG))
    config = {k: v for k, v in config.items() if k != "version"} if isinstance(config, dict) else {}
    digests = {k: record[k] or UNRECORDED for k in DIGEST_KEYS}
    # threads: the count the run had (environment.json), whether training.threads set it or torch's
    # default gave it, so a run that set 2 and one that left it to a default of 2 compare the same
    setting = config.pop("threads", None)
    env = record["environment"]
    return {**config, **digests, **env, "threads": env.get("threads", setting if setting is not None else UNRECORDED)}


def names(runs: Sequence[RunFolder]) -> list[str]:
    """Each run's name as the comparison shows it: its folder's name, or its path where two runs listed
    from different places have the same name (the paper's ``run1`` and one's own ``run1``)."""
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.name] = counts.get(r.name, 0) + 1
    return [r.name if counts[r.name] == 1 else os.path.normpath(r.path) for r in runs]


def differences(runs: Sequence[RunFolder]) -> dict[str, dict[str, Any]]:
    """``{fact: {run name: value}}`` for each setting, digest or environment fact whose value is not the
    same in every run (a fact a run does not record is :data:`UNRECORDED` there)."""
    facts = [_facts(r) for r in runs]
    keys: list[str] = []
    for f in facts:
        keys += [k for k in f if k not in keys]
    out: dict[str, dict[str, Any]] = {}
    for key in keys:
        values = [f.get(key, UNRECORDED) for f in facts]
        if len({json.dumps(v, sort_keys=True, default=str) for v in values}) > 1:
            out[key] = dict(zip(names(runs), values, strict=True))
    return out


def loss_rows(run_dir: Any) -> list[tuple[int, Any]] | None:
    """``[(step, loss), ...]`` of the run's step rows, the row written last for a step (a resumed run
    writes the steps after its checkpoint again); None where there are none or the file is too large.
    Kept between calls (:mod:`.loss_rows`): a file read before is read again only where it grew."""
    from .loss_rows import read_rows

    return read_rows(os.path.join(run_dir, METRICS), MAX_ROWS_BYTES)


@dataclass
class SameRows:
    """Runs whose loss rows are equal bit for bit; ``first_difference`` says how they part from the first
    group's (``{"step", "loss", "reference_loss", "reference"}``; None for the first group; where the losses
    agree at every step both have, ``step`` is None and ``same_steps`` / ``other_steps`` count them)."""

    runs: list[str]
    first_difference: dict[str, Any] | None = None
    steps: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "steps": self.steps, "first_difference": self.first_difference}


def same_rows(runs: Sequence[RunFolder]) -> list[SameRows]:
    """The runs grouped by their loss rows (runs without rows are left out), the first group's first."""
    groups: list[tuple[list[tuple[int, Any]], SameRows]] = []
    texts: dict[str, int] = {}  # each group's rows as JSON (repr of a float is exact: bit for bit), made once
    for run, name in zip(runs, names(runs), strict=True):
        rows = loss_rows(run.path)
        if rows is None:
            continue
        text = _rows_text(rows)
        if text in texts:
            groups[texts[text]][1].runs.append(name)
        else:
            texts[text] = len(groups)
            groups.append((rows, SameRows([name], steps=len(rows))))
    if groups:
        reference, first = groups[0]
        for rows, group in groups[1:]:
            group.first_difference = _parting(reference, rows, first.runs[0])
    return [g for _, g in groups]


def _rows_text(rows: list[tuple[int, Any]], part: int = 4096) -> str:
    """The rows as JSON (the repr of a float is exact: equal texts are equal rows, bit for bit), made a
    part at a time: one call over 200,000 rows held the interpreter for 150 ms, a stall of the window
    while the Runs tab compares on its worker thread. Parts at fixed places: equal iff the rows are."""
    return "".join(json.dumps(rows[i:i + part]) for i in range(0, len(rows), part))


def _parting(reference: list[tuple[int, Any]], rows: list[tuple[int, Any]], name: str) -> dict[str, Any]:
    ref = dict(reference)
    for step, loss in rows:
        if step in ref and json.dumps(ref[step]) != json.dumps(loss):
            return {"step": step, "loss": loss, "reference_loss": ref[step], "reference": name}
    common = [s for s, _ in rows if s in ref]
    return {"step": None, "loss": None, "reference_loss": None, "reference": name,
            "same_steps": len(common), "other_steps": len(rows) - len(common) + len(reference) - len(common)}


def comparison_lines(runs: Sequence[RunFolder]) -> list[str]:
    """The text ``revstudio runs`` prints under its table for two or more runs."""
    if len(runs) < 2:
        return []
    differ = differences(runs)
    lines: list[str] = []
    if differ:
        lines.append(f"what differs between these {len(runs)} runs (settings, network and data digests, "
                     "environment):")
        width = max(len(k) for k in differ)
        for key, by_run in differ.items():
            lines.append(f"  {key:<{width}}  {_grouped(key, by_run)}")
    else:
        lines.append(f"these {len(runs)} runs had the same settings, network, data and environment")
    return lines + rows_lines(runs)


def rows_lines(runs: Sequence[RunFolder]) -> list[str]:
    """``loss rows (...):`` and a line per group of runs with the same losses (none for fewer than 2 runs)."""
    groups = same_rows(runs) if len(runs) > 1 else []
    lines = ["loss rows (each step row's loss, compared bit for bit):"] if groups else []
    for g in groups:
        who = ", ".join(g.runs)
        d = g.first_difference
        if d is None:
            rows = f"{g.steps} row{'s' if g.steps != 1 else ''}"
            lines.append(f"  {who}: " + (f"identical ({rows})" if len(g.runs) > 1 else
                                        f"{rows} (the others are compared with these)"))
        elif d["step"] is None:
            lines.append(f"  {who}: the losses of {d['reference']} at the {d['same_steps']} steps both have, "
                         f"{d['other_steps']} step{'s' if d['other_steps'] != 1 else ''} only in one of them")
        else:
            lines.append(f"  {who}: part from {d['reference']} at step {d['step']} (loss {d['loss']!r} vs "
                         f"{d['reference_loss']!r})")
    return lines


def _grouped(key: str, by_run: dict[str, Any]) -> str:
    """``0.01 (r1, r2); 0.005 (r7)``: each value once, with the runs that have it."""
    groups: dict[str, list[str]] = {}
    for name, value in by_run.items():
        groups.setdefault(_value_text(key, value), []).append(name)
    return "; ".join(f"{text} ({', '.join(names)})" for text, names in groups.items())


def value_text(key: str, value: Any) -> str:
    """A compared value as the comparison shows it (a digest short: :func:`revstudio.core.digest.short`)."""
    return _value_text(key, value)


def _value_text(key: str, value: Any) -> str:
    if key in DIGEST_KEYS and isinstance(value, str) and value != UNRECORDED:
        from revstudio.core.digest import short

        return short(value)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True) if value else "{}"
    return str(value)
