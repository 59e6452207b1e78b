"""SIGTERM (a logout, a shutdown, `kill PID`) or SIGHUP (its terminal closed) keeps the unsaved edits for the next start.

Killed between two autosaves (every 30 s by default), the editor lost the last
edits; asked to terminate, it writes the recovery file first and leaves it there.
"""
from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from revstudio.core.project import load

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import os, signal, sys
from PySide6.QtCore import QTimer
from revstudio.qt.main_window import MainWindow

opened = MainWindow.open_later

def open_later(self, path):
    opened(self, path)
    def edit():
        if not self.document.graph.nodes:  # not open yet
            QTimer.singleShot(50, edit)
            return
        self.document.graph.add_node("Activation", "mine", {}, (0, 0))
        self.document.mark_dirty()  # an edit made seconds after the last autosave
        os.kill(os.getpid(), int(sys.argv[2]))
    QTimer.singleShot(50, edit)
    QTimer.singleShot(60_000, lambda: os._exit(99))  # a hang guard, not a timing

MainWindow.open_later = open_later
from revstudio.cli import main
sys.exit(main(sys.argv[1:2]))
"""


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_writes_the_recovery_file_and_keeps_it(tmp_path: Path, number: int, child_editor: Any) -> None:
    example = ROOT / "resources" / "examples" / "revnet_wired.revs"
    out = child_editor(CHILD, str(example), str(int(number)))
    assert out.returncode in (128 + number, -number), (out.returncode, out.stderr)
    kept = list((tmp_path / "data").glob("**/recovery/*.revs"))
    assert len(kept) == 1, out.stderr
    assert "mine" in load(str(kept[0])).nodes
    assert "Traceback" not in out.stderr
