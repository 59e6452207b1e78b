"""``revstudio train --nproc K``: K worker processes through torch's own launcher.

The launcher is ``torch.distributed.run`` (what ``torchrun`` runs), called in
this process. Each worker is ``python -m revstudio train ...`` (in the frozen app
``revstudio --run-module revstudio train ...``, :mod:`revstudio.frozen`) with the same
options minus the distributed ones, and with the run directory fixed here so
every rank agrees on it; the launcher gives them RANK / WORLD_SIZE /
LOCAL_RANK and a rendezvous, and the session starts DDP from those (gloo on
the CPU, nccl on CUDA). Multi-node options pass through unchanged. On
SIGINT/SIGTERM the launcher forwards the signal to the workers, which stop
cleanly (rank 0 writes the final checkpoint and the ``stopped`` row); the
exit code then follows the run directory's status. The launcher catches the
signals from its first moment: one that comes before the workers start (while
the run is checked, or before torchrun has put in its own handlers) stops the
run there with the ``stopped`` row and status a single process gives, exit 0.
torchrun is told to leave SIGINT and SIGTERM to it (``--signals-to-handle``), so
a second one stops the run now as it stops a single process (:func:`_force_stop`:
the workers killed mid-step, the run recorded as stopped at its last checkpoint,
revstudio's line, exit 130).
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from revstudio.cli import PIPE_CLOSED, message_line

from .runs import READER_GONE, STATUS, read_run
from .stopping import FIRST_SIGINT, FIRST_SIGTERM, StopNow, say

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
    if getattr(args, "init", None):
        argv += ["--init", os.path.abspath(args.init)]
    for flag in OVERRIDES:
        value = getattr(args, flag, None)
        if isinstance(value, bool):  # (a --flag / --no-flag pair takes no value)
            argv.append(("--" if value else "--no-") + flag.replace("_", "-"))
        elif value is not None:
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
    if _takes_signal_list():  # SIGINT and SIGTERM stay the launcher's own (_LaunchStop): a second one stops now
        argv.append("--signals-to-handle=" + ",".join(s for s in ("SIGHUP", "SIGQUIT") if hasattr(signal, s)))
    from revstudio import frozen

    if frozen.is_frozen():  # no Python to run "-m revstudio" with: each worker is the program itself
        return [*argv, "--no-python", *frozen.child_argv("revstudio", worker_args(args, out))]
    return [*argv, "--module", "revstudio", *worker_args(args, out)]


def _takes_signal_list() -> bool:
    """Whether this torch's launcher takes ``--signals-to-handle`` (torch 2.5 and later): without it,
    torchrun's handlers replace the launcher's, and a second Ctrl+C waits for the step to end."""
    try:
        from torch.distributed import run as torchrun

        return any("--signals-to-handle" in a.option_strings for a in torchrun.get_args_parser()._actions)
    except Exception:  # (an older or trimmed torch: its own handlers, as before)
        return False


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


SIGNALS_ENV = "TORCHELASTIC_SIGNALS_TO_HANDLE"
_ALSO_TAKEN = tuple(getattr(signal, name) for name in ("SIGHUP", "SIGQUIT") if hasattr(signal, name))


class _LaunchStop:
    """SIGINT/SIGTERM in the launcher before torchrun's own handlers are in (they replace these
    when it starts the workers): noted while the run is checked; once torchrun is starting,
    raised as the SignalException its handlers raise, so it shuts down as for its own."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.launching = False
        self.previous: dict[int, Any] = {}
        self.env: str | None = None
        self.count = 0  # signals while launching: the second stops the run now
        self.force: Callable[[], bool] | None = None  # stops it now; False where it had ended already

    def handler(self, signum: int, _frame: Any) -> None:
        self.signal = signum
        if not self.launching:
            return
        self.count += 1
        if self.count >= 2:
            # torchrun is shutting the workers down gently (they end the step they are in); a second
            # signal stops them now, as it stops one process: recorded at the last checkpoint, exit 130
            if self.force is not None and self.force():
                raise StopNow()
            return
        say(FIRST_SIGINT if signum == signal.SIGINT else FIRST_SIGTERM)
        from torch.distributed.elastic.multiprocessing.api import SignalException

        sigval = signal.Signals(signum)
        raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)

    def __enter__(self) -> _LaunchStop:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self.previous[sig] = signal.signal(sig, self.handler)
            except (ValueError, OSError):  # not the main thread (tests calling in-process)
                continue
            early = getattr(self.previous[sig], "stop_signal", None)  # (came while loading: EarlyStop)
            if early is not None:
                self.signal = early
        # torchrun also takes SIGHUP and SIGQUIT, and names them in the environment, for good: called
        # in a session (a notebook's cli.main), it gets its handlers and environment back as they were
        for sig in _ALSO_TAKEN:
            try:
                self.previous.setdefault(sig, signal.getsignal(sig))
            except (ValueError, OSError):  # pragma: no cover - a platform without the signal
                continue
        self.env = os.environ.get(SIGNALS_ENV)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self.previous.items():
            if old is not None:  # (None: a handler not set from Python, which cannot be put back)
                try:
                    signal.signal(sig, old)
                except (ValueError, OSError):  # not the main thread
                    continue
        if self.env is None:
            os.environ.pop(SIGNALS_ENV, None)
        else:
            os.environ[SIGNALS_ENV] = self.env


