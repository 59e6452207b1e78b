"""The project's ``training`` section as the GUI sees it: defaults, validation, the run's snapshot.

The meaning of every key belongs to ``revstudio.training.config`` (CONTRACTS
section 1): the dialog and the Train action ask ``TrainConfig.from_section``
and show its ``ConfigError`` message, so the GUI flags exactly what the CLI
would refuse. The config module imports no torch, so this stays cheap.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from revstudio.core.graph import Graph
from revstudio.core.project import dumps, loads
from revstudio.training.config import DEFAULTS, ConfigError, TrainConfig
from revstudio.training.data import DATA_KEYS, absolute_spec
from revstudio.training.data_checks import padding_like
from revstudio.training.data_notes import axes_form
from revstudio.training.sources import DataError, parse_spec, resolve
from revstudio.training.steps import PADDING_NAMES, position_unit
from revstudio.training.task import infer_task, labels_decide


def defaults() -> dict[str, Any]:
    return dict(DEFAULTS)


def resolved(section: dict[str, Any]) -> dict[str, Any]:
    """Every key, the section's values over the defaults (for filling the dialog)."""
    out = defaults()
    out.update({k: v for k, v in section.items() if k != "version"})
    return out


def validate(section: dict[str, Any]) -> str | None:
    """None when the settings are valid, else the config's own message (it names the key)."""
    try:
        TrainConfig.from_section(dict(section))
    except ConfigError as exc:
        return str(exc)
    return None


def data_problem(section: dict[str, Any], project_path: str | None) -> str | None:
    """None when the section's data (and validation data) exist, else a message naming the path
    looked at and what to do. A relative path starts at the project's folder (the working folder
    for an unsaved project), as the run's snapshot reads it."""
    base = str(Path(project_path).resolve().parent if project_path else Path.cwd())
    for key in DATA_KEYS:
        spec = section.get(key)
        if not isinstance(spec, str) or not spec.strip():
            continue
        try:
            kind, path = parse_spec(spec)
        except DataError:
            continue  # not a data spec: the config's own message says so
        if kind == "synthetic":
            continue
        full = Path(resolve(path.strip(), base))
        folder = kind in ("mnist", "cifar10")
        if full.is_dir() if folder else full.is_file():
            continue
        what = "folder" if folder else "file"
        where = "" if Path(path).expanduser().is_absolute() else f" (looked for {full})"
        fix = (f"choose an existing {what} with Browse… or pick synthetic data" if key == "data" else
               f"name an existing {what}, or leave it empty to hold out the validation fraction")
        return f"training.{key}: no {what} {path.strip()}{where}; {fix}"
    return None


def normalized(section: dict[str, Any]) -> dict[str, Any]:
    """The section as the project stores it: only keys that differ from the defaults."""
    return TrainConfig.from_section(dict(section)).to_section()


def stored(section: dict[str, Any]) -> dict[str, Any]:
    """The section as the project stores it, valid or not: a section the project file
    brought with a bad value (which the dialog is there to fix) compares as written."""
    try:
        return normalized(section)
    except ConfigError:
        return {k: v for k, v in section.items() if k != "version"}


def snapshot_text(graph: Graph, project_path: str | None) -> str:
    """The project as drawn, for a run directory.

    The snapshot lives in the run folder, not beside the project, so a data
    path relative to the project file is made absolute: the run reads the
    same file the settings name.
    """
    text = dumps(graph)
    base = str(Path(project_path).resolve().parent if project_path else Path.cwd())
    training = dict(graph.training)
    changed = {k: absolute_spec(training[k], base) for k in DATA_KEYS if k in training}
    if not any(changed[k] != training[k] for k in changed):
        return text
    copy = loads(text)
    copy.training = {**training, **changed}
    return dumps(copy)


