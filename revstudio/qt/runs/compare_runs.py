"""Several runs side by side in the Runs tab's detail: the settings that differ, and the best result.

Comparing an afternoon's runs means knowing what changed between them and
which one did best; the table's few settings columns cannot show an optimizer
or seed that differs. No Qt here: the panel shows the text.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from revstudio.qt.runs.run_dirs import RunEntry

MISSING = "–"


def several_runs_text(entries: Sequence[RunEntry], metrics: Sequence[dict[str, Any]],
                      setting_text: Callable[[str, Any], str]) -> str:
    """``N runs selected``, the best loss among them, then each differing setting run by run.

    ``metrics`` holds each entry's latest metrics (a live run's newer than its folder's). Reads the run
    folders (the Runs tab calls it on a worker thread: ``compare_worker``)."""
    lines = summary_lines(entries, metrics)
    # the settings, the network and data digests and the environment (versions, device, threads): what
    # `revstudio runs A B` compares, by the same rule, and then whether their losses came out the same
    from revstudio.training.run_compare import UNRECORDED, differences, rows_lines, value_text

    differ = differences(entries)
    if not differ:
        lines += ["", "They were trained with the same settings, network, data and environment."]
        return "\n".join([*lines, "", *rows_lines(entries)]).rstrip()
    lines += ["", "settings that differ:"]
    width = max(len(e.name) for e in entries)
    for key, by_run in differ.items():
        lines.append(f"  {key}:")
        for e, value in zip(entries, by_run.values(), strict=True):
            shown = MISSING if value == UNRECORDED else value_text(key, value) if key not in e.config \
                else setting_text(key, value)
            lines.append(f"    {e.name:<{width}}  {shown}")
    return "\n".join([*lines, "", *rows_lines(entries)]).rstrip()


def summary_lines(entries: Sequence[RunEntry], metrics: Sequence[dict[str, Any]]) -> list[str]:
    """``N runs selected`` and the best loss among them: the comparison's first lines, from the figures
    the table already holds (no file read: shown at once while the rest is made)."""
    lines = [f"{len(entries)} runs selected (their curves are overlaid in Plots)"]
    for key, label in (("val_loss", "val loss"), ("loss", "loss")):
        scored = [(m[key], e.name) for e, m in zip(entries, metrics, strict=True) if _number(m.get(key))]
        if scored:
            value, name = min(scored)
            lines.append(f"lowest {label}: {name} ({value:.4g})")
            break
    return lines


def setting_text(key: str, value: Any) -> str:
    """A run setting as the project file spells it (true, false, null: not Python's True, None),
    a memory budget as an amount, not bytes; the Runs tab and Compare Settings both show this."""
    if key == "memory_budget" and isinstance(value, int) and not isinstance(value, bool):
        from revstudio.diagnostics.budget import amount_text

        text = amount_text(value)
        return text if text == str(value) else f"{text} ({value:,} bytes)"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return str(value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
