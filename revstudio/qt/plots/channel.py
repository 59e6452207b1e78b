"""Which series of a run a plot draws, and how its legend names each curve."""
from __future__ import annotations

from dataclasses import dataclass

from revstudio.qt.plots.rows import RunData


@dataclass
class Channel:
    """Which series of a run a plot draws: a fixed name, or all names under a prefix (per region)."""

    key: str
    label: str
    dashed: bool = False
    prefix: bool = False
    short: str = ""  # the label before each name where a run has several (a legend has a third of a window),
    # and the word for the channel's line style in an overlaid legend's key (legend_keys.py)

    def names(self, run: RunData) -> list[str]:
        if self.prefix:
            return sorted(n for n in run.series if n.startswith(self.key))
        return [self.key] if self.key in run.series else []

    def title(self, name: str, several: bool = True) -> str:
        """The curve's legend entry: with one name under the prefix (one region) the label alone."""
        if not self.prefix or not several:
            return self.label
        return f"{self.short or self.label} {name[len(self.key):].removeprefix('region-')}"
