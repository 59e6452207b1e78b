"""``revstudio gradcheck FILE [--batch B] [--dtype float64|float32] [--checkpoint RUN] [--inputs data|random] [--data SPEC] [--json]``.

Runs one training step in reversible and in standard mode on the same weights,
batch and random streams and compares every parameter and input gradient (and
each region's inversion error). The batch is the first ``B`` samples of the
project's first training step (its ``training.data``, preprocessed as ``train``
does it; with ``--data SPEC`` the batch ``train --data SPEC`` would start on), or with ``--inputs random`` (or data that cannot be read, which the
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
from revstudio.core.project_format import SNAPSHOT

from ._runargs import (
    THREADS_HELP,
    graph_errors,
    load_checked,
    positive_int,
    refuse_data_elsewhere,
    refuse_unfit,
    seed,
    threads,
    threads_set,
    tolerance,
)

CHECKPOINT = os.path.join("checkpoints", "last.pt")  # where a run directory keeps its weights


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="project file (.revs) or an exported .py")
    parser.add_argument("--batch", type=positive_int, default=2, help="batch size (default 2)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="number type of weights and data (default float64, tolerance 1e-10; "
                             "float32 uses 1e-4)")
    parser.add_argument("--mode", choices=("reversible", "checkpoint"), default="reversible",
                        help="the mode compared against standard (default reversible)")
    parser.add_argument("--seed", type=seed, default=None,
                        help="seed of the fresh weights (not with --checkpoint), the batch, the loss projection "
                             "and the random streams (dropout): a run with the same seed repeats exactly (default 0); "
                             "a batch of training data is then the one 'train --seed S' starts on (left out: the "
                             "project's training.seed; with --checkpoint always the run's)")
    parser.add_argument("--tolerance", type=tolerance, default=None,
                        help="override the pass/fail tolerance on the normalised error")
    parser.add_argument("--checkpoint", metavar="RUN_DIR_OR_CKPT", default=None,
                        help="compare at a training run's weights: its run folder (checkpoints/last.pt) or "
                             "a checkpoint file; or at a state_dict file of your own (torch.save(model.state_dict()))")
    parser.add_argument("--inputs", choices=("data", "random"), default=None,
                        help="the batch checked: 'data', the first samples of the project's training data as "
                             "train preprocesses them (the default; a standard-normal batch, said so, where they "
                             "cannot be read), or 'random', a standard-normal batch")
    parser.add_argument("--data", metavar="SPEC",
                        help="check a batch of these data instead of the project's training data, as "
                             "'train --data SPEC' reads them: synthetic | FILE.npz | FILE.pt | mnist:DIR | "
                             "cifar10:DIR (relative paths start at the project's folder); implies --inputs data")
    parser.add_argument("--scale-uint8", action=argparse.BooleanOptionalAction, default=None,
                        help="as train's: uint8 input arrays of a .npz / .pt scaled to [0, 1] (the project's "
                             "setting, by default true); --no-scale-uint8 checks them raw 0..255")
    parser.add_argument("--threads", type=threads, default=None, metavar="N", help=THREADS_HELP)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def checkpoint_file(text: str) -> str:
    """The checkpoint file ``--checkpoint`` names (a run folder or a file); a CliError (exit 2) if none."""
    if os.path.isdir(text):
        for candidate in (os.path.join(text, CHECKPOINT), os.path.join(text, "last.pt")):
            if os.path.isfile(candidate):
                return candidate
        if os.path.isfile(os.path.join(text, SNAPSHOT)):
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
    from revstudio.training.checkpoint import CheckpointError, run_training, weights_of

    try:
        model, data = weights_of(path)
    except CheckpointError as exc:
        raise CliError(f"--checkpoint {exc}", 2) from None
    if data is None:  # a bare state_dict: weights of one's own
        return model, None, None
    return model, data.get("step"), run_training(data)


def data_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The ``training`` settings ``--data`` / ``--scale-uint8`` replace, as train's flags replace
    them; a CliError (exit 2) for a data flag with ``--inputs random``, or a relative ``--data``
    that is in the current folder, not the project's (train's words)."""
    given = {flag: value for flag, value in (("--data", args.data), ("--scale-uint8", args.scale_uint8))
             if value is not None}
    if given and args.inputs == "random":
        flag = "--data" if args.data is not None else \
            "--scale-uint8" if args.scale_uint8 else "--no-scale-uint8"
        raise CliError(f"{flag} is about the training data checked, and --inputs random checks a "
                       "standard-normal batch instead: drop one of them", 2)
    if args.data is not None:
        refuse_data_elsewhere(args.file, {"--data": args.data})
    return {key: value for key, value in (("data", args.data), ("scale_uint8", args.scale_uint8))
            if value is not None}


