"""``revstudio train FILE [--steps N | --epochs E] [--data SPEC] ... [--nproc K] [--resume DIR] [--json]``.

Trains a project with the settings of its ``training`` section, overridden by
the flags, into a run directory (docs/cli.md has the JSON rows). With
``--nproc K`` (or multi-node flags) the run goes through torch's own launcher,
``torch.distributed.run``, which starts the K worker processes; each worker is
this same command. Exit codes: 0 finished or stopped by a signal, 1 the graph
or the run failed (NaN, out of memory), 2 bad usage, config or data.
"""
from __future__ import annotations

import argparse
import os
from typing import Any

from revstudio.cli import CliError
from revstudio.training.init_words import INIT_AND_RESUME, INIT_HELP, no_init_file

from ._runargs import (
    NO_BUDGET,
    THREADS_HELP,
    memory_amount,
    port,
    positive_int,
    refuse_data_elsewhere,
    seed,
    threads,
    whole_number,
)

# flag -> training key; the values are checked by TrainConfig (errors name the key)
OVERRIDES = {
    "steps": "steps", "epochs": "epochs", "data": "data", "val_data": "val_data", "mode": "mode",
    "device": "device", "lr": "lr", "batch_size": "batch_size", "optimizer": "optimizer",
    "precision": "precision", "seed": "seed", "schedule": "schedule", "task": "task",
    "momentum": "momentum", "weight_decay": "weight_decay", "grad_clip": "grad_clip", "warmup_steps": "warmup_steps",
    "log_every": "log_every", "val_every": "val_every", "gradcheck_every": "gradcheck_every",
    "memory_every": "memory_every", "checkpoint_every": "checkpoint_every", "val_fraction": "val_fraction",
    "memory_budget": "memory_budget", "scale_uint8": "scale_uint8", "threads": "threads",
    "patience": "patience", "min_delta": "min_delta", "accumulate": "accumulate",
}


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _count(text: str) -> int:
    return whole_number(text, 0)


def _positive(text: str) -> int:
    return whole_number(text, 1)


NO_PATIENCE = "none"  # (--patience none: the project's early stopping turned off; so passed to --nproc's workers)


def _patience(text: str) -> int | str:
    """argparse type for --patience: validations without improvement, 1 or more, or 'none'."""
    if text.strip().lower() in ("none", "null", "off"):
        return NO_PATIENCE
    return whole_number(text, 1, "--patience 5 (validations without improvement), or --patience none")


def _accumulate(text: str) -> int:
    """argparse type for --accumulate: micro-batches per optimizer step, 1 or more."""
    return whole_number(text, 1, "--accumulate 4 (micro-batches per optimizer step; 1: none)")


