"""One ``revstudio train`` process: from a project (or a run to resume) to a finished run directory.

Order of work: read the config (errors name the key, exit 2), check the graph
(exit 1), create the run directory (rank 0) and record the snapshot, config,
environment and exported model code, load the data (refused data is a
``failed`` row), then :func:`revstudio.training.loop.train`. SIGINT and
SIGTERM only set a flag that the loop reads between steps, so a stop is a
clean one: a final checkpoint, a ``stopped`` row, exit 0; a second one stops
at once, recorded as stopped at the last checkpoint, exit 130 (``stopping``).
Every fault ends as one row and a truthful status.json, never as a traceback.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from revstudio.cli import PIPE_CLOSED, message_line, reader_gone

from .config import ConfigError, TrainConfig
from .run_record import open_run, snapshot_text
from .runs import (
    CHECKPOINT,
    READER_GONE,
    SNAPSHOT,
    RunDirError,
    RunWriter,
    StartUndo,
    claim_run_dir,
    now_iso,
)
from .runs_folder import default_run_dir, runs_folder, shipped_note
from .stopping import StopFlag, StopNow, forced_message, forced_row
from .threads import apply_for_run, restore


@dataclass
class Request:
    """What the command line asked for."""

    file: str | None
    overrides: dict[str, Any] = field(default_factory=dict)
    out: str | None = None
    resume: str | None = None
    json: bool = False
    init: str | None = None  # weights a new run starts from (--init): a file or a run folder
    # in process (rs.train): a Graph trained as if read from ``file`` (a name: it has none on disk),
    # more callbacks, the stop flag (a callback's error sets it), and whether the rows are printed
    graph: Any = None
    callbacks: list[Any] = field(default_factory=list)
    stop: StopFlag | None = None
    show: bool = True


@dataclass
class Outcome:
    """What an in-process caller learns beyond the exit code: the run folder, the loop's
    TrainResult (its model) and the message of a ``failed`` row (the caller says it, not us)."""

    run_dir: str | None = None
    result: Any = None
    message: str | None = None


class SessionError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _rank() -> tuple[int, int, int]:
    env = os.environ
    return int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_RANK", 0))


def weights_from(path: str | None, flag: str = "--init") -> dict[str, Any] | None:
    """The weights ``--init`` (or ``export --weights``, ``export RUN_DIR``) names: a run folder's last
    checkpoint's, a checkpoint's or a state_dict file's; a SessionError (exit 2) after ``flag`` if none."""
    if path is None:
        return None
    from . import checkpoint as ckpt

    try:
        return ckpt.weights_of(ckpt.weights_file(path))[0]
    except ckpt.CheckpointError as exc:
        raise SessionError(f"{flag} {exc}".strip(), 2) from None


def _load(req: Request) -> tuple[Any, TrainConfig, dict[str, Any] | None, str]:
    """(graph, config, checkpoint to resume or None, base dir of relative data paths)."""
    from revstudio.clicmd.check import load_project
    from revstudio.core.digest import network_digest  # (what makes two projects the same network)

    resume = None
    if req.resume:
        from . import checkpoint as ckpt

        snapshot = os.path.join(req.resume, SNAPSHOT)
        if not os.path.isfile(snapshot):
            raise SessionError(f"--resume {req.resume}: not a run directory (no {SNAPSHOT}); give a run folder "
                               "'revstudio runs' lists, or train the project with --out to start one", 2)
        try:
            resume = ckpt.load(os.path.join(req.resume, "checkpoints", "last.pt"))
            ckpt.require_resumable(resume, os.path.join(req.resume, "checkpoints", "last.pt"))
        except ckpt.CheckpointError as exc:
            raise SessionError(f"--resume {req.resume}: {exc}", 2) from None
        graph = load_project(snapshot)
        given = req.graph if req.graph is not None else load_project(req.file) if req.file else None
        if given is not None and network_digest(given) != network_digest(graph):
            raise SessionError(f"--resume {req.resume}: {req.file} is not the graph that run trains (its "
                               f"{SNAPSHOT}); leave FILE out to continue the run, or drop --resume to start "
                               f"a new run of {req.file}", 2)
        section = resume.get("config") or {}
        if isinstance(section, dict) and "scale_uint8" not in section:
            # a run from before uint8 inputs were scaled trained on them raw: it goes on as it was
            section = {**section, "scale_uint8": False}
        base = str((resume.get("data") or {}).get("base_dir") or os.path.dirname(os.path.abspath(snapshot)))
    else:
        assert req.file is not None
        graph = load_project(req.file) if req.graph is None else req.graph
        section = graph.training
        base = os.path.dirname(os.path.abspath(req.file))
    try:
        cfg = TrainConfig.from_section(section)
        cfg = cfg.replace(**req.overrides) if req.overrides else cfg
    except ConfigError as exc:
        raise SessionError(f"{req.resume or req.file}: {exc}", 2) from None
    return graph, cfg, resume, base


