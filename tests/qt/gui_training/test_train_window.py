"""Train / Stop from the window with the real worker: rows, curves, stop, kill, refusal, resume.

Each test starts ``revstudio train --json`` as a child process of the window
(through the Train action, as a click does) on the revnet_coupling example.
"""
from __future__ import annotations

import json
import os
import signal
import time

import pytest
from PySide6.QtCore import Qt

from revstudio.core.commands import SetParam
from revstudio.qt.plots.rows import GRAD_PREFIX, INV_PREFIX, human_duration
from revstudio.qt.runs.run_table import COLUMNS

from .conftest import LONG, START_TIMEOUT_MS, wait_running

pytestmark = pytest.mark.slow


def click_train(qtbot, window):
    button = window.toolbar.widgetForAction(window.actions_by_name["train"])
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def load_checkpoint(path):
    import torch

    return torch.load(path, weights_only=True, map_location="cpu")


def test_one_click_trains_rows_arrive_and_every_plot_fills(qtbot, train_window, dialogs):
    window = train_window()  # SHORT: 12 steps, every row kind
    ctl = window.training.controller
    click_train(qtbot, window)
    assert ctl.running
    # A second Train while one runs is refused with the reason, and the first run goes on.
    reason = window.training.train()
    assert reason and "already training" in reason and "stop it first" in reason
    assert ctl.running
    run = wait_running(qtbot, window, step=1)
    plots = window.training.plots
    qtbot.waitUntil(lambda: plots.loss.curve_points().get((run.name, "loss"), 0) >= 1, timeout=10_000)
    qtbot.waitUntil(lambda: not ctl.running, timeout=START_TIMEOUT_MS)
    assert run.status == "finished", (run.message, ctl.stderr_tail())
    plots.refresh(force=True)

    snapshot = ctl.run_dir / "project.revs"
    assert json.loads(snapshot.read_text())["training"]["steps"] == 12  # the snapshot trained, as drawn
    assert plots.loss.curve_points()[(run.name, "loss")] == 12
    assert plots.loss.curve_points()[(run.name, "val_loss")] == 2
    assert plots.accuracy.curve_points()[(run.name, "accuracy")] == 12
    assert plots.throughput.curve_points()[(run.name, "samples_per_s")] == 12
    assert plots.memory.curve_points()[(run.name, "peak_bytes")] == 6  # measured every 2 steps
    region = run.regions()[0]
    assert plots.gradcheck.curve_points()[(run.name, GRAD_PREFIX + region)] == 3
    assert (run.name, INV_PREFIX + region) in plots.gradcheck.curve_points()
    assert all(line.isVisible() for line in plots._memory_refs)  # the run's-mode and standard estimates
    assert plots.memory.note.text().startswith("peak ") and "% of standard's" in plots.memory.note.text()
    assert plots.memory.note.text() == (f"peak {run.peak_fraction_of_standard() * 100:.0f} % of standard's")

    # progress: bar full, step/total, elapsed, samples/s in the status bar and the Runs tab
    window.training.update_progress()
    runs_text = window.training.runs_panel.progress.label.text()
    assert "step 12 / 12" in runs_text and "elapsed" in runs_text and "samples/s" in runs_text
    assert window.training.status_progress.bar.value() == 1000
    # the run is listed from its folder, finished, with its settings and final metrics
    panel = window.training.runs_panel
    assert panel.table.rowCount() == 1 and panel.table.item(0, COLUMNS.index("status")).text() == "finished"
    assert panel.table.item(0, COLUMNS.index("step")).text() == "12 / 12"
    assert panel.table.item(0, COLUMNS.index("loss")).text() != ""
    checkpoint = load_checkpoint(ctl.run_dir / "checkpoints" / "last.pt")
    assert checkpoint["format"] == "revstudio-checkpoint" and checkpoint["step"] == 12
    assert not dialogs.errors
    # the run's checkpoint loaded into a gradient check (a child process), drawn per tensor
    panel.select_paths([ctl.run_dir])
    query = window.training.run_action("gradcheck", panel.selected_paths())
    qtbot.waitUntil(lambda: query.answer is not None, timeout=START_TIMEOUT_MS)
    assert query.answer.get("ok") is True and query.answer["step"] == 12, str(query.answer)[:400]
    assert window.training.dialogs[-1].plot is not None


