"""Writing a plot out: its picture as PNG, its curves as a CSV table (the plot's Save menu).

The CSV holds every point of every curve (raw and smoothed), not what the pixels show, so a value
the plot painted can be read exactly; a missing value (NaN, inf) is an empty cell.
"""
from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from revstudio.qt.plots.channel import Channel
from revstudio.qt.plots.rows import RunData

CSV_HEADER = ["run", "series", "step", "epoch", "time", "value", "smoothed"]


def export_png(plot: Any, path: str) -> None:
    """``plot`` (a pyqtgraph PlotWidget) as a PNG at least 600 px wide."""
    from pyqtgraph.exporters import ImageExporter

    exporter = ImageExporter(plot.getPlotItem())
    exporter.parameters()["width"] = max(600, int(plot.width()))
    exporter.export(path)


def export_csv(path: str, runs: Sequence[tuple[RunData, str]], channels: Sequence[Channel]) -> int:
    """Every curve of ``channels`` in ``runs`` as rows ``run, series, step, epoch, time, value,
    smoothed``; returns how many rows were written."""
    count = 0
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_HEADER)
        for run, _colour in runs:
            for channel in channels:
                for name in channel.names(run):
                    s = run.series[name]
                    cols = [s.column(c) for c in ("step", "epoch", "time", "value", "smooth")]
                    for row in np.column_stack(cols):
                        writer.writerow([run.name, name, *(_csv(v) for v in row)])
                        count += 1
    return count


def _csv(v: float) -> str:
    return "" if not math.isfinite(v) else repr(float(v))
