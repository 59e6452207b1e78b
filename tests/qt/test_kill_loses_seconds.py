"""SIGKILL (or power loss) loses only the edits of the last pause, not up to 30 s of work.

A child editor opens an example, makes an edit, and waits for its recovery file to hold it;
then it makes one more edit and is killed with SIGKILL, which no handler sees. The next start
is offered the first edit. The Preferences upper bound is set to an hour in the child, so only
the pause after the edit can have written it (the old 30 s timer never came within the
child's guard, which is far longer than the 2 s pause).
"""
from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from revstudio.core.project import load

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import os, signal, sys, time
from PySide6.QtCore import QCoreApplication, QTimer
from revstudio.core.commands import AddNode
from revstudio.core.graph import Node
from revstudio.qt.main_window import MainWindow
from revstudio.qt.settings import Settings

opened = MainWindow.open_later

def open_later(self, path):
    opened(self, path)
    Settings().autosave_seconds = 3600  # (what the Preferences dialog writes)
    self.apply_preferences()
    def first():
        if not self.document.graph.nodes:  # not open yet
            QTimer.singleShot(50, first)
            return
        self.document.push(AddNode(self.document.graph, Node("kept", "Activation", {}, (0.0, 0.0))))
        start = time.monotonic()
        def written():
            file = self.autosaver.recovery_file
            if file.with_suffix(".json").exists() and file.exists() and '"kept"' in file.read_text():
                print(f"written after {time.monotonic() - start:.2f} s", flush=True)
                self.document.push(AddNode(self.document.graph, Node("lost", "Activation", {}, (0.0, 90.0))))
                os.kill(os.getpid(), signal.SIGKILL)
            elif time.monotonic() - start > 12:
                os._exit(98)  # not on disk 12 s after the edit
            else:
                QTimer.singleShot(20, written)
        written()
    QTimer.singleShot(50, first)
    QTimer.singleShot(90_000, lambda: os._exit(99))  # a hang guard

MainWindow.open_later = open_later
from revstudio.cli import main
sys.exit(main(sys.argv[1:2]))
"""


def test_sigkill_loses_only_the_edits_since_the_last_pause(tmp_path: Path, child_editor: Any) -> None:
    example = ROOT / "resources" / "examples" / "revnet_wired.revs"
    out = child_editor(CHILD, str(example), timeout=150)
    assert out.returncode == -signal.SIGKILL, (out.returncode, out.stdout, out.stderr)
    kept = list((tmp_path / "data").glob("**/recovery/*.revs"))
    assert len(kept) == 1, out.stderr
    nodes = load(str(kept[0])).nodes
    assert "kept" in nodes and "lost" not in nodes  # (killed: nothing wrote the last edit)
    from revstudio.qt.autosave import RecoveryStore

    offered = RecoveryStore(kept[0].parent).pending()  # the next start offers it
    assert [r.file for r in offered] == kept
