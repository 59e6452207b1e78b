"""Shared fixtures for the GUI tests: isolated settings, scripted dialogs, a main window.

Every test gets its own QSettings folder and QStandardPaths test mode, so no
test reads or writes the real user's preferences, recent files or recovery
files. Dialogs answer from a script instead of blocking the offscreen run.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings, QStandardPaths

from revstudio.core.graph import Graph

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True, scope="session")
def clipboard_released_at_exit(qapp: Any) -> Any:
    """A copy's QMimeData left on the clipboard is deleted after Python has gone: the
    test process then ends in SIGSEGV (exit 139) whatever its results."""
    yield
    from revstudio.qt.canvas.editing import release_clipboard

    release_clipboard()


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path: Path) -> Path:
    QStandardPaths.setTestModeEnabled(True)
    folder = tmp_path / "settings"
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    return folder


class ScriptedDialogs:
    """Answers the window's questions from queues; records what was asked."""

    def __init__(self) -> None:
        self.unsaved: list[str] = []        # answers to "save changes?"
        self.open_paths: list[str | None] = []
        self.save_paths: list[str | None] = []
        self.weights_paths: list[str | None] = []  # answers to Run > Train From Weights…
        self.restore: list[str] = []
        self.errors: list[tuple[str, str]] = []
        self.asked: list[str] = []
        self.confirms: list[bool] = []      # answers to yes/no questions (delete runs)
        self.stop_runs: list[bool] = []     # answers to "a run is training: stop it and quit?"
        self.texts: list[str | None] = []   # answers to "new name?" (None: cancelled)
        self.overwrites: list[str] = []     # answers to "the file changed on disk: overwrite?"

    def ask_unsaved(self, parent: Any, name: str) -> str:
        self.asked.append(f"unsaved:{name}")
        return self.unsaved.pop(0) if self.unsaved else "discard"

    def error(self, parent: Any, title: str, text: str) -> None:
        self.errors.append((title, text))

    def info(self, parent: Any, title: str, text: str) -> None:
        self.asked.append(f"info:{title}")

    def confirm(self, parent: Any, title: str, text: str) -> bool:
        self.asked.append(f"confirm:{title}")
        return self.confirms.pop(0) if self.confirms else False

    def ask_text(self, parent: Any, title: str, label: str, text: str) -> str | None:
        self.asked.append(f"text:{title}")
        return self.texts.pop(0) if self.texts else None

    def ask_stop_run(self, parent: Any, detail: str) -> bool:
        self.asked.append("stop_run")
        return self.stop_runs.pop(0) if self.stop_runs else True

    def open_path(self, parent: Any, start: str) -> str | None:
        self.asked.append("open")
        return self.open_paths.pop(0) if self.open_paths else None

    def weights_path(self, parent: Any, start: str) -> str | None:
        self.asked.append("weights")
        return self.weights_paths.pop(0) if self.weights_paths else None

    def save_path(self, parent: Any, start: str) -> str | None:
        self.asked.append("save_as")
        return self.save_paths.pop(0) if self.save_paths else None

    def ask_overwrite(self, parent: Any, path: str) -> str:
        self.asked.append(f"overwrite:{path}")
        return self.overwrites.pop(0) if self.overwrites else "cancel"

    def ask_restore(self, parent: Any, description: str) -> str:
        self.asked.append(f"restore:{description}")
        return self.restore.pop(0) if self.restore else "later"


@pytest.fixture
def dialogs() -> ScriptedDialogs:
    return ScriptedDialogs()


@pytest.fixture
def make_window(qtbot: Any, tmp_path: Path, dialogs: ScriptedDialogs) -> Callable[..., Any]:
    """Build a shown MainWindow on ``graph`` with scripted dialogs and a temp recovery folder."""
    from revstudio.qt.autosave import RecoveryStore
    from revstudio.qt.document import Document
    from revstudio.qt.main_window import MainWindow
    from revstudio.qt.settings import Settings

    def make(graph: Graph | None = None, path: str | None = None, **kwargs: Any) -> Any:
        doc = Document(graph if graph is not None else Graph(), path)
        window = MainWindow(doc, Settings(), dialogs, RecoveryStore(tmp_path / "recovery"), **kwargs)
        qtbot.addWidget(window)
        window.resize(1280, 800)
        window.show()
        qtbot.waitExposed(window)
        return window

    return make


@pytest.fixture
def child_editor(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run a script (``python -c``) as a child editor would run: offscreen, with a HOME of its own in the test's
    folder (settings in ``config``, recovery files under ``data``), its output captured as text.

    ``own_folder``: the child runs in the test's folder (the repository on its PYTHONPATH) with a runtime
    folder there too, as a user's script would, not in the repository."""

    def run(script: str, *args: str, timeout: float = 120, own_folder: bool = False) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(tmp_path),
               "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}
        if own_folder:
            env.update(PYTHONPATH=str(ROOT), XDG_RUNTIME_DIR=str(tmp_path / "run"))
            (tmp_path / "run").mkdir(mode=0o700)
        return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env,
                              timeout=timeout, cwd=tmp_path if own_folder else ROOT)

    return run