def run(args: argparse.Namespace) -> int:
    with threads_set(args.threads):  # (before any work)
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    overrides = data_overrides(args)
    if args.seed is not None and args.checkpoint is None:  # (train --seed S orders the samples so)
        overrides["seed"] = args.seed
    args.seed = 0 if args.seed is None else args.seed
    ckpt = checkpoint_file(args.checkpoint) if args.checkpoint is not None else None
    graph, report = load_checked(args.file)
    refuse_unfit(args.file, graph, report, args.batch, args.dtype, "cpu")  # before torch is even imported
    from revstudio.diagnostics.gradcheck import StateMismatch, compare_modes, summarize
    from revstudio.diagnostics.singular import SingularLayer
    from revstudio.training.checkpoint import OWN_WEIGHTS

    state, step, training = load_weights(ckpt) if ckpt is not None else (None, None, None)
    inputs, source = batch_inputs(args, graph, report, training, ckpt, overrides)
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
        import torch

        data = {"file": args.file, **result.to_json(), "regions": [r.to_json() for r in report.regions],
                "input_batch": source, "threads": torch.get_num_threads()}  # (the count decides the last bits)
        if ckpt is not None:
            data.update(checkpoint=ckpt, step=step)
        print(json_text(data))
    else:
        lines = [f"{args.file}:"] + summarize(result)
        said = {"inputs": source["describe"], "data": source.get("summary"), "note": source.get("inputs_note")}
        lines[1:1] = [f"  {what}: {text}" for what, text in said.items() if text]  # (train's data: and note: lines)
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
                 ckpt: str | None = None, overrides: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """(the tensors to check, or None for a standard-normal batch; the JSON ``input_batch`` object).
    With a checkpoint whose run's settings are ``training``, its run's data, seed and dequantisation,
    not the project's (the run may have trained on ``--data`` or settings changed since).
    ``overrides`` (:func:`data_overrides`): ``--data`` / ``--scale-uint8``, applied to whichever
    settings are used; data named by ``--data`` that cannot be read are an error (exit 2) in
    ``train``'s words, never a standard-normal batch."""
    random = {"source": "random", "describe": f"a standard-normal batch of {args.batch} (seed {args.seed})"}
    if args.inputs == "random":
        return None, {**random, "describe": random["describe"] + ", as --inputs random asks"}
    from revstudio.training.config import ConfigError
    from revstudio.training.data import DataError, absolute_spec, from_here_hint
    from revstudio.training.first_batch import first_batch

    overrides = dict(overrides or {})
    given = overrides.get("data")
    project_dir = os.path.dirname(os.path.abspath(args.file))
    if given is not None and training is not None:  # (typed relative to the project: the run's folder is elsewhere)
        overrides["data"] = absolute_spec(given, project_dir)
    whose = "the project's" if training is None else "the run's"
    error: Exception | None = None
    try:
        found = first_batch(graph, report, args.file, args.batch, training,
                            None if ckpt is None else _run_folder(ckpt), overrides)
    except (ConfigError, DataError) as exc:
        if given is not None:  # (what train --data says of them, exit 2)
            raise CliError(f"{args.file}: {exc}" if isinstance(exc, ConfigError)
                           else f"{exc}{from_here_hint({'--data': given}, project_dir)}", 2) from None
        error = exc
    if error is not None:
        if args.inputs == "data":
            raise CliError(f"{args.file}: --inputs data: {whose} training data cannot be read: {error}", 2) \
                from None
        return None, {**random, "describe": random["describe"] + f", since {whose} training data cannot be "
                      f"read ({error}); --inputs random says so on purpose", "data_error": str(error),
                      "settings": "run" if training is not None else "project"}
    differ = "" if training is None or training == graph.training else f", not {args.file}'s, which differ"
    if training is None:
        describe = found.describe
    elif given is not None:
        describe = f"{found.describe}, with the run's other settings (its seed and dequantisation, from {ckpt})"
    else:
        describe = f"{found.describe}, with the run's settings (its data, seed and dequantisation, from {ckpt}){differ}"
    return found.inputs, {"source": "data", "data": found.data, "describe": describe,
                          "settings": "run" if training is not None else "project",
                          "data_from": "--data" if given is not None else "run" if training is not None else "project",
                          "summary": found.summary, "inputs_note": found.inputs_note}


def _run_folder(ckpt: str) -> str:
    """The run folder of checkpoint ``ckpt`` (``RUN/checkpoints/last.pt``), or the file's folder."""
    folder = os.path.dirname(os.path.abspath(ckpt))
    return os.path.dirname(folder) if os.path.basename(folder) == "checkpoints" else folder
