"""The Code tab: live, highlighted, read-only preview of the export that follows edits."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from PySide6.QtGui import QTextCursor  # noqa: E402

from revstudio.core.commands import SetParam  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.qt.code_view import DEBOUNCE_MS, CodeView, PythonHighlighter, default_export_name  # noqa: E402
from revstudio.qt.document import Document  # noqa: E402

# Upper bounds on a worker's answer, not timings: a worker that starts imports torch first, which
# takes seconds, and many more on a loaded machine (the editor's own File > Export waits 120 s).
WORKER_MS = 120_000


def _graph(channels: int = 4) -> Graph:
    g = Graph("tiny")
    g.add_node("Input", "x", {"shape": [4, 6, 6]})
    g.add_node("Conv", "conv", {"out_channels": channels, "kernel_size": 3, "padding": "same"})
    g.add_node("Output", "y", {})
    g.connect("x.out", "conv.in")
    g.connect("conv.out", "y.in")
    return g


@pytest.fixture
def view(qtbot):
    doc = Document(_graph())
    widget = CodeView(doc)
    qtbot.addWidget(widget)
    widget.resize(600, 300)
    widget.show()
    with qtbot.waitSignal(widget.regenerated, timeout=WORKER_MS):
        pass
    yield widget
    qtbot.waitUntil(lambda: not widget._busy, timeout=WORKER_MS)  # no reply is left for a deleted widget


def test_shows_the_export_read_only(view) -> None:
    text = view.text()
    assert "class Model(nn.Module):" in text
    assert "REVSTUDIO_PROJECT" in text
    assert view.editor.isReadOnly()
    assert view.ok


def test_follows_edits_after_a_debounce_and_keeps_scroll(view, qtbot) -> None:
    bar = view.editor.verticalScrollBar()
    assert bar.maximum() > 10, "the export should be longer than the view"
    bar.setValue(bar.maximum() // 2)
    kept = bar.value()
    view.document.push(SetParam(view.document.graph, "conv", "out_channels", 8))
    assert "Conv2d(4, 8" not in view.text()  # not yet: debounced
    with qtbot.waitSignal(view.regenerated, timeout=DEBOUNCE_MS * 20 + 20000):
        pass
    assert "(4, 8, 3" in view.text()
    assert bar.value() == kept


def test_graph_errors_are_explained_in_the_tab(view, qtbot) -> None:
    view.document.push(SetParam(view.document.graph, "conv", "kernel_size", -3))
    with qtbot.waitSignal(view.regenerated, timeout=20000):
        pass
    assert not view.ok
    assert view.text().startswith("# No export yet")
    assert "conv" in view.text()


def test_highlighter_marks_keywords_strings_and_comments(qtbot) -> None:
    from PySide6.QtGui import QTextDocument

    doc = QTextDocument()
    highlighter = PythonHighlighter(doc, dark=True)
    doc.setPlainText('def f():  # note\n    s = """a\n# not a comment\n"""\n    return "x#y"\n')
    highlighter.rehighlight()

    def fmt_at(line: int, column: int):
        block = doc.findBlockByNumber(line)
        for r in block.layout().formats():
            if r.start <= column < r.start + r.length:
                return r.format.foreground().color().name()
        return None

    keyword = highlighter.formats["keyword"].foreground().color().name()
    string = highlighter.formats["string"].foreground().color().name()
    comment = highlighter.formats["comment"].foreground().color().name()
    assert fmt_at(0, 0) == keyword
    assert fmt_at(0, 12) == comment
    assert fmt_at(2, 2) == string  # inside the triple-quoted string, not a comment
    assert fmt_at(4, 13) == string


def test_default_export_name(view) -> None:
    assert default_export_name(view.document) == "tiny.py"
    view.document.path = "/tmp/a.b/model.revs"
    assert default_export_name(view.document) == "/tmp/a.b/model.py"


def test_copy_puts_the_code_on_the_clipboard(view) -> None:
    from PySide6.QtWidgets import QApplication, QPushButton

    copy = next(b for b in view.findChildren(QPushButton) if b.text() == "Copy")
    copy.click()
    assert QApplication.clipboard().text() == view.text()
    cursor = view.editor.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.End)
    assert cursor.position() > 0


def test_export_button_writes_the_file(view, tmp_path, monkeypatch) -> None:
    from PySide6.QtWidgets import QFileDialog

    from revstudio.core.project import load
    from revstudio.qt.code_view import export_with_dialog

    target = tmp_path / "out"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), "Python files (*.py)"))
    path = export_with_dialog(view, view.document, with_training=True)
    assert path == str(target) + ".py"
    text = (tmp_path / "out.py").read_text(encoding="utf-8")
    assert "def train(" in text
    assert set(load(path).nodes) == {"x", "conv", "y"}


