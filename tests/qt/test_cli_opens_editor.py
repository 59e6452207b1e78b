"""`revstudio FILE` goes through the CLI into the editor with the file open."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys
from PySide6.QtWidgets import QApplication
from revstudio.qt.main_window import MainWindow

seen = {}

def fake_exec(self=None):
    # Let the window paint and open its file, then report what a user would see.
    import time
    end = time.monotonic() + 20
    while time.monotonic() < end:
        QApplication.processEvents()
        windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        if windows and windows[0].document.graph.nodes:
            w = windows[0]
            seen.update(title=w.windowTitle(), nodes=len(w.document.graph.nodes),
                        torch="torch" in sys.modules)
            break
    return 0

QApplication.exec = fake_exec
from revstudio.cli import main
code = main([sys.argv[1]])
print(json.dumps({"code": code, **seen}))
"""


def test_revstudio_file_opens_the_editor_on_that_file(child_editor: Any) -> None:
    example = ROOT / "resources" / "examples" / "revnet_wired.revs"
    out = child_editor(CHILD, str(example))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    assert result["nodes"] == 25
    assert "revnet" in result["title"].lower()
    assert result["torch"] is False, "opening a project must not import torch"
