"""Quitting after a copy: the exit must not crash on the clipboard's QMimeData.

The canvas puts a Python-made QMimeData on the clipboard; the clipboard deleted
it only at process exit, after Python had finalised, and the process died with
SIGSEGV (exit 139) after the window had closed cleanly: every offscreen test run
whose last clipboard write was a copy ended that way, whatever its results.
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "resources" / "examples" / "revnet_coupling.revs"
SCRIPT = r"""
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
import revstudio.qt.app as app_module

def copy_and_quit(window):
    view = window.current_view()
    view.select_nodes(list(view.graph.nodes))
    assert view.copy()
    window.document.undo_stack.setClean()
    window.close()

def after_start(window):  # (run_app's hook once the window is up)
    QTimer.singleShot(1500, lambda: copy_and_quit(window))
    QTimer.singleShot(30000, QApplication.instance().quit)  # never hang the test

app_module._tell_about_plugin_problems = after_start
sys.exit(app_module.run_app(sys.argv[1]))
"""


def test_quitting_after_a_copy_exits_cleanly(child_editor):
    done = child_editor(SCRIPT, str(EXAMPLE), own_folder=True)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])


OWN_APP = r"""
import sys
from PySide6.QtCore import QCoreApplication, QStandardPaths
from PySide6.QtWidgets import QApplication
from revstudio.qt.main_window import MainWindow

app = QApplication(sys.argv)
QStandardPaths.setTestModeEnabled(True)
window = MainWindow()
window.show()
window.files.load_path(sys.argv[1])
QCoreApplication.processEvents()
view = window.current_view()
view.select_nodes(list(view.graph.nodes))
assert view.copy()
window.document.undo_stack.setClean()
window.close()
QCoreApplication.processEvents()
print("done")
"""


def test_a_script_with_its_own_application_exits_cleanly_after_a_copy(child_editor):
    """A script or benchmark that makes its own QApplication and window (not ``run_app``) and
    copies: its exit died in SIGSEGV (benchmarks/bench_editor_actions.py after its table)."""
    done = child_editor(OWN_APP, str(EXAMPLE), own_folder=True)
    assert "done" in done.stdout, done.stderr[-2000:]
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
