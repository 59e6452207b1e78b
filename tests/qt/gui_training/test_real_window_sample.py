"""A real window under Xvfb: a click on the Runs tab's Sample… of a trained flow of 8x8 digits, the dialog
answered from the keyboard, and the samples shown as a grid of pictures (screenshotted).

The app runs in a child process on the xcb platform (the harness of tests/qt/test_real_window.py);
xdotool clicks and types; the real ``revstudio sample`` child draws from a flow trained here for a few
dozen steps on the digits the examples ship.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from test_real_window import DRIVER_LOOP, App, driver_head, xvfb  # noqa: F401 - xvfb is a fixture

pytestmark = [pytest.mark.xvfb, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]

CHILD = driver_head(1300, 900) + r"""
from revstudio.qt.runs.sample_run import SampleDialog
from revstudio.qt.runs.sample_view import SamplesView

def answer(req):
    cmd = req["cmd"]
    panel = window.training.runs_panel
    if cmd == "sample_button":
        window.training.show_tab("Runs")
        panel.reload()
        from pathlib import Path
        panel.select_paths([Path(req["run"])])
        button = panel.buttons["sample"]
        if not button.isVisible() or not button.isEnabled():
            return None
        return glob(button, button.rect().center())
    if cmd == "seen":
        dialogs = [d for d in window.findChildren(SampleDialog) if d.isVisible()]
        views = [v for v in window.findChildren(SamplesView) if v.isVisible()]
        focus = app.focusWidget()
        return {"dialog": len(dialogs), "focus": focus.accessibleName() if focus else None,
                "views": [{"kind": v.kind, "pictures": len(getattr(v.body, "images", [])),
                           "header": v.header.text()} for v in views]}
    if cmd == "shot":
        screen = QGuiApplication.primaryScreen()
        return screen.grabWindow(0).save(req["path"])
    raise ValueError(cmd)

"""
CHILD += DRIVER_LOOP


def digits_flow(folder: Path) -> Path:
    """The Glow example on 8x8 digits (one channel; its coupling nets sized to match), trained briefly."""
    from revstudio import cli

    data = json.loads((ROOT / "resources" / "examples" / "glow_flow.revs").read_text())
    data["nodes"][0]["params"]["shape"] = [1, 8, 8]
    data["groups"]["net"]["nodes"][3]["params"]["out_channels"] = 4  # scale and shift of 2x4x4
    shutil.copy(ROOT / "resources" / "data" / "digits.npz", folder / "digits.npz")
    data["training"] = {"data": "digits.npz"}
    project = folder / "digits_flow.revs"
    project.write_text(json.dumps(data, indent=1))
    run_dir = folder / "runs" / "digits_flow-20261208-101500"
    assert cli.main(["train", str(project), "--out", str(run_dir), "--steps", "60", "--batch-size", "64",
                     "--lr", "0.003", "--device", "cpu", "--val-every", "0", "--gradcheck-every", "0",
                     "--memory-every", "0", "--json"]) == 0
    return project


def test_sample_from_the_runs_tab_by_click_and_keys_shows_the_digits_as_pictures(xvfb, tmp_path):  # noqa: F811
    folder = tmp_path / "digits"
    folder.mkdir()
    project = digits_flow(folder)
    run_dir = next((folder / "runs").iterdir())
    app = App(xvfb, project, tmp_path / "home", CHILD, {"OMP_NUM_THREADS": "1"})
    try:
        time.sleep(1.0)  # first expose
        where = app.ask(cmd="sample_button", run=str(run_dir))
        assert where is not None, "Sample… is not shown enabled for a trained flow"
        app.xdo("mousemove", *where)
        time.sleep(0.2)
        app.xdo("click", 1)
        deadline = time.monotonic() + 20
        seen = app.ask(cmd="seen")
        while not seen["dialog"] and time.monotonic() < deadline:
            time.sleep(0.2)
            seen = app.ask(cmd="seen")
        assert seen["dialog"] == 1 and seen["focus"] == "Number of samples", seen
        app.xdo("key", "ctrl+a")
        app.xdo("type", "64")
        app.xdo("key", "Tab")  # the temperature
        app.xdo("key", "ctrl+a")
        app.xdo("type", "0.6")
        app.xdo("key", "Return")  # Sample
        deadline = time.monotonic() + 180
        while not seen["views"] and time.monotonic() < deadline:
            time.sleep(0.5)
            seen = app.ask(cmd="seen")
        (view,) = seen["views"]
        assert view["kind"] == "images" and view["pictures"] == 64, seen
        written = folder / f"{run_dir.name}-samples.npz"
        assert str(written) in view["header"] and "x 64x1x8x8" in view["header"]
        import numpy as np

        assert np.load(written)["x"].shape == (64, 1, 8, 8)
        time.sleep(0.5)
        app.shot("sample_digits.png")
    finally:
        app.close()
