"""``revstudio runs [DIR ...] [--compare] [--json]``: the training runs in DIR (default ./runs) and how they ended.

DIR may be a folder of run directories (a project's ``runs/``), one run
directory, a project file (its runs in the ``runs/`` folder beside it; a shipped example's where ``train``
and the app put them) or the project's folder (a
folder with no runs of its own but a ``runs/`` inside). A run labelled in
the app's Runs tab (its ``label.json``) shows its label in a column of its own. A run whose
status says running but whose process is gone is shown as killed, one whose state cannot be told
(no readable status, another machine's process) as unknown, each with why (``run_status.decide``, as
the app's Runs tab). ``--status`` keeps the runs of
the statuses named, ``--filter`` those matching its words (``training.run_filter``, the Runs tab's filter box), ``--sort`` orders them by a column of the app's Runs tab (``--json`` too). A run started from weights of
one's own (``train --init``, Run > Train From Weights…) names them in a line under the table. A run too
short to be checked for learning says so in a ``learning`` column, explained once under the table. Several
DIRs are listed together and compared (``--compare`` compares one DIR's runs): what differs between them and
whether their loss rows are identical (``training.run_compare``, the rule the app's Runs tab shares).
Torch-free.
"""
from __future__ import annotations

import argparse
import math
import os
import re
from typing import Any

from revstudio.cli import CliError, json_text, printable
from revstudio.training.run_status import STATUSES  # (the words and reasons the app's Runs tab shows too)
from revstudio.training.runs import RunInfo


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", nargs="*", default=["runs"],
                        help="folder of runs, one run, a project file or its folder (default ./runs); "
                             "several are listed together (a paper's run beside one's own) and compared")
    parser.add_argument("--status", metavar="STATUS[,STATUS]",
                        help=f"only runs with one of these statuses ({', '.join(STATUSES)})")
    parser.add_argument("--filter", metavar="WORDS",
                        help="only runs matching every word: part of the name, project, label, status, data or mode "
                             "(any case); 'status:failed,killed', 'label:lr' look at one field (the app's Runs tab "
                             "filter box reads the same words)")
    parser.add_argument("--sort", metavar="KEY", default="started",
                        help=f"order by one of {', '.join(SORT_KEYS)} (default started, oldest first); "
                             "'-KEY' (--sort -loss) or --reverse for descending; runs without the value last")
    parser.add_argument("--reverse", action="store_true", help="descending order of --sort")
    parser.add_argument("--compare", action="store_true",
                        help="say what differs between the runs listed (settings, network and data digests, "
                             "versions, device, threads) and whether their loss rows are identical or where "
                             "they part (the default where several DIRs are given)")
    # argparse reads "--sort -loss" as --sort without its value and an unknown option "-loss"; a descending
    # key is read as a value, as it reads "-1", so both spellings (and --sort=-loss) work
    keys = "|".join(SORT_KEYS)
    parser._negative_number_matcher = re.compile(rf"^-\d+$|^-\d*\.\d+$|^-(?:{keys})$")  # type: ignore[attr-defined]
    parser.add_argument("--json", action="store_true", help="one JSON object with a list of runs")


SORT_KEYS = ("started", "step", "loss", "accuracy", "duration")


def _sort_value(run: RunInfo, key: str) -> Any:
    """The value ``run`` is sorted by (the Runs tab's column of that name; accuracy: its ``val acc``, or
    the training accuracy where a run has no validation); None where the run has none."""
    if key == "started":  # (a run without a start time is the oldest, as the default listing has it)
        return run.started or ""
    if key == "step":
        return run.step
    if key == "duration":
        return run.duration_s()
    names = ("val_accuracy", "accuracy") if key == "accuracy" else ("loss",)
    for name in names:
        value = run.metrics.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    return None


def _keys(status: str | None, sort: str) -> tuple[list[str] | None, str, bool]:
    """(the statuses ``--status`` asks for or None, the ``--sort`` key, descending); CliError (exit 2)
    for a key or status it does not know. Checked before any folder is read: a usage error comes first
    (``runs --sort foo`` without ./runs said the folder was missing)."""
    wanted = None
    if status is not None:
        wanted = [w.strip().lower() for w in status.split(",") if w.strip()]
        wrong = [w for w in wanted if w not in STATUSES]
        if wrong or not wanted:
            raise CliError(f"--status {status!r}: {'no status given' if not wanted else 'unknown status ' + repr(wrong[0])}"
                           f"; give one or more of {', '.join(STATUSES)}, separated by commas")
    descending = sort.startswith("-")
    key = sort[1:] if descending else sort
    if key not in SORT_KEYS:
        raise CliError(f"--sort {sort!r}: unknown key; give one of {', '.join(SORT_KEYS)} "
                       "(with a '-' before it, as --sort=-loss, for descending)")
    return wanted, key, descending