def _check_out(out: str) -> None:
    """Refuse (exit 2) a new run into a folder that holds another run: its rows would be mixed
    into that run's metrics.jsonl and its checkpoint replaced. A run refused, stopped or killed
    before it trained (bad data, a Ctrl+C while it loaded: step 0, no checkpoint) is no run to
    keep, and --resume has nothing to continue: the same --out starts afresh there, its rows
    replacing the old ones."""
    from .runs import CHECKPOINT, METRICS, is_run_dir, read_run

    if not is_run_dir(out):
        return
    info = read_run(out)
    if info.status in ("failed", "stopped", "killed") and not info.step \
            and not os.path.exists(os.path.join(out, CHECKPOINT)):
        with contextlib.suppress(OSError):
            os.remove(os.path.join(out, METRICS))
        return
    raise SessionError(f"--out {out}: already holds a run (its status.json); --resume {out} continues it, "
                       "or give another --out for a new run", 2)


def _check_resume(run_dir: str, resume: dict[str, Any], cfg: TrainConfig, data: Any, world: int) -> None:
    """Refuse (exit 2) a resume with nothing to train: a finished run at its last step, or a
    run already beyond the steps now asked for; and one that would feed its uint8 inputs at
    another scale than it trained on; and a run that stopped early, unless a larger ``--patience``
    (or ``none``) lets it train on. A run stopped at its last step goes on to end (validation, the
    final checkpoint, ``finished``)."""
    from .checkpoint import scale_mismatch
    from .loop import plan_steps
    from .patience import early_stop_facts, resume_refusal
    from .runs import read_run

    mismatch = scale_mismatch(resume, data)
    if mismatch:
        raise SessionError(f"--resume {run_dir}: {mismatch}", 2)
    total = plan_steps(cfg, len(data.train), world)[2]
    step = int(resume["step"])
    more = f"give --steps N with N above {step} (or more --epochs) to train on"
    if step > total:
        raise SessionError(f"--resume {run_dir}: the run is at step {step}, beyond the {total} steps asked "
                           f"for; {more}", 2)
    status = read_run(run_dir).status
    if step == total and status == "finished":
        raise SessionError(f"--resume {run_dir}: the run already finished its {total} steps; {more}", 2)
    early = early_stop_facts(resume, cfg.patience, cfg.min_delta)
    if early is not None and status == "finished":  # (it would stop again at its next validation)
        raise SessionError(f"--resume {run_dir}: {resume_refusal(early, early['waited'])}", 2)


