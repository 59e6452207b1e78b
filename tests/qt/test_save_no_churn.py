"""Opening a project and saving it without an edit leaves its file byte for byte as it was.

A team keeping projects in git saw `git diff` show a new `"view"` section (zoom and centre) after a
teammate merely opened and saved a file, different on each screen size: churn in every commit and
a conflict in every merge of two branches that both saved.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from revstudio.core.project import load, loads, save

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _open(make_window: Any, qtbot: Any, path: Path, size: tuple[int, int]) -> Any:
    window = make_window()
    window.resize(*size)
    qtbot.wait(100)
    assert window.files.load_path(str(path))
    qtbot.wait(200)  # the first view waits for the tab's size
    return window


def _project(tmp_path: Path, view: dict[str, float]) -> Path:
    data = json.loads((EXAMPLES / "revnet_wired.revs").read_text())
    data["view"] = view
    path = tmp_path / "shared.revs"
    save(loads(json.dumps(data)), path)  # in the writer's own form, as a first save made it
    return path


def test_open_and_save_without_a_view_adds_none_at_any_window_size(make_window, qtbot, tmp_path) -> None:
    path = _project(tmp_path, {})
    before = path.read_bytes()
    for size in ((1280, 800), (1600, 1000)):
        window = _open(make_window, qtbot, path, size)
        window.resize(size[0] - 200, size[1] - 100)  # a dock or the window resized: the fit follows
        qtbot.wait(50)
        assert window.files.save()
        assert path.read_bytes() == before
        window.close()


def test_open_and_save_keeps_a_saved_view_exactly(make_window, qtbot, tmp_path) -> None:
    path = _project(tmp_path, {"x": 900.0, "y": 120.0, "zoom": 0.25})
    before = path.read_bytes()
    window = _open(make_window, qtbot, path, (1400, 900))
    window.resize(1200, 800)
    qtbot.wait(50)
    assert window.files.save()
    assert path.read_bytes() == before


def test_a_zoom_is_saved_and_a_pan_after_that_save_too(make_window, qtbot, tmp_path) -> None:
    path = _project(tmp_path, {"x": 900.0, "y": 120.0, "zoom": 0.25})
    window = _open(make_window, qtbot, path, (1400, 900))
    view = window.tabs.main_view()
    view.zoom_in()
    assert window.files.save()
    saved = load(str(path)).view
    assert saved["zoom"] > 0.25 and saved == view.view_state()
    view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() + 60)  # a middle-button pan
    assert window.files.save()
    assert load(str(path)).view == view.view_state() != saved
