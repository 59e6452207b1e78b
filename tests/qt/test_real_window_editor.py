"""Daily-use editor flows in a real window under Xvfb, driven by real X input (xdotool).

Each test starts the app in a child process on the xcb platform (see
test_real_window.py); the child answers questions about its state (Python
expressions evaluated in the app, read-only by convention) while every edit
comes from real mouse and keyboard events. Screenshots land in
tests/qt/screenshots/ for a person to look at.
"""
from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest
from test_real_window import DRIVER_LOOP, SCREENSHOTS, App, driver_head, xvfb  # noqa: F401 - xvfb is a fixture

pytestmark = [pytest.mark.xvfb, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "examples"

CHILD = driver_head() + r"""
said = []  # every status-bar message, in order (a fast step may show one only briefly)
window.statusBar().messageChanged.connect(lambda text: said.append(text) if text else None)

def modal():
    from PySide6.QtWidgets import QApplication
    w = QApplication.activeModalWidget()
    return type(w).__name__ if w is not None else None

def view():
    return window.current_view()

def node_global(node_id, dx=0, dy=0):
    v = view()
    item = v.scene().node_items[node_id]
    return glob(v.viewport(), v.mapFromScene(item.mapToScene(item.boundingRect().topLeft().x() + 10 + dx,
                                                               item.boundingRect().topLeft().y() + 14 + dy)))

def scene_global(x, y):
    v = view()
    return glob(v.viewport(), v.mapFromScene(x, y))

def wire_hits():
    scene = view().scene()
    rects = {n: i.sceneBoundingRect().adjusted(12, 12, -12, -12) for n, i in scene.node_items.items()}
    bad = []
    for edge, wire in scene.wire_items.items():
        path = wire.scene_path()
        for k in range(1, 100):
            p = path.pointAtPercent(k / 100)
            if any(n not in (edge.src.node, edge.dst.node) and r.contains(p) for n, r in rects.items()):
                bad.append(str(edge))
                break
    return bad

def answer(req):
    cmd = req["cmd"]
    if cmd == "py":
        return eval(req["expr"])
    if cmd == "shot":
        return QGuiApplication.primaryScreen().grabWindow(0).save(req["path"])
    raise ValueError(cmd)

"""
CHILD += DRIVER_LOOP


class EditorApp(App):
    """The app with an expression channel: ``py("window.document.graph.name")``."""

    def __init__(self, display: str, project: Path | str, home: Path, size: tuple[int, int] = (1400, 880),
                 umask: int = 0o022) -> None:
        super().__init__(display, project, home, CHILD, {"RS_W": str(size[0]), "RS_H": str(size[1])}, umask)
        time.sleep(0.6)  # first expose

    def py(self, expr: str):
        return self.ask(cmd="py", expr=expr)

    def until(self, expr: str, timeout: float = 20.0):
        deadline = time.monotonic() + timeout
        value = self.py(expr)
        while not value and time.monotonic() < deadline:
            time.sleep(0.1)
            value = self.py(expr)
        return value

    def click(self, point: list[int], button: int = 1, modifier: str | None = None) -> None:
        self.xdo("mousemove", *point)
        time.sleep(0.1)
        if modifier:
            self.xdo("keydown", modifier)
        self.xdo("click", button)
        if modifier:
            self.xdo("keyup", modifier)
        time.sleep(0.25)

    def key(self, keys: str) -> None:
        self.xdo("key", keys)
        time.sleep(0.3)

    def shot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(exist_ok=True)
        path = SCREENSHOTS / name
        assert self.ask(cmd="shot", path=str(path)) is True
        return path


@pytest.fixture
def editor(xvfb, tmp_path):  # noqa: F811 - the imported fixture
    apps: list[EditorApp] = []

    def start(project: Path | str = "-", size: tuple[int, int] = (1400, 880), umask: int = 0o022) -> EditorApp:
        app = EditorApp(xvfb, project, tmp_path / f"home{len(apps)}", size, umask)
        apps.append(app)
        return app

    yield start
    for app in apps:
        app.close()


def _empty_spot(app: EditorApp) -> list[int]:
    """A point on the canvas with no node under it (bottom middle of the view)."""
    return app.py("glob(view().viewport(), QPoint(view().viewport().width() // 2, view().viewport().height() - 30))")


def test_ctrl_l_lays_out_a_revnet_with_wires_clear_of_nodes(editor):
    app = editor(EXAMPLES / "revnet_wired.revs")
    app.click(_empty_spot(app))
    before = app.py("{n.id: n.pos for n in window.document.graph.nodes.values()}")
    app.key("ctrl+l")
    assert app.until("window.document.undo_stack.count() == 1")
    after = app.py("{n.id: n.pos for n in window.document.graph.nodes.values()}")
    assert after != before
    assert app.py("wire_hits()") == []
    assert app.py("window.document.undo_stack.text(0)") == "Auto Layout"
    app.shot("editor_layout.png")


def test_paste_lands_at_the_real_cursor(editor):
    app = editor(EXAMPLES / "two_branch.revs")
    first = app.py("next(iter(window.document.graph.nodes))")
    app.py(f"view().select_nodes([{first!r}]) or view().centerOn(view().scene().node_items[{first!r}])")
    app.click(app.py(f"node_global({first!r})"))  # a real click on the header selects it
    assert app.py("view().selected_node_ids()") == [first]
    app.key("ctrl+c")
    spot = app.py("[*scene_global(view().mapToScene(view().viewport().rect().center()).x() + 250, "
                  "view().mapToScene(view().viewport().rect().center()).y() + 150)]")
    app.xdo("mousemove", *spot)
    time.sleep(0.3)
    count = app.py("len(window.document.graph.nodes)")
    app.key("ctrl+v")
    assert app.until(f"len(window.document.graph.nodes) == {count + 1}")
    app.key("ctrl+v")
    assert app.until(f"len(window.document.graph.nodes) == {count + 2}")
    pasted = app.py("view().selected_node_ids()")
    assert len(pasted) == 1
    at = app.py(f"scene_global(*window.document.graph.node({pasted[0]!r}).pos)")
    assert abs(at[0] - spot[0]) < 120 and abs(at[1] - spot[1]) < 120, (at, spot)
    positions = app.py("sorted({n.pos for n in window.document.graph.nodes.values()})")
    assert len(positions) == count + 2, "two pastes at one spot must not stack"
    app.shot("editor_paste.png")


def test_panels_come_back_after_the_window_is_shrunk(editor):
    app = editor(EXAMPLES / "two_branch.revs")
    wid = app.py("int(window.winId())")
    sizes = ("[window.palette_dock.width(), window.inspector_dock.width(), window.bottom_dock.height(), "
             "window.tabs.width(), window.tabs.height()]")
    big = app.py(sizes)
    app.xdo("windowsize", wid, 560, 380)
    assert app.until("window.width() == 560 and window.height() == 380")
    time.sleep(0.8)
    small = app.py(sizes)
    app.shot("editor_small_window.png")
    assert small[3] >= 200 and small[4] >= 120, small  # a usable canvas
    app.xdo("windowsize", wid, 1400, 880)
    assert app.until("window.width() == 1400")
    time.sleep(0.8)
    again = app.py(sizes)
    app.shot("editor_window_restored.png")
    assert all(abs(a - b) <= 12 for a, b in zip(again[:3], big[:3])), (big, again)


def test_rename_by_double_clicking_a_header_with_real_keys(editor):
    app = editor(EXAMPLES / "two_branch.revs")
    node = app.py("next(n for n, x in window.document.graph.nodes.items() if x.type == 'Conv')")
    app.py(f"view().centerOn(view().scene().node_items[{node!r}])")
    time.sleep(0.3)
    header = app.py(f"node_global({node!r})")
    app.xdo("mousemove", *header)
    time.sleep(0.1)
    app.xdo("click", "--repeat", 2, "--delay", 80, 1)
    assert app.until("view().rename_field is not None")
    app.key("ctrl+a")
    app.xdo("type", "--delay", 30, "stem_conv")
    app.key("Return")
    assert app.until("'stem_conv' in window.document.graph.nodes")
    assert app.py("window.document.graph.renamed") == {node: "stem_conv"}
    assert app.py("view().selected_node_ids()") == ["stem_conv"]
    app.shot("editor_renamed.png")
    app.key("ctrl+z")
    assert app.until(f"{node!r} in window.document.graph.nodes")


def test_delete_then_undo_reports_and_reselects_with_real_keys(editor):
    app = editor(EXAMPLES / "two_branch.revs")
    node = app.py("next(n for n, x in window.document.graph.nodes.items() if x.type == 'Conv')")
    app.py(f"view().centerOn(view().scene().node_items[{node!r}])")
    time.sleep(0.3)
    app.click(app.py(f"node_global({node!r}, 30)"))
    assert app.py("view().selected_node_ids()") == [node]
    app.key("Delete")
    assert app.until(f"{node!r} not in window.document.graph.nodes")
    assert app.py("window.statusBar().currentMessage()") == "Deleted 1 node"
    app.key("ctrl+z")
    assert app.until(f"{node!r} in window.document.graph.nodes")
    assert app.py("window.statusBar().currentMessage()").startswith("Undid ")
    assert app.py("view().selected_node_ids()") == [node]
    app.shot("editor_undo_status.png")


def test_fitted_view_draws_blocks_and_a_visible_selection(editor):
    app = editor(EXAMPLES / "revnet_wired.revs")
    app.click(_empty_spot(app))
    app.key("Home")
    app.key("ctrl+a")
    assert app.until("len(view().selected_node_ids()) == len(window.document.graph.nodes)")
    assert app.py("view().zoom()") < 0.35  # the level of detail that draws blocks
    shot = app.shot("editor_fitted_selection.png")
    from PySide6.QtGui import QImage

    image = QImage(str(shot))
    sel = app.py("view().scene().theme.selection.name()")
    from PySide6.QtGui import QColor

    target = QColor(sel)
    hits = sum(1 for y in range(0, image.height(), 3) for x in range(0, image.width(), 3)
               if abs(image.pixelColor(x, y).red() - target.red()) + abs(image.pixelColor(x, y).green()
                                                                          - target.green()) < 30)
    assert hits > 150, hits


def test_shift_click_adds_to_the_selection_with_real_input(editor):
    app = editor(EXAMPLES / "two_branch.revs")
    convs = app.py("[n for n, x in window.document.graph.nodes.items() if x.type == 'Conv']")
    assert len(convs) >= 2
    app.py(f"view().resetTransform() or view().centerOn(view().scene().nodes_rect({convs[:2]!r}).center())")
    time.sleep(0.3)
    app.click(app.py(f"node_global({convs[0]!r}, 30)"))
    app.click(app.py(f"node_global({convs[1]!r}, 30)"), modifier="shift")
    assert sorted(app.py("view().selected_node_ids()")) == sorted(convs[:2])
    assert "× Conv" in app.py("window.inspector.type_label.text()")
    app.shot("editor_shift_selection.png")


def test_a_new_project_shows_the_blank_canvas_hint(editor):
    app = editor("-")
    shot = app.shot("editor_empty_canvas.png")
    assert app.py("window.status_warnings.text()") == "▲ 0 warnings"
    assert app.py("len(window.document.graph.nodes)") == 0
    from PySide6.QtGui import QImage

    image = QImage(str(shot))
    centre = app.py("glob(view().viewport(), view().viewport().rect().center())")
    row = [image.pixelColor(x, centre[1] - 12).lightness() for x in range(centre[0] - 200, centre[0] + 200)]
    assert max(row) - min(row) > 40, "the hint text is drawn in the middle of the canvas"


def test_ctrl_e_export_through_the_save_dialog_with_real_keys(editor, tmp_path):
    """Ctrl+E, type the path into the save dialog, Enter: the status bar and the Log say it
    started and finished, and the file has the permissions the umask gives (here 0640)."""
    project = tmp_path / "two_branch.revs"
    project.write_text((EXAMPLES / "two_branch.revs").read_text())
    app = editor(project, umask=0o027)
    app.click(_empty_spot(app))
    app.key("ctrl+e")
    assert app.until("modal() == 'QFileDialog'"), "Ctrl+E opens the save dialog"
    time.sleep(0.5)
    app.shot("editor_export_dialog.png")
    target = tmp_path / "out" / "digits_model.py"
    target.parent.mkdir()
    app.key("ctrl+a")  # the suggested name is selected; replace it with a whole path
    app.xdo("type", "--delay", 20, str(target))
    app.key("Return")
    deadline = time.monotonic() + 90
    while not target.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert target.exists(), "the export was written where the dialog said"
    assert app.until("any(t.startswith('Exported ') for t in said)", timeout=30)
    said = app.py("said")
    started = next(i for i, t in enumerate(said) if t.startswith("Exporting digits_model.py"))
    finished = next(i for i, t in enumerate(said) if t.startswith("Exported digits_model.py ("))
    assert started < finished, said
    assert app.py("modal()") is None
    log = app.py("window.bottom.log.toPlainText()")
    assert "Exporting digits_model.py" in log and f"Exported {target}" in log
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the umask's mode, not 0600
    assert not [p.name for p in target.parent.iterdir() if p != target]  # no temporary file left
    text = target.read_text()
    assert "class Model(nn.Module):" in text
    compile(text, str(target), "exec")
    bar = "window.bottom.tabBar()"
    app.click(app.py(f"glob({bar}, {bar}.tabRect(window.bottom.indexOf(window.bottom.log)).center())"))
    assert app.until("window.bottom.currentWidget() is window.bottom.log")
    app.shot("editor_export_done.png")
