"""Dark and light themes: a Fusion palette, a stylesheet and tinted line icons.

Icons are single-colour SVGs drawn with ``currentColor``; :func:`icon` renders
them in the theme's foreground so one file serves both themes. Stylesheets
live in ``resources/styles/<theme>.qss`` next to the icons; ``revstudio.resources``
finds that folder in a checkout, a wheel, a zip or a frozen build.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from PySide6.QtCore import QByteArray, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QIcon, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import QApplication

from revstudio import resources

RESOURCES = resources.root()
THEMES = ("dark", "light")


@dataclass(frozen=True)
class Colors:
    window: str
    base: str
    alt_base: str
    text: str
    muted: str
    accent: str
    error: str
    warning: str
    ok: str
    border: str
    highlight: str  # a fill under white text (a selected row or menu item, the default button)
    control: str    # the edge of a field, button or check box (drawn on window, base and alt_base)


# highlight: white text reads on it at 4.5:1 (the dark accent under white was 3.2:1); control: 3:1 (WCAG
# 1.4.11) on window, base and alt_base, where the border colour (1.2:1) left fields and check boxes unseen.
DARK = Colors("#1e2128", "#16181d", "#22262e", "#dfe3ea", "#8a93a3", "#5b8cff",
              "#ff6b6b", "#f5b84c", "#4cc38a", "#2c313b", "#3565dd", "#6b7385")
# Light: error, warning, ok and muted are text colours too, at least 4.5:1 (WCAG AA) on window,
# base and alt_base; the earlier #b97a0b warning and #1f9d62 ok were 3.3:1 on the window colour.
LIGHT = Colors("#f4f5f8", "#ffffff", "#eef0f4", "#1d2330", "#5f6879", "#3567e8",
               "#c62828", "#8a5a00", "#157347", "#d6dae2", "#3567e8", "#7d8696")
TEXT_ROLES = ("text", "muted", "error", "warning", "ok")  # drawn as text on window, base and alt_base
ON_HIGHLIGHT = "#ffffff"  # the text on a highlight fill
FOCUS_WIDTH = 2  # px: the accent edge a field, button, check box or list has while it has the keys

TEXT_SCALES = (100, 125, 150, 175, 200)  # Preferences > Text size, in % of the system's font

_current = "dark"
_text_scale = 100
_base_font: QFont | None = None  # the system's font, before a text size scaled it


def colors(theme: str | None = None) -> Colors:
    return DARK if (theme or _current) == "dark" else LIGHT


def current() -> str:
    return _current


def text_scale() -> int:
    """The text size in % of the system's font (Preferences > Text size)."""
    return _text_scale


_GROWS = re.compile(r"::indicator|-arrow|::drop-down|::up-button|::down-button")  # sized as the text


def px(size: float) -> int:
    """A font size in pixels (a stylesheet's or a rich text's) at the current text size."""
    return round(size * _text_scale / 100)


def set_text_scale(app: QApplication, percent: int) -> None:
    """All text of the application at ``percent`` % of the system's font (100 to 200), at once: the
    application font and the stylesheet's own sizes; the canvas keeps its zoom (Ctrl++ enlarges it)."""
    global _text_scale, _base_font
    if _base_font is None:
        _base_font = QFont(app.font())
    _text_scale = min(max(int(percent), TEXT_SCALES[0]), TEXT_SCALES[-1])
    font = QFont(_base_font)
    if _base_font.pointSizeF() > 0:
        font.setPointSizeF(_base_font.pointSizeF() * _text_scale / 100)
    else:
        font.setPixelSize(px(_base_font.pixelSize()))
    app.setFont(font)
    app.setStyleSheet(stylesheet(_current))


def status_colour(status: str) -> str:
    """A run status's text colour ("running", "finished", "stopped", "failed", "killed", "unknown") in the
    current theme: a killed run ended as badly as a failed one; unknown stays muted."""
    c = colors()
    return {"running": c.accent if _current == "dark" else c.text, "finished": c.ok, "stopped": c.warning,
            "failed": c.error, "killed": c.error}.get(status, c.muted)


def _palette(c: Colors) -> QPalette:
    p = QPalette()
    role = QPalette.ColorRole
    for r, value in (
        (role.Window, c.window), (role.WindowText, c.text), (role.Base, c.base),
        (role.AlternateBase, c.alt_base), (role.Text, c.text), (role.Button, c.alt_base),
        (role.ButtonText, c.text), (role.ToolTipBase, c.base), (role.ToolTipText, c.text),
        (role.Highlight, c.highlight), (role.HighlightedText, ON_HIGHLIGHT), (role.Link, c.accent),
        (role.PlaceholderText, c.muted), (role.Mid, c.border), (role.Dark, c.border),
    ):
        p.setColor(r, QColor(value))
    disabled = QPalette.ColorGroup.Disabled
    for r in (role.Text, role.WindowText, role.ButtonText):
        p.setColor(disabled, r, QColor(c.muted))
    return p


def stylesheet(theme: str) -> str:
    """The theme's stylesheet with ``@name`` colour tokens substituted."""
    path = RESOURCES / "styles" / f"{theme}.qss"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:  # a broken install still gets a usable (unstyled) window
        return ""
    c = colors(theme)
    text = text.replace("@icons", (RESOURCES / "icons").as_posix())
    # Longest names first so "@alt_base" is not eaten by "@base".
    for name in sorted(c.__dataclass_fields__, key=len, reverse=True):
        text = text.replace(f"@{name}", getattr(c, name))
    text = re.sub(r"font-size:\s*(\d+)px", lambda m: f"font-size: {px(int(m.group(1)))}px", text)
    # a check box's box and a spin box's or combo box's arrows grow with the text beside them
    return "\n".join(re.sub(r"\b(width|height):\s*(\d+)px", lambda m: f"{m.group(1)}: {px(int(m.group(2)))}px", line)
                     if _GROWS.search(line.split("{", 1)[0]) else line for line in text.splitlines())


def apply_theme(app: QApplication, theme: str) -> None:
    """Switch the whole application to ``theme`` ("dark" or "light")."""
    global _current
    _current = theme if theme in THEMES else "dark"
    if app.style().name().lower() != "fusion":  # re-creating the style costs ~0.1 s
        app.setStyle("Fusion")
    app.setPalette(_palette(colors()))
    app.setStyleSheet(stylesheet(_current))
    _icon.cache_clear()


def icon(name: str, color: str | None = None) -> QIcon:
    """A line icon from ``resources/icons/<name>.svg`` tinted for the current theme."""
    return _icon(name, color or colors().text, _current)


@lru_cache(maxsize=256)
def _icon(name: str, color: str, _theme: str) -> QIcon:
    from PySide6.QtSvg import QSvgRenderer  # only needed once icons are drawn

    path = RESOURCES / "icons" / f"{name}.svg"
    try:
        svg = path.read_text(encoding="utf-8").replace("currentColor", color)
    except OSError:
        return QIcon()
    renderer = QSvgRenderer(QByteArray(svg.encode()))
    result = QIcon()
    app = QGuiApplication.instance()
    ratio = app.devicePixelRatio() if isinstance(app, QGuiApplication) else 1.0
    for size in (16, 20, 24, 32, 48):
        pm = QPixmap(int(size * ratio), int(size * ratio))
        pm.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pm)
        renderer.render(painter, QRectF(0, 0, pm.width(), pm.height()))
        painter.end()
        pm.setDevicePixelRatio(ratio)
        result.addPixmap(pm)
    return result


def app_icon() -> QIcon:
    path = RESOURCES / "icons" / "revstudio.svg"
    return QIcon(str(path)) if path.exists() else QIcon()