def _chosen(runs: list[RunInfo], status: str | None, sort: str, reverse: bool, words: str | None = None
            ) -> list[RunInfo]:
    """``runs`` (oldest first) of the statuses in ``status`` that match the filter ``words``
    (``training.run_filter``), in the order ``sort`` asks for."""
    wanted, key, descending = _keys(status, sort)
    if wanted is not None:
        runs = [r for r in runs if r.status in wanted]
    if words is not None:
        from revstudio.training.run_filter import RunFilter, run_fields

        rule = RunFilter(words)
        runs = [r for r in runs if rule.matches(run_fields(r.name, r.label, r.status, r.config.get("data", ""),
                                                            r.config.get("mode", "")))]
    known = [r for r in runs if _sort_value(r, key) is not None]
    known.sort(key=lambda r: _sort_value(r, key), reverse=descending != reverse)  # (stable: ties stay oldest first)
    return known + [r for r in runs if _sort_value(r, key) is None]


def _metric_text(metrics: dict[str, object]) -> str:
    order = ("loss", "val_loss", "accuracy", "val_accuracy")
    keys = [k for k in order if k in metrics] + sorted(k for k in metrics if k not in order)
    return "  ".join(f"{k} {metrics[k]:.4g}" if isinstance(metrics[k], float) else f"{k} {metrics[k]}"
                     for k in keys)


def _shipped_runs(project: str, stem: str) -> list[tuple[str, list[RunInfo]]]:
    """The runs of a shipped example (by the path ``revstudio examples NAME`` prints): not beside it, in
    revstudio's own files, but where ``train`` puts them (``runs/`` in the current folder, or in revstudio's
    data folder) and where the app does (revstudio's data folder), each folder once."""
    from revstudio.training.runs import belongs_to, list_runs
    from revstudio.training.runs_folder import app_runs_folder, runs_folder

    found: dict[str, tuple[str, list[RunInfo]]] = {}
    for folder in (runs_folder(project), app_runs_folder()):
        if os.path.isdir(folder) and os.path.realpath(folder) not in found:
            found[os.path.realpath(folder)] = (folder, [r for r in list_runs(folder) if belongs_to(r.name, stem)])
    if not found:
        raise CliError(f"{project}: no runs of this example yet (looked in {runs_folder(project)} and "
                       f"{app_runs_folder()}); train it with 'revstudio train {project}' first")
    return list(found.values())


def _runs_of(arg: str) -> list[tuple[str, list[RunInfo]]]:
    """[(a folder listed, its runs)] for one DIR argument (two folders for a shipped example)."""
    from revstudio.resources import is_shipped
    from revstudio.training.runs import belongs_to, list_runs

    folder = arg
    if not folder:  # (an unset shell variable: not ./runs, which leaving DIR out means)
        raise CliError("DIR: the path is empty; name a folder of runs, or leave DIR out for ./runs")
    stem = None
    if os.path.isfile(folder):  # a project's runs: those named after it (the app's Runs tab lists the same)
        stem = os.path.splitext(os.path.basename(folder))[0]
        if is_shipped(folder):
            return _shipped_runs(folder, stem)
        folder = os.path.join(os.path.dirname(os.path.abspath(folder)), "runs")
    if not os.path.isdir(folder):
        from ._paths import example_hint

        hint = example_hint(arg)
        if hint:  # (a project that is not there: "train it first" would not help)
            from revstudio.core.project import cannot_read

            raise CliError(f"{cannot_read(arg)}{hint}")
        if stem is not None:  # (a project that is there: its runs/ folder is what is missing)
            raise CliError(f"{arg}: no runs of this project yet (looked in {folder}); train it with "
                           f"'revstudio train {arg}' first")
        raise CliError(f"{arg}: no such folder of runs (train with 'revstudio train FILE' first)")
    runs = [r for r in list_runs(folder) if belongs_to(r.name, stem)]
    inside = os.path.join(folder, "runs")
    if not runs and os.path.isdir(inside):  # the project's folder: its runs are in runs/
        folder, runs = inside, list_runs(inside)
    return [(folder, runs)]


