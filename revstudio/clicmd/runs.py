"""``revstudio runs [DIR] [--json]``: the training runs in DIR (default ./runs) and how they ended.

DIR may be a folder of run directories (a project's ``runs/``), one run
directory, a project file (its runs in the ``runs/`` folder beside it) or the project's folder (a
folder with no runs of its own but a ``runs/`` inside). A run labelled in
the app's Runs tab (its ``label.json``) shows its label in a column of its own. A run whose
status says running but whose process is gone is shown as killed. Torch-free.
"""
from __future__ import annotations

import argparse
import os

from revstudio.cli import CliError, json_text, printable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", nargs="?", default="runs",
                        help="folder of runs, one run, a project file or its folder (default ./runs)")
    parser.add_argument("--json", action="store_true", help="one JSON object with a list of runs")


def _metric_text(metrics: dict[str, object]) -> str:
    order = ("loss", "val_loss", "accuracy", "val_accuracy")
    keys = [k for k in order if k in metrics] + sorted(k for k in metrics if k not in order)
    return "  ".join(f"{k} {metrics[k]:.4g}" if isinstance(metrics[k], (int, float)) else f"{k} {metrics[k]}"
                     for k in keys)


def run(args: argparse.Namespace) -> int:
    from revstudio.training.runs import belongs_to, list_runs

    folder = args.dir
    if not folder:  # (an unset shell variable: not ./runs, which leaving DIR out means)
        raise CliError("DIR: the path is empty; name a folder of runs, or leave DIR out for ./runs")
    stem = None
    if os.path.isfile(folder):  # a project's runs: those named after it (the app's Runs tab lists the same)
        stem = os.path.splitext(os.path.basename(folder))[0]
        folder = os.path.join(os.path.dirname(os.path.abspath(folder)), "runs")
    if not os.path.isdir(folder):
        from ._paths import example_hint

        hint = example_hint(args.dir)
        if hint:  # (a project that is not there: "train it first" would not help)
            raise CliError(f"{args.dir}: no such file; check the path{hint}")
        raise CliError(f"{args.dir}: no such folder of runs (train with 'revstudio train FILE' first)")
    runs = [r for r in list_runs(folder) if belongs_to(r.name, stem)]
    inside = os.path.join(folder, "runs")
    if not runs and os.path.isdir(inside):  # the project's folder: its runs are in runs/
        folder, runs = inside, list_runs(inside)
    if args.json:
        print(json_text({"dir": folder, "runs": [r.to_json() for r in runs]}))  # (old files may hold NaN)
        return 0
    if not runs:
        print(printable(f"{folder}: no runs"))
        return 0
    labels = any(r.label for r in runs)  # (the label column only where some run has one)
    rows = [("run", *(("label",) if labels else ()), "status", "step", "metrics")]
    for r in runs:
        step = f"{r.step if r.step is not None else '-'}/{r.total_steps if r.total_steps else '-'}"
        label = (printable(r.label or ""),) if labels else ()
        rows.append((printable(r.name), *label, printable(str(r.status)), step, printable(_metric_text(r.metrics))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [f"{cell:>{w}}" if i == len(widths) - 1 else f"{cell:<{w}}"
                 for i, (cell, w) in enumerate(zip(row, widths, strict=False))]
        print("  ".join([*cells, row[-1]]).rstrip())
    for r in runs:
        if r.message and (r.status in ("failed", "killed", "unknown") or "warning: " in r.message  # (a diverged loss)
                          or r.message.startswith("note: ")):  # (a run too short to check whether it learns)
            print(printable(f"{r.name}: {r.message}"))
    return 0
