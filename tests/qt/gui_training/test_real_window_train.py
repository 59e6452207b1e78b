"""A real window under Xvfb: a click on the Train button trains an example; the plots fill.

The app runs in a child process on the xcb platform (the harness of
tests/qt/test_real_window.py); xdotool clicks the toolbar's Train button;
the real worker trains the revnet_coupling example and the window is
screenshotted with its plots filled (REVSTUDIO_UPDATE_DOCS=1 copies the shot to docs/training.png).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from test_real_window import DRIVER_LOOP, App, driver_head, xvfb  # noqa: F401 - xvfb is a fixture

pytestmark = [pytest.mark.xvfb, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "resources" / "examples" / "revnet_coupling.revs"
TRAINING = {"steps": 150, "batch_size": 16, "log_every": 1, "val_every": 15, "gradcheck_every": 10,
            "memory_every": 3, "checkpoint_every": 50}

CHILD = driver_head(1500, 960) + r"""
window.resizeDocks([window.bottom_dock], [560], Qt.Orientation.Vertical)

def answer(req):
    cmd = req["cmd"]
    ui = window.training
    if cmd == "button":
        button = window.toolbar.widgetForAction(window.actions_by_name[req["action"]])
        p = button.mapToGlobal(button.rect().center())
        return [p.x(), p.y()]
    if cmd == "run":
        run = ui.controller.run
        if run is None:
            return None
        plots = ui.plots_tab.content
        return {"status": run.status, "step": run.step, "running": ui.controller.running, "message": run.message,
                "points": {f"{k[0]}/{k[1]}": v for p in (plots.plots if plots else []) for k, v in
                           p.curve_points().items()},
                "note": plots.memory.note.text() if plots else "", "stderr": ui.controller.stderr_tail()}
    if cmd == "shot":
        if ui.plots_tab.content is not None:
            ui.plots_tab.content.refresh(force=True)
        app.processEvents()
        return window.grab().save(req["path"])
    raise ValueError(cmd)

"""
CHILD += DRIVER_LOOP


class TrainApp(App):
    """The harness's app, started with the training driver above."""

    def __init__(self, display: str, project: Path, home: Path) -> None:
        super().__init__(display, project, home, CHILD, {"OMP_NUM_THREADS": "1"})


def test_click_train_trains_the_example_and_the_plots_fill(xvfb, tmp_path):  # noqa: F811 - the fixture
    project = tmp_path / "coupling" / "revnet_coupling.revs"
    project.parent.mkdir()
    data = json.loads(EXAMPLE.read_text())
    data["training"] = TRAINING
    project.write_text(json.dumps(data, indent=1))
    app = TrainApp(xvfb, project, tmp_path / "home")
    try:
        time.sleep(1.0)  # first expose
        app.xdo("mousemove", *app.ask(cmd="button", action="train"))
        time.sleep(0.2)
        app.xdo("click", 1)
        deadline = time.monotonic() + 400
        state = app.ask(cmd="run")
        while (state is None or state["running"] or state["status"] == "starting") and time.monotonic() < deadline:
            time.sleep(0.5)
            state = app.ask(cmd="run")
        assert state is not None, "the click on Train started no run"
        assert state["status"] == "finished", state
        points = state["points"]
        name = next(iter(points)).split("/")[0]
        assert points[f"{name}/loss"] == 150 and points[f"{name}/val_loss"] == 10
        assert points[f"{name}/peak_bytes"] == 50
        assert any(k.startswith(f"{name}/grad_rel_error/") and v == 15 for k, v in points.items())
        assert state["note"].startswith("peak ")
        app.shot("training.png", docs=True)
        runs = [p for p in (project.parent / "runs").iterdir() if p.is_dir()]  # (beside its .gitignore)
        assert len(runs) == 1 and (runs[0] / "checkpoints" / "last.pt").exists()
    finally:
        app.close()
