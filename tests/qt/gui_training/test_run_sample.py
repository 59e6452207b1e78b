"""The Runs tab's Sample…: ``revstudio sample RUN -o FILE.npz --json`` in a child process on a trained flow,
its settings asked in a dialog and remembered, the samples shown (points as a scatter, images as a grid of
pictures), a run that is no flow refused in the command's words, and a refusal of the child shown in its."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from flow_kit import moons_realnvp

from revstudio.qt.runs import sample_run
from revstudio.qt.runs.sample_view import SampleGrid, SamplesView, sample_kind, to_bytes

from .conftest import START_TIMEOUT_MS, trained_run

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[3]
QUICK = ["--device", "cpu", "--val-every", "0", "--gradcheck-every", "0", "--memory-every", "0", "--json"]


def moons_flow(tmp_path: Path) -> Path:
    """A RealNVP on 2-D points, saved as ``project/moons.revs``."""
    from revstudio.core.project import save

    path = tmp_path / "project" / "moons.revs"
    path.parent.mkdir(exist_ok=True)
    save(moons_realnvp().graph, str(path))
    return path


def flow_window(make_window, project: Path, run: str, *extra: str):
    """A window on ``project`` and a finished run of it (``revstudio train`` for a few steps)."""
    from revstudio import cli
    from revstudio.qt.files import read_project

    run_dir = project.parent / "runs" / run
    assert cli.main(["train", str(project), "--out", str(run_dir), "--steps", "3", *extra, *QUICK]) == 0
    return make_window(read_project(str(project)), str(project)), run_dir


def answer_dialog(monkeypatch, out: Path | str, count: int, temperature: float, seed: int) -> list:
    """Make SampleDialog's exec() fill in the values as a user would and press Sample; what it started
    with is recorded."""
    seen = []

    def exec_(dialog):
        seen.append((dialog.count.value(), dialog.temperature.value(), dialog.seed.value(), dialog.output.text()))
        dialog.count.setValue(count)
        dialog.temperature.setValue(temperature)
        dialog.seed.setValue(seed)
        dialog.output.setText(str(out))
        dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
        return dialog.result()
    monkeypatch.setattr(sample_run.SampleDialog, "exec", exec_)
    return seen


def shown_views(window) -> list[SamplesView]:
    return [v for v in window.findChildren(SamplesView) if v.isVisible()]


def test_sample_draws_from_a_trained_flow_shows_a_scatter_and_remembers_its_settings(
        qtbot, make_window, tmp_path, monkeypatch, dialogs):
    import revstudio as rs

    window, run_dir = flow_window(make_window, moons_flow(tmp_path), "moons-20261208-101500")
    panel = window.training.runs_panel
    panel.reload()
    panel.select_paths([run_dir])
    button = panel.buttons["sample"]
    assert button.isEnabled() and button.text() == "Sample…" and "revstudio sample" in button.toolTip()
    out = tmp_path / "drawn" / "moons"  # (no .npz typed: it is added)
    out.parent.mkdir()
    seen = answer_dialog(monkeypatch, out, 40, 0.5, 3)
    button.click()
    # first time: the defaults, the file beside the run's folder
    assert seen == [(16, 1.0, 0, str(tmp_path / "project" / f"{run_dir.name}-samples.npz"))]
    assert window.statusBar().currentMessage() == f"Sampling {run_dir.name}…"
    qtbot.waitUntil(lambda: window.statusBar().currentMessage().startswith("Sampled"), timeout=START_TIMEOUT_MS)
    written = out.with_suffix(".npz")
    assert window.statusBar().currentMessage() == \
        f"Sampled 40 from {run_dir.name} (temperature 0.5, seed 3): moons.npz: x 40x2"
    assert dialogs.errors == []
    assert f"Sampled 40 from {run_dir} (temperature 0.5, seed 3): {written}: x 40x2 (40 shown as points)" \
        in window.bottom.log.toPlainText()
    x = np.load(written)["x"]
    assert torch.equal(rs.sample(str(run_dir), 40, temperature=0.5, seed=3), torch.from_numpy(x))
    (view,) = shown_views(window)
    assert view.kind == "points" and view.body is not None and view.body.accessibleName() == "Samples scatter"
    (scatter,) = [i for i in view.body.getPlotItem().items if hasattr(i, "points")]
    assert len(scatter.points()) == 40
    assert str(written) in view.header.text() and "x 40x2" in view.header.text()
    assert view.focusWidget() is view.close_button  # (Enter or Escape closes it)
    view.close()
    # the next Sample… starts from what was chosen, in the folder the samples went to
    seen.clear()
    assert sample_run.sample_run_with_dialog(window, run_dir) is not None
    assert seen == [(40, 0.5, 3, str(out.parent / f"{run_dir.name}-samples.npz"))]


def test_a_flow_of_pictures_is_shown_as_a_grid(qtbot, make_window, tmp_path, monkeypatch, dialogs):
    project = tmp_path / "project" / "glow.revs"
    project.parent.mkdir()
    shutil.copy(ROOT / "resources" / "examples" / "glow_flow.revs", project)
    window, run_dir = flow_window(make_window, project, "glow-20261208-101500", "--batch-size", "4")
    answer_dialog(monkeypatch, tmp_path / "glow.npz", 20, 0.7, 0)
    job = sample_run.sample_run_with_dialog(window, run_dir)
    assert job is not None
    qtbot.waitUntil(lambda: not job.running, timeout=START_TIMEOUT_MS)
    assert job.ok, job.words
    view = job.view
    assert view.kind == "images" and isinstance(view.body, SampleGrid)
    assert len(view.body.images) == 20 and view.body.images[0].width() == 16
    assert "(the first 20 of 20 shown as pictures)" in window.bottom.log.toPlainText()
    qtbot.waitExposed(view)
    assert view.body.zoom() >= 2  # (16 px pictures scaled up by whole pixels to fill the window)


def test_a_run_that_is_no_flow_cannot_be_sampled_and_says_why(qtbot, train_window, tmp_path, monkeypatch,
                                                             dialogs, capsys):
    window = train_window({"steps": 3, "batch_size": 8, "val_every": 0})
    run_dir = trained_run(window, tmp_path, "coupling-20261207-101500")
    panel = window.training.runs_panel
    panel.reload()
    panel.select_paths([run_dir])
    button = panel.buttons["sample"]
    assert panel.buttons["evaluate"].isEnabled() and not button.isEnabled()
    tip = button.toolTip()
    from revstudio import cli

    assert cli.main(["sample", str(run_dir), "-o", str(tmp_path / "never.npz")]) == 2
    assert tip == capsys.readouterr().err.strip().removeprefix("revstudio: ")  # the command's own words
    assert tip == f"{run_dir / 'project.revs'}: cannot sample: task 'flow' needs a log-determinant: the graph " \
        "has no AffineCoupling, ActNorm or InvConv1x1; sampling runs a flow's inverse on Gaussian noise"
    seen = answer_dialog(monkeypatch, tmp_path / "never.npz", 4, 1.0, 0)
    assert sample_run.sample_run_with_dialog(window, run_dir) is None
    assert seen == [] and dialogs.errors == [("Cannot sample", tip)]  # refused before anything is asked
    assert tip in window.bottom.log.toPlainText()
    assert not (tmp_path / "never.npz").exists()


def test_a_flow_graph_trained_for_another_task_is_left_to_the_command(qtbot, make_window, tmp_path, dialogs):
    # (revstudio sample draws from it: its graph is a flow whatever task its run was trained for)
    window, run_dir = flow_window(make_window, moons_flow(tmp_path), "moons-20261208-101500", "--task", "regression")
    assert sample_run.trained_task(run_dir) == "regression"
    panel = window.training.runs_panel
    panel.reload()
    panel.select_paths([run_dir])
    assert panel.buttons["sample"].isEnabled() and panel.buttons["sample"].toolTip() == sample_run.SAMPLE_TIP


def test_the_commands_refusal_goes_to_a_message_box_and_the_log_and_nothing_is_written(
        qtbot, make_window, tmp_path, monkeypatch, dialogs):
    window, run_dir = flow_window(make_window, moons_flow(tmp_path), "moons-20261208-101500")
    missing = tmp_path / "no such folder" / "s.npz"
    answer_dialog(monkeypatch, missing, 8, 1.0, 0)
    job = sample_run.sample_run_with_dialog(window, run_dir)
    assert job is not None
    qtbot.waitUntil(lambda: not job.running, timeout=START_TIMEOUT_MS)
    assert job.ok is False and job.view is None and shown_views(window) == []
    words = f"Cannot sample {run_dir.name}: -o {missing}: the folder {missing.parent} does not exist; create it " \
            "first or write elsewhere"
    assert dialogs.errors == [("Cannot sample", words)]
    assert window.statusBar().currentMessage() == f"Sampling {run_dir.name} failed"
    assert words in window.bottom.log.toPlainText() and "Traceback" not in window.bottom.log.toPlainText()
    assert not missing.parent.exists()


def test_how_samples_are_shown_follows_their_shape():
    assert [sample_kind(s) for s in ((9, 1, 8, 8), (9, 3, 16, 16), (9, 2), (9, 4, 8, 8), (9, 3), (9, 64))] == \
        ["images", "images", "points", "other", "other", "other"]
    dequantised = np.array([[[[0.0, 0.5], [1.0, np.nan]]]])
    assert to_bytes(dequantised)[0, :, :, 0].tolist() == [[0, 128], [255, 0]]  # [0, 1] kept as it is
    wide = np.array([[[[-4.0, 0.0], [4.0, 2.0]]]])
    assert to_bytes(wide)[0, :, :, 0].tolist() == [[0, 128], [255, 191]]  # stretched lowest to highest


def test_the_sample_dialog_is_walked_by_tab_named_and_keeps_sane_settings(qtbot, tmp_path):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QAbstractButton, QLabel

    from revstudio.qt.settings import Settings

    settings = Settings()
    settings._s.setValue("runs/sample_temperature", "nan")  # (a settings file edited by hand)
    settings._s.setValue("runs/sample_count", "many")
    dialog = sample_run.SampleDialog(tmp_path / "runs" / "flow-20261208-101500", settings)
    qtbot.addWidget(dialog)
    assert (dialog.count.value(), dialog.temperature.value(), dialog.seed.value()) == (16, 1.0, 0)
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    cancel = dialog.buttons.button(dialog.buttons.StandardButton.Cancel)
    walk, widget = [], dialog.count
    while widget not in walk:
        walk.append(widget)
        widget = widget.nextInFocusChain()
        while widget.focusPolicy() & Qt.FocusPolicy.TabFocus != Qt.FocusPolicy.TabFocus or \
                widget.focusProxy() is not None:
            widget = widget.nextInFocusChain()
    assert walk == [dialog.count, dialog.temperature, dialog.seed, dialog.output, dialog.browse, ok, cancel]
    fields = (dialog.count, dialog.temperature, dialog.seed, dialog.output, dialog.browse)
    assert all(w.accessibleName() for w in fields) and dialog.accessibleName()
    buddies = {label.text(): label.buddy() for label in dialog.findChildren(QLabel) if label.buddy() is not None}
    assert buddies == {"&Samples:": dialog.count, "&Temperature:": dialog.temperature, "S&eed:": dialog.seed,
                       "&Output file:": dialog.output}  # (Alt+S, Alt+T, Alt+E, Alt+O)
    assert isinstance(dialog.browse, QAbstractButton) and dialog.browse.text() == "&Browse…"
    assert ok.text() == "Sample"
