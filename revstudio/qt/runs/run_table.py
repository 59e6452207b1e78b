"""The Runs table's cells: what each column shows, what it sorts by, and which cell can be edited.

A column sorts by the value it stands for (a step count as a number, a loss as a
number with missing ones last, a start time as its ISO text), not by its text;
each row's items carry their run's folder, so a sorted table still knows its runs.
"""
from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableWidgetItem

COLUMNS = ("run", "label", "status", "step", "loss", "val loss", "val acc", "mode", "lr", "batch", "data",
           "started", "duration")
LABEL = COLUMNS.index("label")
STATUS = COLUMNS.index("status")
PATH_ROLE = Qt.ItemDataRole.UserRole
SORT_ROLE = Qt.ItemDataRole.UserRole + 1


class RunItem(QTableWidgetItem):
    """One cell: sorts by its key (SORT_ROLE) where it has one; only the label cell is editable."""

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(SORT_ROLE), other.data(SORT_ROLE)
        if mine is None or theirs is None or type(mine) is not type(theirs):
            return self.text().casefold() < other.text().casefold()
        return bool(mine < theirs)


def make_item(column: int, text: str, key: Any, path: str) -> RunItem:
    item = RunItem(text)
    item.setData(PATH_ROLE, path)
    item.setData(SORT_ROLE, sort_key(key))
    flags = item.flags() | Qt.ItemFlag.ItemIsEditable if column == LABEL else \
        item.flags() & ~Qt.ItemFlag.ItemIsEditable
    item.setFlags(flags)
    if column == LABEL and not text:
        item.setToolTip("Double-click or F2 to give this run a label (shown in the plots' legend)")
    return item


def sort_key(value: Any) -> Any:
    """A number as a float (a missing or non-finite one sorts after every number), else the text."""
    if isinstance(value, bool) or value is None:
        return math.inf if value is None else str(value)
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else math.inf
    return str(value).casefold()
