"""An axis for bytes in binary units (KiB, MiB, GiB), as every other memory figure in the app.

pyqtgraph's automatic SI prefix is decimal: a peak axis read "MB" while the lines on it were
labelled in MiB (1.6 MiB drawn at 1.71 on the axis). This axis picks the binary unit that
suits its range and places its ticks at round values of that unit.
"""
from __future__ import annotations

from revstudio.qt.plots.log_axis import LogAxis

UNITS = ((1 << 40, "Ti"), (1 << 30, "Gi"), (1 << 20, "Mi"), (1 << 10, "Ki"))


def binary_unit(largest: float) -> tuple[int, str]:
    """(bytes per unit, prefix) to show values up to ``largest`` bytes: the largest unit under it."""
    for size, prefix in UNITS:
        if abs(largest) >= size:
            return size, prefix
    return 1, ""


class BytesAxis(LogAxis):
    """A value axis in bytes whose label reads e.g. ``peak (MiB)``; set its label with
    ``units="B"`` as usual."""

    def __init__(self, orientation: str = "left", **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(orientation, **kwargs)
        self.enableAutoSIPrefix(True)  # (so pyqtgraph asks updateAutoSIPrefix when the range moves)

    def updateAutoSIPrefix(self) -> None:  # noqa: N802 (pyqtgraph's name)
        if self.logMode:  # decades of bytes: ticks at powers of ten, in bytes
            size, prefix = 1, ""
        else:
            size, prefix = binary_unit(max(abs(self.range[0]), abs(self.range[1])))
        self.scale = 1.0 / size  # ticks at round numbers of the unit, labelled in it
        self.autoSIPrefixScale = 1.0
        self.labelUnitPrefix = prefix
        self._updateLabel()