class _StopNoise(logging.Filter):
    """Drops the lines torch's elastic agent logs as it shuts the workers down on a stop
    ("Received 2 death signal, shutting down workers", "Sending process N closing signal SIGINT"):
    they came after revstudio's own ``stopped`` message, which is the one a user needs."""

    def __init__(self) -> None:
        super().__init__()
        self.stopping = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("torch.distributed.elastic"):
            return True
        if "death signal" in str(record.msg) or "closing signal" in str(record.msg):
            self.stopping = True  # (from here on the agent only reports its own shutdown)
        return not self.stopping


@contextlib.contextmanager
def _quiet_stop() -> Any:
    """:class:`_StopNoise` on the handlers torch's loggers write through, while torchrun runs."""
    noise = _StopNoise()
    handlers = {h for name in ("", "torch", "torch.distributed") for h in logging.getLogger(name).handlers}
    for handler in handlers:
        handler.addFilter(noise)
    try:
        yield noise
    finally:
        for handler in handlers:
            handler.removeFilter(noise)


def _stopped(run_dir: str, resumed: bool, as_json: bool) -> int:
    """The ``stopped`` row and status of a run stopped before its workers wrote them; exit 0."""
    from .output import RunDirRows
    from .output import dumps as row_dumps
    from .runs import RunDirError, RunWriter

    info = read_run(run_dir) if resumed else None
    step = info.step if info is not None and isinstance(info.step, int) else 0
    row = {"kind": "event", "event": "stopped", "time": 0.0, "step": step,
           "checkpoint": "checkpoints/last.pt" if info is not None and info.has_checkpoint else None}
    print(row_dumps(row) if as_json else f"stopped before step {step + 1}", flush=True)
    try:
        writer = RunWriter(run_dir, resumed=resumed)
        try:
            if info is not None:
                writer.status.update(total_steps=info.total_steps)
            RunDirRows(writer).on_row(row)
        finally:
            writer.close()
    except RunDirError as exc:  # (the stop stands; the folder just cannot record it)
        print(message_line(str(exc)), file=sys.stderr)
    return 0


