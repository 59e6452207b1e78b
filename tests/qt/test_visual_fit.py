"""What a screenshot pass found: words cut off, text too faint, dialogs taller than a screen.

Each test measures the widget (its text against its width, its colour against
its background, its rect inside its parent) instead of comparing pictures.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(params=["dark", "light"])
def themed(request: Any, qapp: Any) -> Iterator[str]:
    """The app in one theme (its stylesheet pads buttons and sets plot colours), dark again after."""
    from revstudio.qt import theme

    theme.apply_theme(qapp, request.param)
    yield request.param
    theme.apply_theme(qapp, "dark")


def test_runs_buttons_keep_their_words_in_a_narrow_output_panel(qtbot: Any, themed: str) -> None:
    # At a 900x600 window the Output panel is ~430 px wide: the button row squeezed
    # "Gradient Check" to "ient C" and "Compare Settings" to "are Se".
    from revstudio.qt.runs.panel import RunsPanel

    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.setMinimumSize(120, 60)  # as the Output dock lets it shrink (dock_sizes.MIN_PANEL)
    panel.resize(430, 300)
    panel.show()
    qtbot.waitExposed(panel)
    assert panel.width() == 430
    for name, button in panel.buttons.items():
        text_width = button.fontMetrics().horizontalAdvance(button.text())
        assert button.width() >= text_width + 8, f"{name}: {button.width()} px for {text_width} px of text"
        assert panel.rect().contains(button.geometry()), f"{name} lies outside the panel"