def test_defaults_stop_within_two_seconds_keeps_checkpoint_and_resume_continues(qtbot, train_window):
    window = train_window({})  # no training settings: synthetic data and the defaults
    ctl = window.training.controller
    window.actions_by_name["train"].trigger()
    run = wait_running(qtbot, window, step=10)  # the defaults log every 10 steps
    assert run.info["config"]["data"] == "synthetic"
    # editing while it trains is allowed and does not touch the running snapshot
    before = (ctl.run_dir / "project.revs").read_text()
    node = next(n for n in window.document.graph if n.type == "Conv")
    window.document.push(SetParam(window.document.graph, node.id, "out_channels", 16))
    window.training.update_progress()
    assert window.training.runs_panel.stale.isVisibleTo(window.training.runs_panel)
    assert "older version" in window.training.runs_panel.stale.text()
    assert (ctl.run_dir / "project.revs").read_text() == before

    shown = ctl.elapsed_s()
    t0 = time.monotonic()
    window.actions_by_name["stop"].trigger()
    qtbot.waitUntil(lambda: not ctl.running, timeout=5_000)
    took = time.monotonic() - t0
    # the progress keeps the wall time it was counting (start-up included), frozen at the end
    window.training.update_progress()
    final = ctl.elapsed_s()
    assert shown <= final <= shown + took + 0.5 and ctl.elapsed_s() == final
    assert f"{human_duration(final)} elapsed" in window.training.runs_panel.progress.label.text()
    assert took < 2.0, f"Stop took {took:.2f} s"
    assert run.status == "stopped", (run.message, ctl.stderr_tail())
    assert window.statusBar().currentMessage() == f"Run {run.name} stopped at step {run.step}"
    assert window.training.status_progress.label.text() == f"stopped at step {run.step}"
    checkpoint = load_checkpoint(ctl.run_dir / "checkpoints" / "last.pt")
    assert checkpoint["step"] == run.step
    stopped_at = run.step
    panel = window.training.runs_panel
    panel.reload()
    assert panel.table.item(0, COLUMNS.index("status")).text() == "stopped"

    # Resume from the Runs tab continues from the checkpoint, then stop it again.
    panel.select_paths([ctl.run_dir])
    assert panel.buttons["resume"].isEnabled()
    assert "--resume" not in panel.detail.toPlainText()  # the app's words: its Resume button
    panel.buttons["resume"].click()
    qtbot.waitUntil(lambda: run.step > stopped_at or run.ended, timeout=START_TIMEOUT_MS)
    assert ctl.running and run.info.get("resumed_from") is not None
    window.actions_by_name["stop"].trigger()
    qtbot.waitUntil(lambda: not ctl.running, timeout=5_000)
    assert run.status == "stopped" and run.step > stopped_at


def test_sigkill_is_shown_as_failed_and_the_editor_keeps_working(qtbot, train_window, dialogs):
    window = train_window(LONG)
    ctl = window.training.controller
    window.actions_by_name["train"].trigger()
    run = wait_running(qtbot, window, step=2)
    os.kill(ctl.process_id(), signal.SIGKILL)
    qtbot.waitUntil(lambda: not ctl.running, timeout=10_000)
    assert run.status == "failed" and "killed" in run.message
    assert dialogs.errors and dialogs.errors[-1][0] == "Training failed" and "killed" in dialogs.errors[-1][1]
    panel = window.training.runs_panel
    assert "killed" in panel.detail.toPlainText()
    panel.reload()
    # the app wrote the ending it saw into status.json (the worker could not): failed, not killed
    assert panel.table.item(0, COLUMNS.index("status")).text() == "failed"
    # the editor is unharmed: edit, undo, and Train is allowed again
    graph = window.document.graph
    node = next(n for n in graph if n.type == "Conv")
    old = node.params["out_channels"]
    window.document.push(SetParam(graph, node.id, "out_channels", old + 1))
    window.document.undo_stack.undo()
    assert graph.nodes[node.id].params["out_channels"] == old
    assert window.training.controller.refusal() is None
    assert window.isVisible()