def listing(args: argparse.Namespace) -> tuple[list[str], list[RunInfo]]:
    """(the folders listed, one per DIR, and their runs chosen and ordered: a run named twice, or inside
    two folders named, once) for ``args`` (``dir``: one DIR or a list, ``status``, ``sort``, ``reverse``);
    ``rs.runs`` lists by it too. CliError (exit 2) for a DIR or a key it cannot use."""
    _keys(args.status, args.sort)  # (the usage errors before the folders': a bad key whatever the folder)
    found = [one for d in ([args.dir] if isinstance(args.dir, str) else args.dir) for one in _runs_of(d)]
    runs: list[RunInfo] = []
    seen: set[str] = set()
    for run_info in (r for _, listed in found for r in listed):
        if os.path.realpath(run_info.path) not in seen:
            seen.add(os.path.realpath(run_info.path))
            runs.append(run_info)
    return list(dict.fromkeys(f for f, _ in found)), _chosen(runs, args.status, args.sort, args.reverse,
                                                             getattr(args, "filter", None))


def run(args: argparse.Namespace) -> int:
    from revstudio.training.learning import UNCHECKED, unchecked_why
    from revstudio.training.run_compare import names
    from revstudio.training.runs import human_duration

    dirs, runs = listing(args)
    folder = ", ".join(dirs)
    compare = (args.compare or len(args.dir) > 1) and len(runs) > 1  # (reading every run's rows: asked for)
    if args.json:  # (old files may hold NaN)
        from revstudio.training.run_compare import differences, provenance, same_rows

        print(json_text({"dir": dirs[0], "dirs": dirs,
                         "runs": [{**r.to_json(), **provenance(r.path)} for r in runs],
                         **({"differ": differences(runs), "same_rows": [g.to_json() for g in same_rows(runs)]}
                            if compare else {})}))
        return 0
    if not runs:
        print(printable(f"{folder}: no runs" + (f" with status {args.status}" if args.status else "")
                        + (f" matching {args.filter!r}" if args.filter is not None else "")))
        return 0
    from revstudio.training.evaluation import evaluation_summary, evaluation_text

    labels = any(r.label for r in runs)  # (the label column only where some run has one)
    evaluated = {r.path: evaluation_text(evaluation_summary(r.path)) for r in runs}
    shown = any(evaluated.values())  # (the evaluated column only where some run has a saved evaluation)
    unchecked = {r.path for r in runs if (r.message or "").startswith(f"note: {UNCHECKED}")}
    rows = [("run", *(("label",) if labels else ()), "status", "step", "duration",
             *(("learning",) if unchecked else ()), *(("evaluated",) if shown else ()), "metrics")]
    for r, name in zip(runs, names(runs), strict=True):
        step = f"{r.step if r.step is not None else '-'}/{r.total_steps if r.total_steps else '-'}"
        label = (printable(r.label or ""),) if labels else ()
        learning = ("not checked" if r.path in unchecked else "",) if unchecked else ()
        rows.append((printable(name), *label, printable(str(r.status)), step, human_duration(r.duration_s()),
                     *learning, *((printable(evaluated[r.path]),) if shown else ()),
                     printable(_metric_text(r.metrics))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [f"{cell:>{w}}" if rows[0][i] in ("step", "duration") else f"{cell:<{w}}"
                 for i, (cell, w) in enumerate(zip(row, widths, strict=False))]
        print("  ".join([*cells, row[-1]]).rstrip())
    for r in runs:
        if r.init_from:  # (train --init: which weights it started from; a path too long for a column)
            print(printable(f"{r.name}: started from weights {r.init_from}"))
        if r.path in unchecked:  # (said once below: one line under each short run drowns a long table)
            continue
        if r.message and (r.status in ("failed", "killed", "unknown") or "warning: " in r.message  # (a diverged loss)
                          or r.message.startswith("note: ")):
            print(printable(f"{r.name}: {r.message}"))
    if unchecked:
        print(f"learning not checked: {unchecked_why()}")
    from revstudio.training.run_compare import comparison_lines

    for line in comparison_lines(runs) if compare else ():  # (what differs, and whether the losses do)
        print(printable(line))
    return 0