def preview_text(answer: dict[str, Any], scale_uint8: bool, inputs: Sequence[str] = ()) -> str:
    """The data preview's plain text: samples, arrays, classes, and what a run does with uint8 inputs
    (scaled to [0, 1], or kept raw as the box says) before Train is pressed; with the Input node ids
    (``inputs``), the arrays of a .npz / .pt no run reads (a padded sequence set's lengths or mask), as
    the run's start names them."""
    arrays = answer.get("arrays") or {}
    parts = [f"{name} {'x'.join(map(str, shape))}" for name, shape in arrays.items()]
    text = f"{answer.get('samples', '?')} samples"
    if parts:
        text += ": " + ", ".join(parts)
    if answer.get("classes"):
        text += f"; {answer['classes']} classes"
    if answer.get("uint8"):
        text += f"; uint8 {', '.join(answer['uint8'])}: " + ("scaled to [0, 1]" if scale_uint8 else "kept raw 0..255")
    if answer.get("reading"):  # (a large file: mapped and read as used, or read whole)
        text += f"; {answer['reading']}"
    if inputs and answer.get("kind") in ("npz", "pt") and not answer.get("problem"):  # (a refusal says it all)
        read = {"y", *(["x"] if len(inputs) == 1 and "x" in arrays else inputs)}
        rank = len(arrays.get("y") or ()) - 1  # (N x T labels: a class per step, N x H x W: pixel, N x D x H x W: voxel)
        word = position_unit(rank)
        padding = [name for name in PADDING_NAMES if name in arrays and (rank == 1 or (rank > 1 and name == "mask"))]
        if rank > 1 and "lengths" in arrays:
            form = axes_form((arrays.get("y") or [])[1:])
            text += (f"; lengths: refused if the labels are a class per {word} (it gives sequence lengths): mark "
                     f"{word}s not scored with -100 or an N x {form} 'mask'")
            padding.append("lengths")  # (named above, not as unread)
        if padding and rank == 1:
            text += (f"; {' and '.join(padding)}: steps past each length" if "lengths" in padding else "; mask: steps")
            text += (" or where the mask is 0" if len(padding) == 2 else " where the mask is 0" if padding == ["mask"]
                     else "") + (" are not scored if the labels are a class per step (loss and accuracy leave them "
                                 "out); padded steps are still fed to the network")
        elif "mask" in padding:
            text += (f"; mask: {word}s where the mask is 0 are not scored if the labels are a class per {word} (loss "
                     f"and accuracy leave them out); they are still fed to the network")
        unread = [name for name in arrays if name not in read and name not in padding]
        if unread:
            text += f"; not read: {', '.join(unread)} (a run reads the inputs and 'y'" + (
                "; 'lengths' and 'mask' are read for N x T labels of a class per step only (a 'mask' also for N x "
                "H x W labels of a class per pixel): here padded steps are fed and scored as they are)" if padding_like(unread) else ")")
    return text


def task_text(graph: Graph, report: Any, requested: str, answer: dict[str, Any] | None, source: str) -> str:
    """What a run will optimise and why, beside the task box, in ``revstudio check``'s words: under ``auto``
    the labels ``y`` the data preview read (``answer``: shape and ``y_dtype`` from the header) decide the
    graph's guess where they can (``labels_decide``), as the run will; else the guess and what would
    change it. ``source``: the data spec ("synthetic" follows the guess)."""
    try:
        info = infer_task(graph, report, requested)
    except DataError as exc:
        return f"{requested}: refused: {exc}"
    answer = answer or {}
    name = Path(source.split(":", 1)[-1]).name or source
    try:
        decided = labels_decide(info, (answer.get("arrays") or {}).get("y"), answer.get("y_dtype"), name)
    except DataError as exc:  # (labels the run refuses, in its words)
        return f"{requested}: refused: {exc}"
    if requested != "auto":
        return f"{requested}: {info.describe()}"
    if decided is not None:
        found, why = decided
        return f"auto: {found.describe()}: {why}"
    out = info.output_shape
    per_position = info.kind == "regression" and len(out) >= 2 and out[0] > 1
    would = (f"; N x {'x'.join(map(str, out[1:]))} whole numbers would make it a class per "
             f"{position_unit(len(out) - 1)}" if per_position else "")
    if source == "synthetic":
        return f"auto: {info.describe()}: synthetic data follow the graph's guess" + (
            f" (choose classification for a class per {position_unit(len(out) - 1)})" if per_position else "")
    if info.kind == "flow":
        return f"auto: {info.describe()}"
    if not answer.get("arrays"):
        return f"auto: {info.describe()}, the graph's guess until the data's labels are read{would}"
    return f"auto: {info.describe()}, the graph's guess: the run decides by the labels' values{would}"
