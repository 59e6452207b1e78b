"""Fixtures for the training GUI tests: an example project with short run settings, and the worker.

The tests run the REAL worker (``revstudio train --json`` in a child process)
on the revnet_coupling example with a few steps, logged every step so the
plots fill. ``fake_worker`` swaps in a script that prints contract rows at a
chosen pace, for the cases a real run cannot be made to hit on cue (a failure
with a message at a given step).
"""
from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "resources" / "examples" / "revnet_coupling.revs"
FAKE = Path(__file__).with_name("fake_worker.py")
# Every row kind within a dozen steps: memory every 2, gradient check every 4, validation every 6.
SHORT = {"steps": 12, "batch_size": 8, "log_every": 1, "val_every": 6, "gradcheck_every": 4, "memory_every": 2,
         "checkpoint_every": 4}
# Long enough to be stopped or killed while it runs.
LONG = {**SHORT, "steps": 100_000, "val_every": 0, "gradcheck_every": 0, "memory_every": 0, "checkpoint_every": 0}
START_TIMEOUT_MS = 180_000  # the worker's first rows wait for torch's import on a loaded 2-core machine


@pytest.fixture
def train_window(make_window: Callable[..., Any], tmp_path: Path) -> Callable[..., Any]:
    """A window on a saved copy of the example with the given training section."""
    from revstudio.core.project import save
    from revstudio.qt.files import read_project

    def make(section: dict[str, Any] | None = None) -> Any:
        path = tmp_path / "project" / "coupling.revs"
        path.parent.mkdir(exist_ok=True)
        shutil.copy(EXAMPLE, path)
        graph = read_project(str(path))
        graph.training = dict(SHORT if section is None else section)
        save(graph, str(path))
        window = make_window(read_project(str(path)), str(path))
        return window

    return make


@pytest.fixture
def fake_worker(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Point Train at the contract-row script (delay per step, optional failure step)."""
    import revstudio.qt.training.controller as controller

    def use(delay: float = 0.01, fail_at: int | None = None, diverge_at: int | None = None,
            disk_full: bool = False, stall_at: int | None = None, short: bool = False,
            inputs: str = "") -> None:
        monkeypatch.setenv("FAKE_SHORT", "1" if short else "0")
        monkeypatch.setenv("FAKE_INPUTS", inputs)  # the started row's "inputs" (uint8 inputs scaled, or raw)
        monkeypatch.setenv("FAKE_DELAY", str(delay))
        monkeypatch.setenv("FAKE_DISK_FULL", "1" if disk_full else "0")
        monkeypatch.setenv("FAKE_DIVERGE_AT", str(diverge_at if diverge_at is not None else -1))
        monkeypatch.setenv("FAKE_STALL_AT", str(stall_at if stall_at is not None else -1))
        monkeypatch.setenv("FAKE_FAIL_AT", str(fail_at if fail_at is not None else -1))
        monkeypatch.setattr(controller, "worker_argv", lambda snap, run_dir, resume=False: [
            sys.executable, str(FAKE), str(snap), "--json", "--out", str(run_dir)])

    return use


@pytest.fixture
def open_settings() -> Callable[[Any], Any]:
    """Run > Run Settings on a window: the one dialog it shows."""
    from revstudio.qt.training.settings_dialog import RunSettingsDialog

    def open_dialog(window: Any) -> RunSettingsDialog:
        window.actions_by_name["run_settings"].trigger()
        dialogs = [d for d in window.findChildren(RunSettingsDialog) if d.isVisible()]
        assert len(dialogs) == 1
        return dialogs[0]

    return open_dialog


@pytest.fixture
def settings_preview(qtbot: Any) -> Callable[[Any, str], str]:
    """A Run Settings dialog's data preview of the file ``name`` (beside the project), once a child read it."""

    def preview(dialog: Any, name: str) -> str:
        dialog.data_kind.setCurrentIndex(dialog.data_kind.findData("file"))
        dialog.data_path.setText(name)
        dialog.request_preview()
        qtbot.waitUntil(lambda: "Reading" not in dialog.preview.text(), timeout=120_000)
        return str(dialog.preview.text())

    return preview


@pytest.fixture
def fake_run(qtbot: Any, train_window: Callable[..., Any], fake_worker: Callable[..., None]) -> Callable[..., Any]:
    """A window whose fake run has ended: ``section`` as ``train_window`` takes it, ``worker`` as
    ``fake_worker`` does (its rows at once unless a ``delay`` is given)."""

    def run(section: dict[str, Any] | None = None, **worker: Any) -> Any:
        fake_worker(**{"delay": 0.0, **worker})
        window = train_window(section)
        ui = window.training
        assert ui.train() is None
        qtbot.waitUntil(lambda: not ui.controller.running, timeout=START_TIMEOUT_MS)
        return window

    return run


def wait_running(qtbot: Any, window: Any, step: int = 1) -> Any:
    """Wait until the live run has logged ``step``; returns its RunData."""
    ctl = window.training.controller
    qtbot.waitUntil(lambda: ctl.run is not None and (ctl.run.step >= step or ctl.run.ended),
                    timeout=START_TIMEOUT_MS)
    assert not ctl.run.ended or ctl.run.status == "finished", (ctl.run.status, ctl.run.message, ctl.stderr_tail())
    return ctl.run


def trained_run(window: Any, tmp_path: Path, name: str) -> Path:
    """A finished run of the window's project (3 steps of 8 on its synthetic data, on the CPU), made by
    ``revstudio train`` in the project's runs folder as ``name``: a run the Runs tab's actions work on."""
    from revstudio import cli

    run_dir = tmp_path / "project" / "runs" / name
    assert cli.main(["train", window.document.path, "--steps", "3", "--batch-size", "8", "--device", "cpu",
                     "--out", str(run_dir), "--json", "--gradcheck-every", "0", "--memory-every", "0"]) == 0
    return run_dir


def plotted_run(name: str) -> Any:
    """A started run ``name`` with steps 10 and 20 logged, as the Plots tab holds it."""
    from revstudio.qt.plots.rows import RunData

    run = RunData(name)
    run.feed({"kind": "event", "event": "started", "time": 0.0, "total_steps": 20})
    for s in (10, 20):
        run.feed({"kind": "step", "step": s, "epoch": s / 10, "time": s * 0.1, "loss": 1.0 / s})
    return run
