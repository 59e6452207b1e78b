"""Run > Run Settings: the data preview's and the task hint's wrapped lines take the height they need.

A long message (data of the wrong axis order: four wrapped lines) was drawn in a label sized for a guessed
80-character width: two empty lines above it and two below, and the dialog grew past a 1000-pixel screen.
"""
from __future__ import annotations

import numpy as np


def test_a_long_preview_leaves_no_empty_lines_around_it(qtbot, train_window, tmp_path, open_settings,
                                                         settings_preview):
    window = train_window()
    np.savez(tmp_path / "project" / "hwc.npz", x=np.zeros((20, 16, 16, 3), "float32"), y=np.arange(20) % 10)
    dialog = open_settings(window)
    dialog.resize(1100, dialog.height())
    settings_preview(dialog, "hwc.npz")
    qtbot.waitUntil(lambda: dialog.task_hint.text() != "", timeout=10_000)
    qtbot.wait(300)
    for label in (dialog.preview, dialog.task_hint):
        qtbot.waitUntil(lambda lab=label: lab.width() > 600, timeout=5_000)
        needed = label.heightForWidth(label.width())
        line = label.fontMetrics().lineSpacing()
        assert label.height() < needed + line, (label.objectName(), label.height(), needed)
    dialog.reject()