def _nnodes(text: str) -> str:
    """argparse type for --nnodes: a number of machines (1 or more), or MIN:MAX as torchrun takes it.
    (``--nnodes 0`` reached the launcher as a world of no processes, an internal ZeroDivisionError.)"""
    low, colon, high = text.partition(":")
    try:
        bounds = [int(low), int(high)] if colon else [int(low)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of machines; use e.g. --nnodes 2, "
                                         "or MIN:MAX (--nnodes 1:4) for an elastic run") from None
    if min(bounds) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a run needs at least 1 machine; use e.g. --nnodes 2")
    if bounds[0] > bounds[-1]:
        raise argparse.ArgumentTypeError(f"{text!r}: MIN is more than MAX; write the fewer machines first, "
                                         f"e.g. --nnodes {bounds[1]}:{bounds[0]}")
    return ":".join(str(b) for b in bounds)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", nargs="?", help="project file (.revs) or an exported .py; not needed with --resume")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--steps", type=_positive, help="optimizer steps (default: the project's, 200)")
    length.add_argument("--epochs", type=_positive, help="passes over the training data instead of --steps")
    parser.add_argument("--data", metavar="SPEC",
                        help="synthetic | FILE.npz | FILE.pt | mnist:DIR | cifar10:DIR (default: the project's, synthetic)")
    parser.add_argument("--val-data", metavar="SPEC", help="a separate validation set (default: hold out "
                                                           "--val-fraction of the data)")
    parser.add_argument("--val-fraction", type=_number, help="share held out for validation (default: the project's, 0.1)")
    parser.add_argument("--task", choices=("auto", "classification", "regression", "flow"))
    parser.add_argument("--out", metavar="DIR", help="run directory (default runs/<project>-<time>/ beside it)")
    parser.add_argument("--resume", metavar="DIR", help="continue the run in DIR from its last checkpoint")
    parser.add_argument("--init", metavar="WEIGHTS", help=INIT_HELP)
    parser.add_argument("--mode", choices=("reversible", "standard", "checkpoint"))
    parser.add_argument("--device", help="auto | cpu | cuda | cuda:N | mps | xpu | any device torch names")
    parser.add_argument("--lr", type=_number, help="learning rate (default: the project's, 0.001)")
    parser.add_argument("--batch-size", type=positive_int, help="global batch size (default: the project's, 32)")
    parser.add_argument("--optimizer", choices=("sgd", "adam", "adamw"))
    parser.add_argument("--schedule", choices=("constant", "cosine", "onecycle"))
    parser.add_argument("--warmup-steps", type=_count)
    parser.add_argument("--momentum", type=_number, help="SGD's momentum (default: the project's, 0.9)")
    parser.add_argument("--weight-decay", type=_number)
    parser.add_argument("--grad-clip", type=_number, help="max global gradient norm")
    parser.add_argument("--precision", choices=("fp32", "bf16", "fp16"), help="fp16 needs CUDA")
    parser.add_argument("--seed", type=seed)
    parser.add_argument("--patience", type=_patience, metavar="N",
                        help="early stopping: end the run once val_loss has not improved for N validations in a "
                             "row (checkpoints/best.pt holds the best weights); 'none' never stops early")
    parser.add_argument("--min-delta", type=_number, metavar="X",
                        help="the fall in val_loss below its best that counts as an improvement for --patience")
    parser.add_argument("--accumulate", type=_accumulate, metavar="K",
                        help="gradient accumulation: each optimizer step sums the gradients of K micro-batches "
                             "of --batch-size samples (the effective batch is batch size x K, the memory one "
                             "micro-batch's)")
    parser.add_argument("--threads", type=threads, metavar="N",  # (the default is stated as the others')
                        help=THREADS_HELP.replace("the process (", "each process (").replace("beside the result",
                                                                                             "in environment.json"))
    parser.add_argument("--memory-budget", type=memory_amount, metavar="BYTES",
                        help="reversible mode keeps the activations of the regions (first steps first) "
                             "that fit in this many bytes and runs the rest reversibly, buying speed "
                             "back: e.g. 64MiB, 1.5GB; 0 keeps none; 'none' runs without the project's "
                             "budget ('revstudio memory FILE --budget' shows what a budget keeps)")
    parser.add_argument("--scale-uint8", action=argparse.BooleanOptionalAction, default=None,
                        help="uint8 input arrays of a .npz / .pt scaled to [0, 1] (k / 255, as mnist: and "
                             "cifar10: pixels); --no-scale-uint8 keeps them raw 0..255 (labels never change)")
    every = {"log": "step rows", "val": "validations (val rows)", "gradcheck": "gradient checks (gradcheck rows)",
             "memory": "memory measurements (peak_bytes on the step row)", "checkpoint": "checkpoints"}
    for name, what in every.items():
        parser.add_argument(f"--{name}-every", type=_count, metavar="N", help=f"steps between {what}"
                            + {"log": "", "val": "; 0: at the end only", "checkpoint": "; 0: at the end only"}
                            .get(name, "; 0: none"))
    _state_defaults(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per line (docs/cli.md)")
    dist = parser.add_argument_group("distributed (torch.distributed.run)")
    dist.add_argument("--nproc", type=_positive, help="processes on this machine (DistributedDataParallel)")
    dist.add_argument("--nnodes", type=_nnodes, help="machines, or MIN:MAX")
    dist.add_argument("--node-rank", type=_count, help="this machine's rank")
    dist.add_argument("--master-addr", help="address of the rank-0 machine")
    dist.add_argument("--master-port", type=port, help="its port")
    dist.add_argument("--rdzv-endpoint", help="a rendezvous endpoint HOST:PORT (c10d), instead of master-*")
    dist.add_argument("--rdzv-id", help="the rendezvous job id")


def _state_defaults(parser: argparse.ArgumentParser) -> None:
    """Each override's help ends with the value it replaces when the project leaves the key out
    (docs/cli.md's table), where the help does not say it already."""
    from revstudio.training.config import DEFAULTS  # (torch-free)

    for action in parser._actions:
        key = OVERRIDES.get(action.dest)
        if key is None or "default" in (action.help or ""):
            continue
        value = DEFAULTS[key]
        value = "none" if value is None else str(value).lower() if isinstance(value, bool) else value
        action.help = f"{action.help} (default: the project's, {value})" if action.help \
            else f"default: the project's, {value}"


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    out = {key: getattr(args, flag) for flag, key in OVERRIDES.items() if getattr(args, flag, None) is not None}
    if out.get("memory_budget") == NO_BUDGET:  # --memory-budget none: the project's budget removed
        out["memory_budget"] = None
    if out.get("patience") == NO_PATIENCE:  # --patience none: the project's early stopping off
        out["patience"] = None
    return out


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except CliError as exc:
        if not args.json:
            raise
        # a reader of the rows (the app) gets every refusal as the same kind of row
        from revstudio.training.output import dumps

        print(dumps({"kind": "event", "event": "failed", "time": 0.0, "step": None, "message": str(exc),
                     "exit_code": exc.code}), flush=True)
        return exc.code


def _not_a_project(path: str) -> str:
    """Why ``path``, which is not a regular file, cannot be trained (a run reads it twice and
    records a snapshot beside it, which a pipe cannot give)."""
    if os.path.isdir(path):
        from revstudio.training.runs import SNAPSHOT, is_run_dir

        if is_run_dir(path):
            return (f"{path}: is a folder (a run directory); to continue that run use --resume {path}; to train "
                    f"it again from its start (to reproduce it), train its snapshot: revstudio train "
                    f"{os.path.join(path, SNAPSHOT)} --out NEW_DIR")
        return f"{path}: is a folder, not a project file; give the .revs file to train"
    if os.path.exists(path):
        return f"{path}: not a regular file (a pipe or a device); save the project to a .revs file and train that"
    if path == "-":
        from .check import NOT_STDIN

        return f"-: {NOT_STDIN}; save the project to a .revs file and train that"
    from revstudio.core.project import cannot_read

    from ._paths import example_hint

    return f"{cannot_read(path)}{example_hint(path)}"


def _data_here(args: argparse.Namespace) -> None:
    """Refuse a relative ``--data`` / ``--val-data`` the project's folder does not have but the
    current folder does (:func:`._runargs.refuse_data_elsewhere`)."""
    refuse_data_elsewhere(args.file, {"--data": args.data, "--val-data": args.val_data})


def refuse(args: argparse.Namespace, in_memory: bool = False) -> None:
    """Raise the CliError (exit 2) for what ``train`` refuses before anything starts; ``rs.train``
    asks the same (``in_memory``: its project is a Graph, ``args.file`` only its name)."""
    for flag, value in (("--out", args.out), ("--resume", args.resume)):
        if value == "":  # (an unset shell variable: not "no flag", which would run somewhere else)
            raise CliError(f"{flag}: the path is empty; name a folder, e.g. {flag} runs/first")
    if args.file == "":
        raise CliError("FILE: the path is empty; name the project to train, e.g. revstudio train model.revs")
    if not args.file and not args.resume:
        raise CliError("train needs a project FILE, or --resume DIR to continue a run (see 'revstudio train --help')")
    if args.file and not args.resume and not in_memory and not os.path.isfile(args.file):
        raise CliError(_not_a_project(args.file))
    if args.init is not None and args.resume:
        raise CliError(INIT_AND_RESUME)
    if args.init is not None and not os.path.exists(args.init):
        raise CliError(no_init_file(args.init))
    if args.resume and not os.path.isdir(args.resume):
        raise CliError(f"--resume {args.resume}: no such run directory; give a run folder "
                       "'revstudio runs' lists (one with project.revs and checkpoints/ in it)")
    if args.file and not args.resume:
        _data_here(args)


def _run(args: argparse.Namespace) -> int:
    refuse(args)
    from revstudio.training.launch import launch, launch_needed

    if launch_needed(args):
        return launch(args)
    from revstudio.training.session import Request, run_session

    req = Request(file=args.file, overrides=overrides(args), out=args.out, resume=args.resume, json=args.json,
                  init=args.init)
    return run_session(req)
