"""``revstudio gradcheck FILE [--batch B] [--dtype float64|float32] [--checkpoint RUN] [--inputs data|random] [--json]``.

Runs one training step in reversible and in standard mode on the same weights,
batch and random streams and compares every parameter and input gradient (and
each region's inversion error). The batch is the first ``B`` samples of the
project's first training step (its ``training.data``, preprocessed as ``train``
does it), or with ``--inputs random`` (or data that cannot be read, which the
output says) a standard-normal one. The weights are freshly initialised, or with
``--checkpoint`` a training run's (``RUN_DIR/checkpoints/last.pt`` or a
checkpoint file, read with ``weights_only=True``). Exit 0 when they agree
within tolerance (1e-10 in float64), 1 when they do not or the graph has
errors, 2 for bad usage or an unreadable file, a checkpoint included.
"""
from __future__ import annotations

import argparse
import os
from typing import Any

from revstudio.cli import CliError, json_text, printable

from ._runargs import graph_errors, load_checked, positive_int, refuse_unfit, seed, tolerance

CHECKPOINT = os.path.join("checkpoints", "last.pt")  # where a run directory keeps its weights


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="project file (.revs) or an exported .py")
    parser.add_argument("--batch", type=positive_int, default=2, help="batch size (default 2)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="number type of weights and data (default float64, tolerance 1e-10; "
                             "float32 uses 1e-4)")
    parser.add_argument("--mode", choices=("reversible", "checkpoint"), default="reversible",
                        help="the mode compared against standard (default reversible)")
    parser.add_argument("--seed", type=seed, default=0,
                        help="seed of the fresh weights (not with --checkpoint), the batch, the loss projection "
                             "and the random streams (dropout): a run with the same seed repeats exactly (default 0)")
    parser.add_argument("--tolerance", type=tolerance, default=None,
                        help="override the pass/fail tolerance on the normalised error")
    parser.add_argument("--checkpoint", metavar="RUN_DIR_OR_CKPT", default=None,
                        help="compare at a training run's weights: its run folder (checkpoints/last.pt) or "
                             "a checkpoint file; or at a state_dict file of your own (torch.save(model.state_dict()))")
    parser.add_argument("--inputs", choices=("data", "random"), default=None,
                        help="the batch checked: 'data', the first samples of the project's training data as "
                             "train preprocesses them (the default; a standard-normal batch, said so, where they "
                             "cannot be read), or 'random', a standard-normal batch")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def checkpoint_file(text: str) -> str:
    """The checkpoint file ``--checkpoint`` names (a run folder or a file); a CliError (exit 2) if none."""
    if os.path.isdir(text):
        for candidate in (os.path.join(text, CHECKPOINT), os.path.join(text, "last.pt")):
            if os.path.isfile(candidate):
                return candidate
        if os.path.isfile(os.path.join(text, "project.revs")):
            raise CliError(f"--checkpoint {text}: this run has saved no checkpoint yet ({CHECKPOINT} is "
                           "missing); train it longer or pick another run", 2)
        raise CliError(f"--checkpoint {text}: a folder that is neither a run directory nor holds {CHECKPOINT}; "
                       "pass a run folder (runs/NAME) or a .pt file", 2)
    if not os.path.exists(text):
        raise CliError(f"--checkpoint {text}: no such file or folder", 2)
    return text


def load_weights(path: str) -> tuple[dict[str, Any], Any, dict[str, Any] | None]:
    """(the model's state dict, the step, the run's ``training`` section or None) of a training
    checkpoint; a CliError (exit 2) if unreadable."""
    from revstudio.training.checkpoint import CheckpointError, weights_of

    try:
        model, data = weights_of(path)
    except CheckpointError as exc:
        raise CliError(f"--checkpoint {exc}", 2) from None
    if data is None:  # a bare state_dict: weights of one's own
        return model, None, None
    return model, data.get("step"), run_training(data)


def run_training(data: dict[str, Any]) -> dict[str, Any] | None:
    """The ``training`` section of the project snapshot a checkpoint carries (the settings its run
    trained with: ``--data`` and the other overrides included, data paths absolute), or None."""
    import json

    try:
        section = json.loads(str(data.get("graph"))).get("training")
    except (ValueError, AttributeError):
        return None
    return section if isinstance(section, dict) else None


def run(args: argparse.Namespace) -> int:
    ckpt = checkpoint_file(args.checkpoint) if args.checkpoint is not None else None
    graph, report = load_checked(args.file)
    refuse_unfit(args.file, graph, report, args.batch, args.dtype, "cpu")  # before torch is even imported
    from revstudio.diagnostics.gradcheck import StateMismatch, compare_modes, summarize
    from revstudio.diagnostics.singular import SingularLayer
    from revstudio.training.checkpoint import OWN_WEIGHTS

    state, step, training = load_weights(ckpt) if ckpt is not None else (None, None, None)
    inputs, source = batch_inputs(args, graph, report, training, ckpt)
    with graph_errors(args.file):
        try:
            result = compare_modes(graph, batch=args.batch, dtype=args.dtype, seed=args.seed, mode=args.mode,
                                   tolerance=args.tolerance, state=state, inputs=inputs)
        except StateMismatch as exc:
            own = f"; {OWN_WEIGHTS}" if step is None and training is None else ""
            raise CliError(f"--checkpoint {ckpt}: {exc} (project {args.file}){own}", 2) from None
        except SingularLayer as exc:
            raise CliError(f"{args.file}: {exc}", 1) from None
    if args.json:
        data = {"file": args.file, **result.to_json(), "regions": [r.to_json() for r in report.regions],
                "input_batch": source}
        if ckpt is not None:
            data.update(checkpoint=ckpt, step=step)
        print(json_text(data))
    else:
        lines = [f"{args.file}:"] + summarize(result)
        lines.insert(1, f"  inputs: {source['describe']}")
        if ckpt is not None:
            lines.insert(1, f"  weights: {ckpt}" + (f" (step {step})" if step is not None else ""))
        if not report.regions:
            lines.append("  note: the graph has no reversible region, so both modes run plain autograd")
        if result.ok:
            lines.append(f"OK: {args.mode} and standard gradients agree within {result.tolerance:g}")
        else:
            lines.append(f"FAILED: {len(result.failures())} disagreement(s):")
            lines += [f"  {line}" for line in result.failures()[:20]]
        print(printable("\n".join(lines)))
    return 0 if result.ok else 1


def batch_inputs(args: argparse.Namespace, graph: Any, report: Any, training: dict[str, Any] | None = None,
                 ckpt: str | None = None) -> tuple[Any, dict[str, Any]]:
    """(the tensors to check, or None for a standard-normal batch; the JSON ``input_batch`` object).
    With a checkpoint whose run's settings are ``training``, its run's data, seed and dequantisation,
    not the project's (the run may have trained on ``--data`` or settings changed since)."""
    random = {"source": "random", "describe": f"a standard-normal batch of {args.batch} (seed {args.seed})"}
    if args.inputs == "random":
        return None, {**random, "describe": random["describe"] + ", as --inputs random asks"}
    from revstudio.training.config import ConfigError
    from revstudio.training.data import DataError
    from revstudio.training.first_batch import first_batch

    whose = "the project's" if training is None else "the run's"
    try:
        found = first_batch(graph, report, args.file, args.batch, training,
                            None if ckpt is None else _run_folder(ckpt))
    except (ConfigError, DataError) as exc:
        if args.inputs == "data":
            raise CliError(f"{args.file}: --inputs data: {whose} training data cannot be read: {exc}", 2) \
                from None
        return None, {**random, "describe": random["describe"] + f", since {whose} training data cannot be "
                      f"read ({exc}); --inputs random says so on purpose", "data_error": str(exc),
                      "settings": "run" if training is not None else "project"}
    differ = "" if training is None or training == graph.training else f", not {args.file}'s, which differ"
    describe = found.describe if training is None else f"{found.describe}, with the run's settings (its data, " \
        f"seed and dequantisation, from {ckpt}){differ}"
    return found.inputs, {"source": "data", "data": found.data, "describe": describe,
                          "settings": "run" if training is not None else "project"}


def _run_folder(ckpt: str) -> str:
    """The run folder of checkpoint ``ckpt`` (``RUN/checkpoints/last.pt``), or the file's folder."""
    folder = os.path.dirname(os.path.abspath(ckpt))
    return os.path.dirname(folder) if os.path.basename(folder) == "checkpoints" else folder
