"""Guard against PySide6 6.12.0, which aborts Python 3.11 after many Qt calls returning None.

The crash ("Fatal Python error: deallocating None") needs a few thousand such
calls, e.g. ``QGraphicsScene.itemAt`` on empty space, which the canvas does on
every mouse move. pyproject excludes 6.12.0; this test fails loudly if it is
installed anyway, and runs the pattern in a child process so an abort cannot
take the test session with it.
"""
from __future__ import annotations

import os
import subprocess
import sys

import PySide6

LOOP = """
from PySide6.QtCore import QPointF
from PySide6.QtGui import QTransform
from PySide6.QtWidgets import QApplication, QGraphicsScene

app = QApplication([])
scene = QGraphicsScene()
scene.addRect(0, 0, 10, 10)
misses = 0
for i in range(20_000):
    if scene.itemAt(QPointF(500 + i % 7, 500), QTransform()) is None:
        misses += 1
print("misses", misses)
"""


def test_installed_pyside_is_not_the_broken_release():
    assert PySide6.__version__ != "6.12.0", "PySide6 6.12.0 aborts Python 3.11; install another version"


def test_many_qt_calls_returning_none_exit_cleanly(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run([sys.executable, "-c", LOOP], capture_output=True, text=True, env=env,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, f"child exited {out.returncode}: {out.stderr[-2000:]}"
    assert "misses 20000" in out.stdout