def test_export_moves_relative_data_paths_to_the_files_folder(view, tmp_path, monkeypatch) -> None:
    # as `revstudio export` does: the script and the reopened file resolve data paths from
    # the .py file's folder, so a project's "d.npz" becomes "../a/d.npz" from b/
    from PySide6.QtWidgets import QFileDialog

    from revstudio.core.project import load
    from revstudio.qt.code_view import export_with_dialog

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    view.document.path = str(tmp_path / "a" / "p.revs")
    view.document.graph.training = {"data": "d.npz", "steps": 3}
    target = tmp_path / "b" / "out.py"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), "Python files (*.py)"))
    assert export_with_dialog(view, view.document, with_training=True) == str(target)
    assert load(str(target)).training == {"data": "../a/d.npz", "steps": 3}
    assert "'data': '../a/d.npz'" in target.read_text(encoding="utf-8")  # the script's TRAINING
    assert view.document.graph.training == {"data": "d.npz", "steps": 3}  # the document is unchanged

def test_a_hidden_code_tab_does_not_import_torch(tmp_path) -> None:
    """The window must appear fast: the Code tab imports torch only once it is shown."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys\n"
        "from PySide6.QtWidgets import QApplication\n"
        "app = QApplication([])\n"
        "from revstudio.qt.code_view import CodeView\n"
        "from revstudio.qt.document import Document\n"
        "view = CodeView(Document())\n"
        "view.schedule()\n"
        "app.processEvents()\n"
        "print('torch' in sys.modules)\n"
    )
    env = {"QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "False"


def test_results_of_superseded_edits_are_dropped(view, qtbot) -> None:
    graph = view.document.graph
    for channels in (5, 6, 7):  # several edits while a worker may still run
        view.document.push(SetParam(graph, "conv", "out_channels", channels))
        view.refresh()
    qtbot.waitUntil(lambda: "(4, 7, 3" in view.text() and not view._busy, timeout=30000)
    assert "(4, 5, 3" not in view.text() and "(4, 6, 3" not in view.text()


SHOWN_VIEW = (
    "import sys, threading\n"
    "from PySide6.QtCore import QEventLoop, QTimer\n"
    "from PySide6.QtWidgets import QApplication\n"
    "app = QApplication([])\n"
    "from revstudio.core.project import load\n"
    "from revstudio.qt.code_view import CodeView\n"
    "from revstudio.qt.document import Document\n"
    "view = CodeView(Document(load(sys.argv[1])))\n"
    "view.show()\n"
    "loop = QEventLoop()\n"
    "view.regenerated.connect(loop.quit)\n"
    "QTimer.singleShot(90000, loop.quit)\n"
    "loop.exec()\n"
    "print('class Model(nn.Module):' in view.text(), 'torch' in sys.modules, threading.active_count())\n"
)


def test_the_export_runs_in_a_child_process_not_in_the_editor(tmp_path) -> None:
    """The GUI process neither imports torch nor runs a second Python thread beside Qt's loop.

    A worker thread exporting while the GUI thread collected garbage crashed the
    interpreter (CI, segmentation fault in the code-view tests); the export now
    runs in ``python -m revstudio.codegen.serve``.
    """
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    example = root / "resources" / "examples" / "revnet_wired.revs"
    env = {"QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", SHOWN_VIEW, str(example)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "False", "1"]


def test_a_crashed_worker_is_reported_and_restarted_by_the_next_edit(view, qtbot) -> None:
    worker = view._worker
    first = worker.process_id()
    worker._process.kill()  # dead before it can read the next request, which goes to it anyway
    view.document.push(SetParam(view.document.graph, "conv", "out_channels", 9))
    # The edit's analysis runs on the event loop and its analysisChanged restarts the debounce;
    # left pending, it fired during the wait below whenever the kill was noticed more than
    # DEBOUNCE_MS late (a loaded machine), queued one more export, and the status read
    # "updating..." when the crash was shown. Run it now, so refresh() stops that timer.
    view.document.current_report()
    view.refresh()
    assert view._busy and not view._timer.isActive()  # the request went to the dead worker
    with qtbot.waitSignal(view.regenerated, timeout=WORKER_MS):
        pass
    assert view.text().startswith("# The export worker crashed")
    assert not view.ok and view.status.text() == "graph has errors"
    view.document.push(SetParam(view.document.graph, "conv", "out_channels", 10))
    # a fresh worker imports torch before it answers: seconds, more on a loaded machine
    with qtbot.waitSignal(view.regenerated, timeout=DEBOUNCE_MS * 20 + WORKER_MS):
        pass
    assert view.ok and "(4, 10, 3" in view.text()
    assert worker.process_id() not in (0, first)


def test_two_views_get_their_own_replies_from_the_shared_worker(view, qtbot) -> None:
    other = CodeView(Document(_graph(channels=3)))
    qtbot.addWidget(other)
    other.show()
    with qtbot.waitSignal(other.regenerated, timeout=20000):
        pass
    assert other._worker is view._worker
    assert "(4, 3, 3" in other.text() and "(4, 4, 3" in view.text()
    qtbot.waitUntil(lambda: not other._busy, timeout=30000)