def _children() -> list[int]:
    """The processes this one started (torchrun's workers): ``/proc`` where there is one, else pgrep."""
    me = os.getpid()
    try:
        names = [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        names = []
    if not names:
        import subprocess

        try:
            out = subprocess.run(["pgrep", "-P", str(me)], capture_output=True, text=True, timeout=5).stdout
        except (OSError, subprocess.SubprocessError):
            return []
        return [int(p) for p in out.split() if p.isdigit()]
    found = []
    for name in names:
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[1]) == me:
                    found.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _force_stop(run_dir: str, as_json: bool) -> bool:
    """Stop a ``--nproc`` run now, as a second signal stops one process: its workers are killed
    mid-step (a rank left alone mid-step would wait for its peers), the run is recorded as stopped at
    its last checkpoint, revstudio's line (or ``--json`` row) says so. False (nothing done) where the
    run had ended meanwhile, or where its workers had not yet started it."""
    import json
    import time

    from revstudio.core.processes import pid_alive

    from .output import JsonRows, Progress
    from .runs import CHECKPOINT, RunDirError, RunWriter, now_iso, read_metrics, write_json
    from .stopping import forced_message, forced_row

    path = os.path.join(run_dir, STATUS)
    try:
        with open(path, encoding="utf-8") as handle:
            status = json.load(handle)
    except (OSError, ValueError):
        status = None
    if not isinstance(status, dict) or status.get("status") != "running":
        return False
    workers = _children()
    for pid in workers:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    end = time.monotonic() + 5.0
    while any(pid_alive(p) for p in workers) and time.monotonic() < end:
        time.sleep(0.02)
    step, at = None, 0.0
    for row in read_metrics(run_dir):
        if row.get("event") == "checkpoint" and isinstance(row.get("step"), int) and not row.get("best"):
            step = row["step"]
        if isinstance(row.get("time"), (int, float)):
            at = float(row["time"])
    kept = step is not None and os.path.isfile(os.path.join(run_dir, CHECKPOINT))
    row = forced_row(step if kept and step is not None else 0, kept, at)
    told = JsonRows() if as_json else Progress()
    told.on_event(row)
    told.on_row(row)
    try:
        writer = RunWriter(run_dir)
        try:
            writer.row(row)
        finally:
            writer.close()
        write_json(path, {**status, "status": "stopped", "step": row["step"], "ended": now_iso(),
                          "message": forced_message(row["step"], kept)})
    except RunDirError as exc:  # (the stop stands; the folder just cannot record it)
        print(message_line(str(exc)), file=sys.stderr)
    return True


def _stamp(run_dir: str) -> int | None:
    """When the run's status was last written (None: it has none)."""
    try:
        return os.stat(os.path.join(run_dir, STATUS)).st_mtime_ns
    except OSError:
        return None


def launch(args: argparse.Namespace) -> int:
    with _LaunchStop() as stop:
        return _launch(args, stop)


def _launch(args: argparse.Namespace, stop: _LaunchStop) -> int:
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
    run_dir = str(args.resume or out)
    if stop.signal is not None:  # stopped while the run was checked: no worker is started
        return _stopped(run_dir, bool(args.resume), args.json)
    try:
        from torch.distributed import run as torchrun
    except ImportError:  # pragma: no cover - every torch with DDP has it
        raise CliError("--nproc needs torch.distributed, which this torch build lacks", 2) from None
    failure: Any = None
    before = _stamp(run_dir)  # (a resumed run's folder already holds the status of its last stop)
    stop.force = lambda: _force_stop(run_dir, args.json)
    try:
        stop.launching = True
        with _quiet_stop():
            torchrun.main(launcher_args(args, out))
    except StopNow:  # a second signal: the run is recorded as stopped now; the program exits 130
        raise
    except SystemExit as exc:  # argument errors of the launcher
        if exc.code:
            raise CliError(f"torch.distributed.run refused the options: exit {exc.code}", 2) from None
    except BaseException as exc:  # a worker failed, or a signal stopped the launcher
        failure = exc
    finally:
        stop.launching = False
    status = read_run(run_dir).status if run_dir and os.path.isdir(run_dir) else "unknown"
    if stop.signal is None and type(failure).__name__ == "SignalException":
        # Ctrl+C or SIGTERM after torchrun put in its handlers (they raise it here), e.g. while the
        # workers still started: a stop, as before them, not "the distributed run ended" (exit 1)
        stop.signal = int(getattr(failure, "sigval", signal.SIGINT))
    if stop.signal is not None and (_stamp(run_dir) == before or status not in ("finished", "stopped", "failed")):
        return _stopped(run_dir, bool(args.resume), args.json)  # stopped before rank 0 could say so
    if status == "stopped" and read_run(run_dir).message == READER_GONE:  # rank 0's reader went away
        return PIPE_CLOSED
    if status in ("finished", "stopped"):
        return 0
    if _first_exit_code(failure) == 2:  # the first worker to fail refused the run (it said why on stderr;
        return 2                         # the others were then stopped by the launcher)
    if failure is not None and status not in ("failed",):
        print(message_line(f"the distributed run ended: {type(failure).__name__}: "
                           f"{str(failure).splitlines()[0] if str(failure) else ''}"), file=sys.stderr)
    return 1
