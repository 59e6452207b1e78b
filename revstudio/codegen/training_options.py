"""The text of an exported training script's command line (the end of ``training_loop.LOOP``):
the options that override the project's training settings (``_OPTIONS``), their checks
(``option_problem``, which refuses what revstudio's run settings refuse), the hint for a data
path given from the wrong folder, ``main()``, and the ``__main__`` guard. Plain text, never run
here; ``tests/codegen/test_training_script.py`` runs it.
"""
from __future__ import annotations

# (it starts with the blank line that parts it from ``train`` in the loop's text)
OPTIONS_AND_MAIN = '''
def patience_or_none(text: str) -> int | str:
    """--patience N (validations without improvement), or 'none': no early stopping."""
    return "none" if text.strip().lower() == "none" else int(text)


_OPTIONS = (  # flag, TRAINING key, type, choices
    ("--data", "data", str, None), ("--val-data", "val_data", str, None), ("--task", "task", str, TASK_NAMES),
    ("--val-fraction", "val_fraction", float, None), ("--steps", "steps", int, None),
    ("--epochs", "epochs", int, None), ("--batch-size", "batch_size", int, None), ("--lr", "lr", float, None),
    ("--optimizer", "optimizer", str, ("sgd", "adam", "adamw")), ("--momentum", "momentum", float, None),
    ("--weight-decay", "weight_decay", float, None),
    ("--schedule", "schedule", str, ("constant", "cosine", "onecycle")),
    ("--warmup-steps", "warmup_steps", int, None), ("--grad-clip", "grad_clip", float, None),
    ("--device", "device", str, None), ("--precision", "precision", str, ("fp32", "bf16", "fp16")),
    ("--mode", "mode", str, MODES), ("--seed", "seed", int, None), ("--log-every", "log_every", int, None),
    ("--val-every", "val_every", int, None), ("--checkpoint-every", "checkpoint_every", int, None),
    ("--threads", "threads", int, None),  # (CPU threads per process: the count changes the last bits)
    ("--patience", "patience", patience_or_none, None), ("--min-delta", "min_delta", float, None),
    ("--accumulate", "accumulate", int, None),
)


def option_problem(config: dict[str, Any]) -> str | None:
    """What is wrong with the options (revstudio's run settings refuse the same), or None."""
    def number(key: str, low: float, high: float = 3.4028234663852886e38, above: bool = False) -> bool:
        value = config[key]
        return math.isfinite(value) and (value > low if above else value >= low) and value <= high

    flag = {key: flag for flag, key, _, _ in _OPTIONS}
    if (config["steps"] or 0) < 1 and (config["epochs"] or 0) < 1:
        return "--steps or --epochs must be at least 1"
    if config["batch_size"] < 1 or config["log_every"] < 1:
        return "--batch-size and --log-every must be at least 1"
    if not number("lr", 0.0, above=True):
        return f"--lr {config['lr']!r} is out of range; use a learning rate above 0, e.g. 0.001"
    if not (number("val_fraction", 0.0) and config["val_fraction"] < 1):
        return "--val-fraction must be at least 0 and below 1"
    if not (number("momentum", 0.0) and config["momentum"] < 1):
        return f"--momentum {config['momentum']!r} is out of range; use from 0 to below 1, e.g. 0.9"
    if not number("weight_decay", 0.0):
        return f"--weight-decay {config['weight_decay']!r} is out of range; use 0 or more, e.g. 0.01"
    if config["grad_clip"] is not None and not number("grad_clip", 0.0, above=True):
        return f"--grad-clip {config['grad_clip']!r} is out of range; use a max gradient norm above 0"
    for key in ("warmup_steps", "val_every", "checkpoint_every"):
        if config[key] < 0:
            return f"{flag[key]} {config[key]} is negative; use 0 or more"
    if config.get("threads") is not None and not 1 <= config["threads"] <= 1024:
        return (f"--threads {config['threads']} is out of range; use from 1 to 1024 CPU threads (torch's "
                "default: leave --threads out)")
    if config.get("patience") is not None and config["patience"] < 1:
        return f"--patience {config['patience']} is too small; use at least 1 validation without improvement"
    if config.get("patience") is not None and (not config["val_every"] or (
            not config["val_fraction"] and config["val_data"] is None)):
        return ("--patience: early stopping counts validations, and this run has none; give --val-every above 0 "
                "and a validation set (--val-fraction or --val-data)")
    if "min_delta" in config and not number("min_delta", 0.0):
        return f"--min-delta {config['min_delta']!r} is out of range; use 0 or more, e.g. 0.001"
    if config.get("accumulate", 1) < 1:
        return f"--accumulate {config['accumulate']} is too small; use at least 1 micro-batch per step"
    if not 0 <= config["seed"] <= 2**31 - 1:
        return f"--seed {config['seed']} is out of range; use a seed from 0 to {2**31 - 1}"
    try:  # any device torch names (cpu, cuda:1, mps, xpu), as revstudio train --device takes it
        if config["device"] != "auto":
            torch.device(config["device"])
    except (RuntimeError, ValueError, TypeError):
        return f"--device {config['device']!r} is not a device torch knows; use auto, cpu, cuda, cuda:N, mps or xpu"
    return None


def _from_here(config: dict[str, Any], base_dir: str) -> str:
    """What to do about a relative data path that names nothing from ``base_dir``: the words of
    revstudio train's refusals (``from_here_hint``, ``nowhere_hint``, copied above), for --base-dir."""
    return from_here_hint({"--data": config["data"], "--val-data": config["val_data"]}, base_dir,
                          start="--base-dir", fix="(or --base-dir DIR, the folder relative paths start from)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train the exported Model (the project's training settings; "
                                                 "every option overrides one). Under torchrun: DDP.")
    for flag, key, kind, choices in _OPTIONS:
        names = (flag, "--batch") if key == "batch_size" else (flag,)
        parser.add_argument(*names, dest=key, type=kind, choices=choices, default=None,
                            help=f"default {TRAINING[key]!r}" + (" (torch's); the count of CPU threads changes "
                                                                 "the last bits and the speed" * (key == "threads")))
    parser.add_argument("--scale-uint8", dest="scale_uint8", action=argparse.BooleanOptionalAction, default=None,
                        help="uint8 inputs scaled to [0, 1] (k / 255), or with --no-scale-uint8 kept raw 0..255 "
                             f"(default {TRAINING.get('scale_uint8', True)!r})")
    here = os.path.dirname(os.path.abspath(__file__)) if "__file__" in globals() else os.getcwd()
    parser.add_argument("--base-dir", default=here, help="folder relative data paths start from "
                                                         "(default: this file's folder)")
    parser.add_argument("--out", default="checkpoint.pt", help="where to write the checkpoint (default "
                                                               "checkpoint.pt; the lowest val_loss's weights go "
                                                               "beside it, to checkpoint.best.pt)")
    parser.add_argument("--resume", default=None, metavar="CHECKPOINT", help="continue from a checkpoint")
    parser.add_argument("--init", metavar="WEIGHTS", help=INIT_HELP)
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    args = parser.parse_args(argv)
    config = dict(TRAINING)
    for key in [key for _, key, _, _ in _OPTIONS] + ["scale_uint8"]:
        value = getattr(args, key)
        if value is not None:
            config[key] = value
            if value == "none":  # (--patience none: the project's early stopping off)
                config[key] = None
            if key in ("steps", "epochs"):
                config["epochs" if key == "steps" else "steps"] = None
    problem = option_problem(config) or out_problem(args.out) or (
        INIT_AND_RESUME if args.init is not None and args.resume else None)
    if problem is not None:
        parser.error(problem)
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _ask_stop)
    except ValueError:  # (not the main thread: whoever runs main() there handles signals)
        pass
    try:
        train(config, args.out, args.base_dir, args.json, args.resume, args.init)
    except BrokenPipeError:  # the reader of the rows went away (`--json | head`): stop quietly, as cat
        devnull = os.open(os.devnull, os.O_WRONLY)  # does; the exit's own flush then has nowhere to fail
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(141) from None  # (128 + SIGPIPE, what a shell reports for cat | head)
    except (DataError, _Reject, _Failed) as exc:
        # Under torchrun every rank refuses the same options and data: rank 0 says so. A run that
        # fails may fail on one rank only, so the others name themselves.
        rank = int(os.environ.get("RANK", "0"))
        if rank == 0:
            print(f"error: {exc}{_from_here(config, args.base_dir) if isinstance(exc, DataError) else ''}",
                  file=sys.stderr)
        elif isinstance(exc, _Failed):
            print(f"error (rank {rank}): {exc}", file=sys.stderr)
        raise SystemExit(1 if isinstance(exc, _Failed) else 2) from None
'''

MAIN_GUARD = '''

if __name__ == "__main__":
    main()
'''
