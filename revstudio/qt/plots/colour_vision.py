"""Whether two curve colours stay apart for a reader with red-green colour blindness.

About one man in twelve sees red and green alike (deuteranopia, protanopia and their milder forms).
Two runs overlaid in green and red (the palette's third and fourth colours) were the same brown to a
deuteranope: 2.6 CIE76 units apart, where 20 and more read as two colours on a thin line. This models
what such a reader sees (Machado, Oliveira and Fernandes 2009, full severity, in linear sRGB) and
measures the difference in CIELAB, so a run's colour is picked apart from those already shown.
"""
from __future__ import annotations

import math
from functools import lru_cache

APART = 20.0  # CIE76 units between two colours, as each kind of reader sees them: at least this
# linear-sRGB matrices of Machado et al. (2009) at severity 1
_DEUTAN = ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881))
_PROTAN = ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.109216), (-0.003882, -0.048116, 1.051998))
VISIONS = {"typical": None, "deuteranopia": _DEUTAN, "protanopia": _PROTAN}
Rgb = tuple[float, float, float]


def _linear(hex_colour: str) -> Rgb:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))
    return _channel(r), _channel(g), _channel(b)


def _channel(v: float) -> float:
    return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4


def seen(hex_colour: str, vision: str) -> Rgb:
    """The colour, in linear sRGB, as a reader with ``vision`` (a key of VISIONS) sees it."""
    c = _linear(hex_colour)
    matrix = VISIONS[vision]
    if matrix is None:
        return c
    r, g, b = (min(1.0, max(0.0, row[0] * c[0] + row[1] * c[1] + row[2] * c[2])) for row in matrix)
    return r, g, b


def relative_luminance(hex_colour: str) -> float:
    """The colour's relative luminance as WCAG weighs it (0 black, 1 white): what contrast ratios are of."""
    r, g, b = _linear(hex_colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _lab(c: Rgb) -> Rgb:
    r, g, b = c
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


@lru_cache(maxsize=512)
def difference(a: str, b: str) -> float:
    """The least CIE76 difference between two ``#rrggbb`` colours over every kind of reader in VISIONS."""
    return min(math.dist(_lab(seen(a, v)), _lab(seen(b, v))) for v in VISIONS)


def apart(a: str, b: str) -> bool:
    return difference(a, b) >= APART