def _revnet_graph() -> Graph:
    """The RevNet-style block of DESIGN section 2, built through the core API."""
    g = Graph("revnet-tiny")
    g.add_node("Input", "x", {"shape": [8, 16, 16]}, (0, 0))
    g.add_node("Split", "s", {"sections": 2}, (220, 0))
    g.add_node("Conv", "f", {"out_channels": 4, "kernel_size": 3, "padding": "same"}, (440, 120))
    g.add_node("Merge", "m", {"mode": "add"}, (660, -40))
    g.add_node("Concat", "c", {}, (880, 0))
    g.add_node("Output", "y", {}, (1100, 0))
    for src, dst in (("x.out", "s.in"), ("s.out1", "f.in"), ("s.out0", "m.in0"), ("f.out", "m.in1"),
                     ("m.out", "c.in0"), ("s.out1", "c.in1"), ("c.out", "y.in")):
        g.connect(src, dst)
    return g


@pytest.fixture
def revnet() -> Graph:
    return _revnet_graph()


@pytest.fixture
def grouped_stack() -> tuple[Graph, str]:
    """x -> [conv, relu] as group 'block' -> y, a body whose output keeps its input's shape:
    the graph and its Group node's id."""
    from revstudio.core.grouping import group_nodes

    g = Graph("stack")
    g.add_node("Input", "x", {"shape": [4, 8, 8]}, (0, 0))
    g.add_node("Conv", "c", {"out_channels": 4, "kernel_size": 3, "padding": "same"}, (200, 0))
    g.add_node("Activation", "a", {"fn": "relu"}, (400, 0))
    g.add_node("Output", "y", {}, (600, 0))
    for s, d in (("x.out", "c.in"), ("c.out", "a.in"), ("a.out", "y.in")):
        g.connect(s, d)
    cmd = group_nodes(g, ["c", "a"], group_name="block", project=g)
    cmd.do()
    return g, cmd.node_id


@pytest.fixture
def revnet_on_disk(revnet: Graph, tmp_path: Path) -> Callable[..., str]:
    """``revnet_on_disk(folder=tmp_path)``: the ``revnet`` graph saved as ``folder/doc.revs``; its path."""
    from revstudio.core.project import save

    def write(folder: Path = tmp_path) -> str:
        path = str(folder / "doc.revs")
        save(revnet, path)
        return path

    return write


@pytest.fixture
def answer_next_box(qtbot: Any) -> Callable[..., list[str]]:
    """``seen = answer_next_box(button, read="text", exact=True)``: once the next modal QMessageBox
    is open, append its ``read`` text to ``seen`` and press the button labelled ``button`` (whose
    label contains it, ``exact=False``); a box without that button is rejected."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    def answer(button: str, read: str = "text", exact: bool = True) -> list[str]:
        seen: list[str] = []

        def click() -> None:  # never raise here: an open modal box would hang the test
            box = QApplication.activeModalWidget()
            if isinstance(box, QMessageBox):
                seen.append(getattr(box, read)())
                labels = [b.text().replace("&", "") for b in box.buttons()]
                match = [b for b, label in zip(box.buttons(), labels)
                         if (label == button if exact else button in label)]
                match[0].click() if match else box.reject()
            else:  # not open yet (slow machine): look again
                QTimer.singleShot(50, click)

        QTimer.singleShot(50, click)
        return seen

    return answer


@pytest.fixture
def settle(qtbot: Any) -> Callable[[], None]:
    """Let coalesced recomputes, deferred deletions and the memory estimates they start (on their
    worker threads, applied at the document's next poll) run."""
    from PySide6.QtCore import QCoreApplication

    from revstudio.qt import estimate_worker
    from revstudio.qt.document import POLL_MS

    seen = [estimate_worker.started()]

    def run() -> None:
        for _ in range(3):
            QCoreApplication.processEvents()
        while estimate_worker.started() != seen[0]:  # an estimate was started: wait until it is shown
            seen[0] = estimate_worker.started()
            qtbot.waitUntil(lambda: not estimate_worker.busy(), timeout=30_000)
            qtbot.wait(2 * POLL_MS)  # (the document's poll that applies it)
            for _ in range(3):
                QCoreApplication.processEvents()

    return run


@pytest.fixture
def inspect(qtbot: Any, settle: Callable[[], None]) -> Callable[..., Any]:
    """``inspect(graph, ids)``: ``(document, inspector)``, an Inspector on a fresh document of ``graph``,
    shown, with the nodes ``ids`` selected and the facts settled."""
    from revstudio.qt.document import Document
    from revstudio.qt.inspector import Inspector

    def make(graph: Graph, ids: list[str]) -> tuple[Any, Any]:
        doc = Document(graph)
        inspector = Inspector(doc)
        qtbot.addWidget(inspector)
        inspector.show()
        inspector.set_selection(graph, ids)
        settle()
        return doc, inspector

    return make


@pytest.fixture
def shown_view(qtbot: Any) -> Any:
    """``shown_view(graph)``: a canvas on a fresh document, shown at 1000x700 with the graph fitted;
    the documents' undo stacks are cleared at the end (no clean-state signal while Qt tears them down)."""
    from PySide6.QtWidgets import QApplication

    from revstudio.qt.canvas import GraphView
    from revstudio.qt.document import Document

    docs: list[Document] = []

    def make(graph: Graph) -> GraphView:
        doc = Document(graph)
        docs.append(doc)
        view = GraphView(doc)
        qtbot.addWidget(view)
        view.resize(1000, 700)
        view.show()
        QApplication.processEvents()
        view.fit_all()
        return view

    yield make
    for doc in docs:
        doc.undo_stack.clear()
