"""``revstudio evaluate RUN [--data SPEC] [--checkpoint last|best|FILE] [--project FILE] ... [--json]``.

Scores a trained run's weights on data in eval mode without gradients: by default the run's own
validation split, with ``--data`` a test set (``revstudio.training.evaluation``). Human text by default
(the loss, the accuracy, per-class accuracy, a confusion matrix of up to :data:`MATRIX_CLASSES` classes,
else the largest confusions, the worst samples), one JSON object with ``--json`` (docs/cli.md). The
results go to the run folder's ``evaluations/<time>.json`` too, unless ``--no-save``. Exit codes: 0
scored, 1 the graph has errors, 2 bad usage, a missing run or checkpoint, data that do not fit.
"""
from __future__ import annotations

import argparse
from typing import Any

from revstudio.cli import CliError, json_text

from ._runargs import positive_int, whole_number

MATRIX_CLASSES = 20  # the most classes the text shows a whole confusion matrix of
_SPLITS = {"validation": "the {} validation samples the run held out", "test": "the {} test samples",
           "all": "all {} samples"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="RUN", help="a run folder, or a checkpoint / state_dict file")
    parser.add_argument("--data", metavar="SPEC", help="test data: FILE.npz | FILE.pt | mnist:DIR | cifar10:DIR | "
                        "synthetic (default: the run's own validation split)")
    parser.add_argument("--checkpoint", metavar="last|best|FILE", help="the run's weights to score: last "
                        "(default, checkpoints/last.pt), best (checkpoints/best.pt, the lowest val_loss) or a "
                        "checkpoint / state_dict file")
    parser.add_argument("--project", metavar="FILE", help="the project a bare state_dict was trained from "
                        "(a run folder and a checkpoint carry their own)")
    parser.add_argument("--batch-size", type=positive_int, metavar="B", help="samples a batch (default: the run's)")
    parser.add_argument("--device", metavar="D", help="auto | cpu | cuda | cuda:N | mps | xpu (default: the run's)")
    parser.add_argument("--mode", choices=("reversible", "standard", "checkpoint"), help="default: the run's")
    parser.add_argument("--worst", type=lambda t: whole_number(t, 0), default=5, metavar="K",
                        help="list the K samples of the highest loss (default 5)")
    parser.add_argument("--no-save", action="store_true", help="do not write evaluations/<time>.json to the run")
    parser.add_argument("--json", action="store_true", help="one JSON object (docs/cli.md)")


def run(args: argparse.Namespace) -> int:
    from revstudio.training.evaluation import EvalError, evaluate

    try:
        result = evaluate(args.target, data=args.data, checkpoint=args.checkpoint, project=args.project,
                          batch_size=args.batch_size, device=args.device, mode=args.mode, worst=args.worst,
                          save=not args.no_save)
    except EvalError as exc:
        raise CliError(str(exc), exc.code) from None
    print(json_text(result) if args.json else "\n".join(text_lines(result)))
    return 0


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.4g}"


def text_lines(result: dict[str, Any], matrix: bool = True) -> list[str]:
    """The human report of an evaluation's result dict (``matrix=False``: without the confusion matrix or its
    largest confusions, which the app draws)."""
    step = f" (step {result['step']})" if result.get("step") is not None else ""
    lines = [f"evaluated {result['checkpoint']}{step}, {result['mode']} mode on {result['device']}",
             f"on {_SPLITS.get(result['split'], '{}').format(result['samples'])}: {result['data']}"]
    per = result.get("per", "sample")
    if result["task"] == "classification":
        scored = f" of {result['scored']} {per}s" if per != "sample" else f" of {result['scored']}"
        lines.append(f"loss {_num(result['loss'])} ({result['loss_name']})  accuracy {_pct(result['accuracy'])} "
                     f"({result['correct']}{scored})")
        lines += _classes(result, matrix)
    elif result["task"] == "regression":
        lines.append(f"mse {_num(result['mse'])}  mae {_num(result['mae'])}")
    else:
        lines.append(f"nll {_num(result['bits_per_dim'])} bits/dim")
    worst = result.get("worst") or []
    if worst:
        lines.append(f"worst {len(worst)} sample{'s' * (len(worst) != 1)} (highest loss):")
        if result["task"] == "classification" and per == "sample":
            lines.append(f"  {'index':>7}  {'label':>6}  {'predicted':>9}  loss")
            lines += [f"  {w['index']:>7}  {w['label']:>6}  {w['prediction']:>9}  {_num(w['loss'])}" for w in worst]
        elif result["task"] == "classification":
            lines.append(f"  {'index':>7}  {'loss':>8}  accuracy of its {per}s")
            lines += [f"  {w['index']:>7}  {_num(w['loss']):>8}  {_pct(w['accuracy'])} of {w['scored']}"
                      for w in worst]
        else:
            lines.append(f"  {'index':>7}  {'bits/dim' if result['task'] == 'flow' else 'mse':>8}")
            lines += [f"  {w['index']:>7}  {_num(w['loss']):>8}" for w in worst]
    if result.get("saved"):
        lines.append(f"saved: {result['saved']}")
    if result.get("device_note"):  # (the run's GPU is not on this machine: scored on what it has)
        lines.append(f"note: {result['device_note']}")
    return lines


def _classes(result: dict[str, Any], shown: bool = True) -> list[str]:
    from revstudio.training.eval_metrics import top_confusions

    counts, accuracy, matrix = result["class_counts"], result["class_accuracy"], result["confusion"]
    lines = ["per class:", f"  {'class':>5}  {'count':>6}  accuracy"]
    lines += [f"  {k:>5}  {counts[k]:>6}  {_pct(accuracy[k])}" for k in range(len(counts))]
    if not shown:
        return lines
    if len(matrix) <= MATRIX_CLASSES:
        width = max(3, *(len(str(v)) for row in matrix for v in row)) + 1
        lines.append("confusion matrix (rows: true class, columns: predicted):")
        lines.append("  " + " " * 5 + "".join(f"{p:>{width}}" for p in range(len(matrix))))
        lines += ["  " + f"{t:>5}" + "".join(f"{v:>{width}}" for v in row) for t, row in enumerate(matrix)]
    else:
        top = top_confusions(matrix)
        lines.append(f"largest confusions ({len(matrix)} classes; the whole matrix is in --json):")
        lines += [f"  true {t} predicted as {p}: {n}" for t, p, n in top] or ["  none"]
    return lines