def _refuse_unfit(source: str, graph: Any, report: Any, cfg: TrainConfig, world: int, local_rank: int) -> None:
    """A graph one step of which cannot fit this machine (an Input of 10**18 values a sample) is refused
    before its data or weights are made, as gradcheck and memory refuse it (a CliError, exit 1); making
    them was an internal error (torch's allocator, or a storage size that overflowed)."""
    from revstudio.clicmd._runargs import refuse_unfit
    from revstudio.diagnostics.estimate import input_dtype

    from .parts import TrainError, resolve_device

    try:
        device: Any = resolve_device(cfg.device, local_rank) if cfg.device != "cpu" else "cpu"  # (this rank's GPU)
    except TrainError:  # (said where the run picks its device, with its own words)
        return
    # (each process of a --nproc run holds its share of the batch)
    refuse_unfit(source, graph, report, max(1, cfg.batch_size // max(world, 1)), input_dtype(graph), device)


def run_session(req: Request, outcome: Outcome | None = None) -> int:
    """Run one training process; returns the exit code (and fills ``outcome``, where given)."""
    from revstudio.clicmd._runargs import load_checked
    from revstudio.core.project import dumps

    from .loop import Distributed, TrainResult, train
    from .output import JsonRows, LastCheckpoint, LastStep, Progress, RunDirRows
    from .output import dumps as row_dumps
    from .parts import TrainError

    rank, world, local_rank = _rank()
    threads_before: int | None = None
    stop = req.stop or StopFlag()
    stop.install(alone=world == 1)
    writer: RunWriter | None = None
    undo: StartUndo | None = None  # (a new run's: what its start created, taken away if it is refused)
    fail_step: int | None = None
    last_step = LastStep()
    clock: list[float] = []  # when the run's clock started (its rows' "time" counts from there)

    def failed(message: str, code: int) -> int:
        elapsed = round(time.perf_counter() - clock[0], 4) if clock else 0.0  # (0.0: before "started")
        step = fail_step if last_step.step is None else last_step.step  # (during the run: the last trained)
        row = {"kind": "event", "event": "failed", "time": elapsed, "step": step, "message": message,
               "exit_code": code}
        if outcome is not None:
            outcome.message = message
        if rank == 0:
            try:
                if outcome is None:  # (an in-process caller raises it itself)
                    print(row_dumps(row) if req.json else message_line(message), flush=True,
                          file=sys.stdout if req.json else sys.stderr)
            except BrokenPipeError:  # nobody reads the row: the run directory still gets it
                reader_gone()
            if writer is not None and undo is not None and not last_step.started:
                writer.close()  # refused before it started: no run to list, nothing to resume
                undo.undo()
            elif writer is not None:
                try:
                    RunDirRows(writer).on_row(row)
                except RunDirError:  # the row found no room (a full disk): status.json, read by the
                    try:             # Runs tab and `revstudio runs`, still says how the run ended
                        writer.update_status(status="failed", step=step, ended=now_iso(), message=message)
                    except RunDirError:  # (the folder that failed cannot take the news either)
                        pass
        else:  # rank 0 may be gone already (torchrun stops the others when one fails): say it here too
            print(message_line(message, rank), file=sys.stderr)
        return code

    callbacks: list[Any] = [last_step]
    checkpoints = LastCheckpoint()

    def stopped_now() -> None:
        """A second signal cut the run short: it is recorded as stopped at its last checkpoint
        (the rows after it are lost work; ``--resume`` goes on from the checkpoint)."""
        if rank != 0 or writer is None:
            return
        step = checkpoints.step if checkpoints.step is not None else (fail_step or 0)
        kept = os.path.exists(writer.file(CHECKPOINT))
        row = forced_row(step, kept, round(time.perf_counter() - clock[0], 4) if clock else 0.0)
        told = [cb for cb in callbacks if isinstance(cb, (JsonRows, Progress))] or \
            [JsonRows() if req.json else Progress()]
        to_dir = next((cb for cb in callbacks if isinstance(cb, RunDirRows)), None) or RunDirRows(writer)
        to_dir.stop_message = forced_message(step, kept)
        for cb in (*told, to_dir):
            try:
                cb.on_event(row)
                cb.on_row(row)
            except (RunDirError, OSError, ValueError):  # (what cannot be said now stays unsaid)
                pass

    from revstudio.cli import CliError

    try:
        try:  # an unreadable project (not JSON, NaN in it, a missing file) is the user's to fix
            graph, cfg, resume, base = _load(req)
        except CliError as exc:
            return failed(str(exc), exc.code)
        threads_before = apply_for_run(cfg.threads, resume, req.resume)  # (before any work: every process, every rank)
        source = os.path.join(req.resume, SNAPSHOT) if req.resume else str(req.file)
        try:
            graph, report = load_checked(source, batch=cfg.batch_size, graph=None if req.resume else req.graph)
            _refuse_unfit(source, graph, report, cfg, world, local_rank)
        except CliError as exc:
            return failed(str(exc), exc.code)
        try:  # (before the run folder is made: an unreadable file leaves no failed run behind)
            init = weights_from(req.init)
        except SessionError as exc:
            return failed(str(exc), exc.code)
        out = req.resume or req.out or default_run_dir(source)
        if rank == 0 and not (req.resume or req.out or req.json) and shipped_note(source):
            print(shipped_note(source), file=sys.stderr)
        project_text = snapshot_text(graph, cfg, base) if rank == 0 else dumps(graph)
        if resume is not None:
            fail_step = int(resume["step"])
        elif rank == 0:  # (a resumed run's folder is touched once the resume is sure to go ahead)
            _check_out(out)
            try:
                if req.out:
                    undo = StartUndo(out)
                else:  # (a name picked here: another run may have taken it since, started the same second)
                    out, undo = claim_run_dir(out)
                writer = open_run(out, graph, cfg, world, project_text)
            except RunDirError as exc:  # (a full disk half-way through the record: what it made goes, as
                if undo is not None:    # for any run refused before it starts, not a "running" run left behind)
                    undo.undo()
                return failed(str(exc), 2)
        if outcome is not None:
            outcome.run_dir = out
        from .data import DataError, load_data
        from .task import infer_task

        try:
            task = infer_task(graph, report, cfg.task)
            data = load_data(cfg.data, graph, report, task=task, val_spec=cfg.val_data,
                             val_fraction=cfg.val_fraction, seed=cfg.seed, base_dir=base,
                             scale_uint8=cfg.scale_uint8)
        except DataError as exc:  # (its message names the file, array or node itself: said once)
            return failed(f"{exc}{_from_here(cfg, base, source, req)}", 2)
        if resume is not None:
            assert req.resume is not None
            try:
                _check_resume(req.resume, resume, cfg, data, world)
            except TrainError as exc:
                return failed(str(exc), exc.code)
            if rank == 0:
                try:
                    writer = open_run(out, graph, cfg, world, project_text, resumed_at=fail_step)
                except RunDirError as exc:
                    return failed(str(exc), 2)
        if stop() and world == 1:  # a stop during the start-up: nothing trained, nothing more to save
            if rank == 0:

                row = {"kind": "event", "event": "stopped", "time": 0.0, "step": fail_step or 0,
                       "checkpoint": "checkpoints/last.pt" if resume is not None else None}
                if req.json:
                    print(row_dumps(row), flush=True)
                else:
                    print(f"stopped before step {(fail_step or 0) + 1}", flush=True)
                assert writer is not None
                RunDirRows(writer).on_row(row)
            return 0
        callbacks.append(checkpoints)
        gone: list[bool] = []
        if rank == 0:
            assert writer is not None
            to_dir = RunDirRows(writer, stop)

            def on_gone() -> None:  # `train | head`: stop as a signal stops, resumable, then exit 141
                gone.append(True)
                stop.set = True
                to_dir.stop_message = READER_GONE

            # the folder first: a row a reader sees printed is already in metrics.jsonl (a second Ctrl+C
            # under --nproc read the last checkpoint from the folder a moment after its row was printed)
            callbacks.append(to_dir)
            if req.show:
                callbacks.append(JsonRows(on_gone=on_gone) if req.json else Progress(on_gone=on_gone))
        callbacks.extend(req.callbacks)  # (after to_dir: the row a caller's callback sees is in the folder)
        dist = Distributed(rank, world, local_rank)
        if dist.active:
            _init_distributed(cfg)
        clock.append(time.perf_counter())  # (train's own clock starts a moment later)
        try:
            result: TrainResult = train(graph, report, cfg, data, callbacks=callbacks, should_stop=stop,
                                        resume=resume, run_dir=writer.path if writer else None,
                                        project_text=project_text, dist=dist,
                                        resumed_from=req.resume, data_base=base, init=init,
                                        init_from=req.init)
            if outcome is not None:
                outcome.result = result
        except TrainError as exc:
            return failed(str(exc), exc.code)
        except RunDirError as exc:  # the disk filled up, or the folder went away, during the run
            todo = "free some space" if exc.full else "make it writable again"
            return failed(f"the run ended: cannot write {exc.path}: {exc.why}; {todo}, then --resume "
                          "continues it from its last checkpoint", 1)
        if gone and result.exit_code == 0 and world == 1:  # (under DDP the launcher says it: a worker's
            return PIPE_CLOSED                                 # 141 would read to torchrun as a failure)
        return result.exit_code
    except StopNow:  # the program exits 130; a session (a notebook's cli.main) gets the KeyboardInterrupt
        stopped_now()
        raise
    except SessionError as exc:
        return failed(str(exc), exc.code)
    except Exception as exc:
        from revstudio.clicmd._runargs import compile_error

        err = compile_error(exc)
        if err is not None:
            return failed(str(err), err.code)
        return failed(f"internal error: {type(exc).__name__}: {exc} (please report this)", 1)
    finally:
        stop.uninstall()
        if threads_before:  # (an in-process run, rs.train: its caller's threads as they were)
            restore(threads_before)
        if writer is not None:
            writer.close()
        if world > 1:
            _finish_distributed()


def preflight(req: Request, world: int) -> int | None:
    """Refuse a run of ``world`` processes before any starts: what every worker would refuse
    (project, config, graph, data, a batch that does not split, a resume with nothing to do)
    is said once here, as a single process says it, with its exit code; None when it may go.
    (Refused in the workers, the message died with them: torchrun stops the others when one
    fails, and only rank 0 prints.)"""
    from revstudio.cli import CliError
    from revstudio.clicmd._runargs import load_checked

    from .data import DataError, load_data
    from .loop import plan_steps
    from .output import dumps as row_dumps
    from .parts import TrainError, precision_context, resolve_device
    from .task import infer_task

    def refuse(message: str, code: int) -> int:
        if req.json:
            print(row_dumps({"kind": "event", "event": "failed", "time": 0.0, "step": None, "message": message,
                             "exit_code": code}), flush=True)
        else:
            print(message_line(message), file=sys.stderr)
        return code

    try:
        graph, cfg, resume, base = _load(req)
        source = os.path.join(req.resume, SNAPSHOT) if req.resume else str(req.file)
        graph, report = load_checked(source, batch=cfg.batch_size)
        if not cfg.device.startswith("cuda"):  # (a GPU per process is the launcher's to hand out)
            precision_context(cfg, resolve_device(cfg.device))
        task = infer_task(graph, report, cfg.task)
        data = load_data(cfg.data, graph, report, task=task, val_spec=cfg.val_data,
                         val_fraction=cfg.val_fraction, seed=cfg.seed, base_dir=base,
                         scale_uint8=cfg.scale_uint8)
        plan_steps(cfg, len(data.train), world)
        if resume is not None and req.resume:
            _check_resume(req.resume, resume, cfg, data, world)
        elif req.out:
            _check_out(req.out)
    except (CliError, SessionError, TrainError) as exc:
        return refuse(str(exc), exc.code)
    except DataError as exc:
        return refuse(f"{exc}{_from_here(cfg, base, source, req)}", 2)
    return None


def _from_here(cfg: TrainConfig, base: str, source: str, req: Request) -> str:
    from .data import from_here_hint, nowhere_hint
    from .run_record import missing_data_hint

    specs = {"--data": cfg.data, "--val-data": cfg.val_data}
    # (a file in the current folder first; then the project key or run snapshot that holds the path;
    # then, for a path typed on the command line, the folder it starts from)
    return (from_here_hint(specs, base, nowhere=False) or missing_data_hint(source, cfg, base, req.overrides, req.out)
            or nowhere_hint(specs, base))


def _init_distributed(cfg: TrainConfig) -> None:
    import torch
    import torch.distributed as tdist

    backend = "nccl" if cfg.device.startswith("cuda") or (cfg.device == "auto" and torch.cuda.is_available()) \
        else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    if not tdist.is_initialized():
        tdist.init_process_group(backend)


def _finish_distributed() -> None:
    import gc

    import torch.distributed as tdist

    if tdist.is_available() and tdist.is_initialized():
        # the loop's DDP wrapper is a reference cycle: collect it while the group is still
        # registered, or a later collection frees its Reducer, and with it the gloo group, with
        # the GIL held, and the group's join of its worker threads can wait forever on one
        # that needs the GIL (the hang seen in the exported script under torchrun)
        gc.collect()
        try:
            tdist.barrier()  # no rank tears gloo down while a peer still talks to it
        except Exception:
            pass
        tdist.destroy_process_group()


__all__ = ["Outcome", "Request", "SessionError", "StopFlag", "StopNow", "default_run_dir", "preflight", "run_session",
           "runs_folder", "shipped_note"]
