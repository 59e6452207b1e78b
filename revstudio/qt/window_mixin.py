"""The base of ``MainWindow``'s mixins: ``QMainWindow`` to the type checker, so a mixin's ``self``
is a window (a widget's parent, ``saveState``), and ``object`` at run time, where ``MainWindow``
itself derives from ``QMainWindow`` once, after its mixins.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMainWindow

if TYPE_CHECKING:
    WindowMixin = QMainWindow
else:
    WindowMixin = object


