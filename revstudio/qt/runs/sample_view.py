"""The samples Sample… wrote, shown: a grid of pictures for image-shaped samples (N x C x H x W, C 1 or 3),
a scatter for 2-D points (N x 2), else the file's path and its arrays' shapes.

The ``.npz`` is read here with numpy (no torch in the editor). Pictures are drawn in the scale the flow was
trained on: values within about [0, 1] (8-bit images dequantised to ``(k + u) / 256``) map 0 to black and 1
to white, others are stretched from the shown samples' lowest to their highest value.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPaintEvent
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from revstudio.qt import theme

MAX_PICTURES = 64


def sample_kind(shape: tuple[int, ...]) -> str:
    """``images`` (N x C x H x W, C 1 or 3), ``points`` (N x 2) or ``other``."""
    if len(shape) == 4 and shape[1] in (1, 3) and shape[2] > 1 and shape[3] > 1:
        return "images"
    if len(shape) == 2 and shape[1] == 2:
        return "points"
    return "other"


def to_bytes(x: np.ndarray) -> np.ndarray:
    """``x`` (N x C x H x W, real) as 8-bit N x H x W x C: [0, 1] where the values lie about there, else
    stretched from their lowest to their highest; non-finite values black."""
    x = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 1.0)
    if lo >= -0.1 and hi <= 1.1:
        lo, hi = 0.0, 1.0
    scaled = np.clip((x - lo) / ((hi - lo) or 1.0), 0.0, 1.0) * 255.0
    return np.ascontiguousarray(np.round(scaled).astype(np.uint8).transpose(0, 2, 3, 1))


class SampleGrid(QWidget):
    """Up to 64 pictures in a square-ish grid, each scaled up by whole pixels (no blur), on the window's
    colour with a border in the theme's."""

    GAP = 4

    def __init__(self, pictures: np.ndarray, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sampleGrid")
        self.setAccessibleName("Sample pictures")
        self.pixels = to_bytes(pictures[:MAX_PICTURES])
        n = len(self.pixels)
        self.columns = max(1, int(np.ceil(np.sqrt(n))))
        self.rows = max(1, -(-n // self.columns))
        self.images = [self._image(p) for p in self.pixels]
        self.setAccessibleDescription(f"{n} samples, {self.pixels.shape[1]} x {self.pixels.shape[2]} pixels each")
        self.setMinimumSize(self._size(1))

    def _image(self, pixels: np.ndarray) -> QImage:
        h, w, c = pixels.shape
        if c == 1:
            data = np.ascontiguousarray(pixels[:, :, 0])
            image = QImage(data.data, w, h, w, QImage.Format.Format_Grayscale8)
        else:
            data = np.ascontiguousarray(pixels)
            image = QImage(data.data, w, h, 3 * w, QImage.Format.Format_RGB888)
        return image.copy()  # (its own bytes: the array may go)

    def _size(self, zoom: int) -> QSize:
        h, w = (self.pixels.shape[1], self.pixels.shape[2]) if len(self.pixels) else (1, 1)
        return QSize(self.columns * (w * zoom + self.GAP) + self.GAP, self.rows * (h * zoom + self.GAP) + self.GAP)

    def sizeHint(self) -> QSize:
        h = self.pixels.shape[1] if len(self.pixels) else 1
        return self._size(max(1, min(8, 96 // max(1, h))))

    def zoom(self) -> int:
        """The whole-pixel scale that fits the widget."""
        h, w = (self.pixels.shape[1], self.pixels.shape[2]) if len(self.pixels) else (1, 1)
        across = (self.width() - self.GAP * (self.columns + 1)) // max(1, self.columns * w)
        down = (self.height() - self.GAP * (self.rows + 1)) // max(1, self.rows * h)
        return max(1, min(across, down))

    def paintEvent(self, event: QPaintEvent) -> None:
        c = theme.colors()
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(c.window))
        p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
        zoom = self.zoom()
        left = max(0, (self.width() - self._size(zoom).width()) // 2)  # (centred in a wider window)
        for k, image in enumerate(self.images):
            row, col = divmod(k, self.columns)
            rect = QRect(left + self.GAP + col * (image.width() * zoom + self.GAP),
                         self.GAP + row * (image.height() * zoom + self.GAP), image.width() * zoom,
                         image.height() * zoom)
            p.drawImage(rect, image)
            p.setPen(QColor(c.border))
            p.drawRect(rect.adjusted(-1, -1, 0, 0))
        p.end()


def _scatter(points: np.ndarray) -> QWidget:
    import pyqtgraph as pg

    from revstudio.qt.plots.plot_theme import style
    from revstudio.qt.plots.plot_widget import PlotWidget

    plot = PlotWidget()
    plot.setObjectName("sampleScatter")
    plot.setAccessibleName("Samples scatter")
    plot.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
    finite = points[np.isfinite(points).all(axis=1)]
    colour = pg.mkColor(theme.colors().accent)
    colour.setAlpha(170)
    plot.addItem(pg.ScatterPlotItem(finite[:, 0], finite[:, 1], size=5, pen=None, brush=pg.mkBrush(colour)))
    plot.setLabel("bottom", "x[0]")
    plot.setLabel("left", "x[1]")
    plot.setAccessibleDescription(f"{len(finite)} samples as points")
    style(plot)
    return plot


class SamplesView(QDialog):
    """The samples in ``path`` (a ``.npz`` Sample… wrote) of ``run_dir``; ``kind`` says how they are shown
    and ``shown`` says it in words (the Log's)."""

    def __init__(self, run_dir: Path, path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setObjectName("samplesView")
        self.setWindowTitle(f"Samples of {Path(run_dir).name}")
        self.setAccessibleName(f"Samples of {Path(run_dir).name}")
        self.path = Path(path)
        self.body: QWidget | None = None
        arrays, problem = self._read()
        shapes = problem or ", ".join(f"{k} {'x'.join(map(str, a.shape))}" for k, a in arrays.items())
        single = next(iter(arrays.values())) if len(arrays) == 1 else None
        self.kind = sample_kind(tuple(single.shape)) if single is not None else "other"
        if self.kind == "images" and single is not None:
            self.body = SampleGrid(single)
            self.shown = f"the first {len(self.body.images)} of {len(single)} shown as pictures"
        elif self.kind == "points" and single is not None:
            self.body = _scatter(single)
            self.shown = f"{len(single)} shown as points"
        else:
            self.shown = "not pictures or 2-D points: the file holds them" if arrays else "nothing shown"
        self.header = QLabel(f"{self.path}: {shapes or 'no arrays'} (N first); {self.shown}")
        self.header.setObjectName("samplesHeader")
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                            | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.header.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.header.setAccessibleName("Samples file")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        self.close_button = buttons.button(QDialogButtonBox.StandardButton.Close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        if self.body is not None:
            layout.addWidget(self.body, 1)
        layout.addWidget(buttons)
        self.close_button.setFocus()
        self.resize(QSize(720, 640) if self.body is not None else QSize(560, 160))

    def _read(self) -> tuple[dict[str, Any], str]:
        """The file's arrays, or why they cannot be read (gone or changed since the command wrote it)."""
        try:
            with np.load(self.path, allow_pickle=False) as held:
                return {k: held[k] for k in held.files}, ""
        except (OSError, ValueError) as exc:
            return {}, f"cannot read it ({exc})"
