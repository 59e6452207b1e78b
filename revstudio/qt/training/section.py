"""The project's ``training`` section as the GUI sees it: defaults, validation, the run's snapshot.

The meaning of every key belongs to ``revstudio.training.config`` (CONTRACTS
section 1): the dialog and the Train action ask ``TrainConfig.from_section``
and show its ``ConfigError`` message, so the GUI flags exactly what the CLI
would refuse. The config module imports no torch, so this stays cheap.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from revstudio.core.graph import Graph
from revstudio.core.project import dumps, loads
from revstudio.training.config import DEFAULTS, ConfigError, TrainConfig
from revstudio.training.data import DATA_KEYS, absolute_spec


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
