"""What a run records in its folder: the project snapshot, config, environment and model code.

:func:`open_run` makes the folder, marks it running and writes this start's record;
:func:`snapshot_text` is the snapshot a run records and its checkpoints carry.
"""
from __future__ import annotations

import os
import platform
import socket
import sys
from collections.abc import Collection
from typing import Any

from .config import TrainConfig
from .runs import CONFIG, SNAPSHOT, RunDirError, RunWriter, now_iso, write_atomic, write_json


def _local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", 0))


def environment(cfg: TrainConfig, world: int, graph: Any = None) -> dict[str, Any]:
    import torch

    from revstudio import __version__

    from .parts import TrainError, resolve_device

    try:  # the device the run trains on ("auto" picked for this machine); config.json keeps the setting
        device = str(resolve_device(cfg.device, _local_rank() if world > 1 else None))
    except TrainError:  # the run refuses it with the reason a moment later
        device = cfg.device
    return {"python": platform.python_version(), "torch": torch.__version__, "revstudio": __version__,
            "device": device, "cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(),
            "threads": torch.get_num_threads(), "processes": world, "hostname": socket.gethostname(),
            "platform": platform.platform(), "argv": sys.argv[1:], "cwd": os.getcwd(),  # (argv's relative paths)
            "plugins": plugin_versions(graph)}


def missing_data_hint(source: str, cfg: TrainConfig, base: str, given: Collection[str] = (),
                      out: str | None = None) -> str:
    """Where the data path that names nothing came from, and what to do, for data the project (not the
    command line: ``given`` holds the keys overridden there) names. For the project.revs of a run folder
    (one shipped with a paper, copied from another machine) the path is where that run read its data, so
    the data are to be named with ``--data``, and the run's data digest tells whether they are the same;
    for a project, its ``training`` key. '' where no such path is missing, and for the snapshot the app
    writes into the folder of the run it starts (``out``), whose path is the project's as it stood."""
    from .runs import is_run_dir
    from .sources import DataError, parse_spec

    missing = []
    for option, key in (("--data", "data"), ("--val-data", "val_data")):
        spec = getattr(cfg, key)
        try:
            kind, path = parse_spec(spec) if isinstance(spec, str) and key not in given else ("", "")
        except DataError:
            continue
        if kind not in ("", "synthetic") and not os.path.exists(os.path.join(base, os.path.expanduser(path))):
            missing.append((option, key))
    if not missing:
        return ""
    options = " and ".join(f"{o} PATH" for o, _ in missing)
    folder = os.path.dirname(os.path.abspath(source))
    if out is not None and os.path.abspath(out) == folder:  # (the app's run: its snapshot, its folder)
        return ""
    if os.path.basename(source) != SNAPSHOT or not is_run_dir(folder):
        keys = " and ".join(f"training.{k}" for _, k in missing)
        return (f"; the path is {source}'s {keys}, and a relative one starts from the project's folder ({base}): "
                f"put the data where it points, correct the path in the project (the app's Run > Run Settings), "
                f"or give {options}")
    from .run_compare import provenance

    digest = provenance(folder).get("data_digest")
    same = (f"; the run's data digest, {digest} (status.json), tells whether they are the same: 'revstudio "
            f"runs {folder} NEW_DIR' compares the runs" if digest else "")
    return (f"; {source} is a run's snapshot, and its data path is where that run read them (on its machine): "
            f"give the data's path here with {options}{same}")


def plugin_versions(graph: Any) -> dict[str, str | None]:
    """``{distribution: version}`` of the plugins whose node types the project uses (the
    snapshot records them per type; here they sit beside torch's version)."""
    from revstudio.core.project_write import plugin_records

    if graph is None:
        return {}
    return {r["distribution"]: r.get("version") for r in plugin_records(graph).values() if r.get("distribution")}


def snapshot_text(graph: Any, cfg: TrainConfig, base: str) -> str:
    """The project snapshot a run records and its checkpoints carry.

    The snapshot lives in the run folder, not beside the project, so its relative data
    paths are made absolute against ``base`` (the project's folder): opened or trained
    on its own, it reads the same files (as the app's snapshots do).
    """
    from revstudio.core.project import dumps

    from .data import DATA_KEYS, absolute_spec

    snap = graph.snapshot() if hasattr(graph, "snapshot") else graph
    section = cfg.to_section()
    snap.training = {k: absolute_spec(v, base) if k in DATA_KEYS else v for k, v in section.items()}
    return dumps(snap)


def open_run(out: str, graph: Any, cfg: TrainConfig, world: int, text: str,
              resumed_at: int | None = None) -> RunWriter:
    """The run folder, marked running and holding this start's record (a resumed run's status
    keeps its step until the first new row); raises RunDirError."""
    writer = RunWriter(out, resumed=resumed_at is not None)
    if resumed_at is not None:
        writer.status["step"] = resumed_at
    try:
        writer.update_status(status="running")
        record(writer, graph, cfg, world, resumed_at is not None, text)
    except RunDirError as exc:  # (a full disk while the record is written: the run never started)
        writer.close()
        if resumed_at is not None:  # a resumed run said "running" with its process gone, listed as killed
            try:
                writer.update_status(status="failed", ended=now_iso(), message=str(exc))
            except RunDirError:  # (the folder that failed cannot take the news either)
                pass
        raise
    return writer


def record(writer: RunWriter, graph: Any, cfg: TrainConfig, world: int, resumed: bool, text: str) -> None:
    """Write the snapshot (``text``), config, environment and model code (a RunDirError if it cannot)."""
    if not resumed:
        write_atomic(writer.file(SNAPSHOT), text)
    write_json(writer.file(CONFIG), cfg.full_section())
    write_json(writer.file("environment.json"), environment(cfg, world, graph))
    try:
        from revstudio.codegen import export

        name, code = "model.py", export(graph)
    except Exception as exc:  # the run does not need the code; say why it is missing
        name, code = "model.py.txt", f"the model could not be exported: {exc}\n"
    write_atomic(writer.file(name), code)
