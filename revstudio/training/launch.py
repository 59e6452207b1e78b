"""``revstudio train --nproc K``: K worker processes through torch's own launcher.

The launcher is ``torch.distributed.run`` (what ``torchrun`` runs), called in
this process. Each worker is ``python -m revstudio train ...`` with the same
options minus the distributed ones, and with the run directory fixed here so
every rank agrees on it; the launcher gives them RANK / WORLD_SIZE /
LOCAL_RANK and a rendezvous, and the session starts DDP from those (gloo on
the CPU, nccl on CUDA). Multi-node options pass through unchanged. On
SIGINT/SIGTERM the launcher forwards the signal to the workers, which stop
cleanly (rank 0 writes the final checkpoint and the ``stopped`` row); the
exit code then follows the run directory's status.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .runs import read_run

_DIST = ("nproc", "nnodes", "node_rank", "master_addr", "master_port", "rdzv_endpoint", "rdzv_id")


def launch_needed(args: argparse.Namespace) -> bool:
    if "LOCAL_RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return False  # we are a worker already
    return bool((args.nproc and args.nproc > 1) or args.nnodes or args.rdzv_endpoint or args.master_addr)


def worker_args(args: argparse.Namespace, out: str | None) -> list[str]:
    """The ``revstudio train`` arguments of every worker (no distributed flags)."""
    from revstudio.clicmd.train import OVERRIDES

    argv: list[str] = ["train"]
    if args.file:
        argv.append(os.path.abspath(args.file))
    if args.resume:
        argv += ["--resume", os.path.abspath(args.resume)]
    elif out:
        argv += ["--out", os.path.abspath(out)]
    for flag in OVERRIDES:
        value = getattr(args, flag, None)
        if value is not None:
            argv += ["--" + flag.replace("_", "-"), str(value)]
    if args.json:
        argv.append("--json")
    return argv


def launcher_args(args: argparse.Namespace, out: str | None) -> list[str]:
    argv = [f"--nproc-per-node={args.nproc or 1}", f"--nnodes={args.nnodes or 1}"]
    if args.rdzv_endpoint:
        argv += ["--rdzv-backend=c10d", f"--rdzv-endpoint={args.rdzv_endpoint}",
                 f"--rdzv-id={args.rdzv_id or 'revstudio'}"]
    elif args.master_addr or args.master_port or args.node_rank is not None:
        argv += [f"--node-rank={args.node_rank or 0}"]
        if args.master_addr:
            argv.append(f"--master-addr={args.master_addr}")
        if args.master_port:
            argv.append(f"--master-port={args.master_port}")
    elif str(args.nnodes or 1) == "1":
        argv.append("--standalone")  # a free port on this machine, no setup
    return [*argv, "--module", "revstudio", *worker_args(args, out)]


def _first_exit_code(failure: Any) -> int | None:
    """The exit code of the worker that failed first (torchrun's ChildFailedError), if any."""
    try:
        _, first = failure.get_first_failure()
        return int(first.exitcode)
    except Exception:  # not a worker's failure (a signal, the launcher's own error)
        return None


def _world(args: argparse.Namespace) -> int:
    """The processes of the whole run (this machine's times the machines, where that is a number)."""
    nnodes = str(args.nnodes or 1)
    return (args.nproc or 1) * (int(nnodes) if nnodes.isdigit() else 1)


def launch(args: argparse.Namespace) -> int:
    from revstudio.cli import CliError
    from revstudio.clicmd.train import overrides

    from .session import Request, default_run_dir, preflight

    refused = preflight(Request(file=args.file, overrides=overrides(args), out=args.out, resume=args.resume,
                                json=args.json), _world(args))
    if refused is not None:
        return refused
    out = None
    if not args.resume:
        out = args.out or default_run_dir(args.file)
    try:
        from torch.distributed import run as torchrun
    except ImportError:  # pragma: no cover - every torch with DDP has it
        raise CliError("--nproc needs torch.distributed, which this torch build lacks", 2) from None
    failure: Any = None
    try:
        torchrun.main(launcher_args(args, out))
    except SystemExit as exc:  # argument errors of the launcher
        if exc.code:
            raise CliError(f"torch.distributed.run refused the options: exit {exc.code}", 2) from None
    except BaseException as exc:  # a worker failed, or a signal stopped the launcher
        failure = exc
    run_dir = args.resume or out
    status = read_run(run_dir).status if run_dir and os.path.isdir(run_dir) else "unknown"
    if status in ("finished", "stopped"):
        return 0
    if _first_exit_code(failure) == 2:  # the first worker to fail refused the run (it said why on stderr;
        return 2                         # the others were then stopped by the launcher)
    if failure is not None and status not in ("failed",):
        print(f"revstudio train: the distributed run ended: {type(failure).__name__}: "
              f"{str(failure).splitlines()[0] if str(failure) else ''}", file=sys.stderr)
    return 1
