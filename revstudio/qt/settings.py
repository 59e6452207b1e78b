"""Preferences that outlive a session: theme, window layout, recent files.

Everything lives in one ``QSettings`` (INI format, organisation "revstudio")
so tests can redirect it with ``QSettings.setPath`` to a temporary folder.
"""
from __future__ import annotations

import os
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

ORGANISATION = "revstudio"
APPLICATION = "revstudio"
MAX_RECENT = 10


class Settings:
    """Typed access to the persisted preferences."""

    def __init__(self) -> None:
        self._s = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANISATION, APPLICATION)

    def file_name(self) -> str:
        return self._s.fileName()

    def sync(self) -> None:
        self._s.sync()

    def _whole_number(self, key: str, default: int, low: int, high: int) -> int:
        """The whole number stored under ``key``, brought into ``low..high``; ``default`` where none or
        an unreadable one is stored."""
        try:
            value = int(str(self._s.value(key, default)))
        except (TypeError, ValueError):
            return default
        return min(max(value, low), high)

    # ---- appearance ---------------------------------------------------
    @property
    def theme(self) -> str:
        value = self._s.value("appearance/theme", "dark")
        return value if value in ("dark", "light") else "dark"

    @theme.setter
    def theme(self, value: str) -> None:
        self._s.setValue("appearance/theme", value)

    @property
    def overview(self) -> bool:
        """View > Overview: the canvas's map, shown while the graph does not fit (on by default)."""
        return str(self._s.value("appearance/overview", "true")).lower() != "false"

    @overview.setter
    def overview(self, value: bool) -> None:
        self._s.setValue("appearance/overview", "true" if value else "false")

    @property
    def text_scale(self) -> int:
        """Preferences > Text size: the application's text in % of the system's font (100 to 200)."""
        return self._whole_number("appearance/text_scale", 100, 100, 200)

    @text_scale.setter
    def text_scale(self, value: int) -> None:
        self._s.setValue("appearance/text_scale", int(value))

    # ---- behaviour ------------------------------------------------------
    @property
    def autosave_seconds(self) -> int:
        return self._whole_number("files/autosave_seconds", 10, 5, 3600)

    @autosave_seconds.setter
    def autosave_seconds(self, value: int) -> None:
        self._s.setValue("files/autosave_seconds", int(value))

    @property
    def reopen_last(self) -> bool:
        return str(self._s.value("files/reopen_last", "false")).lower() == "true"

    @reopen_last.setter
    def reopen_last(self, value: bool) -> None:
        self._s.setValue("files/reopen_last", "true" if value else "false")

    # ---- window layout ------------------------------------------------
    def save_layout(self, geometry: QByteArray, state: QByteArray) -> None:
        self._s.setValue("window/geometry", geometry)
        self._s.setValue("window/state", state)

    def layout(self) -> tuple[QByteArray | None, QByteArray | None]:
        geo = self._s.value("window/geometry")
        state = self._s.value("window/state")
        return (geo if isinstance(geo, QByteArray) else None, state if isinstance(state, QByteArray) else None)

    # ---- recent files -------------------------------------------------
    def recent_files(self) -> list[str]:
        value: Any = self._s.value("files/recent", [])
        if isinstance(value, str):  # QSettings returns a lone entry as a plain string
            value = [value]
        return [str(v) for v in (value or []) if v]

    def add_recent(self, path: str) -> list[str]:
        path = os.path.abspath(path)
        recent = [p for p in self.recent_files() if p != path]
        recent.insert(0, path)
        del recent[MAX_RECENT:]
        self._s.setValue("files/recent", recent)
        return recent

    def remove_recent(self, path: str) -> list[str]:
        recent = [p for p in self.recent_files() if p != os.path.abspath(path)]
        self._s.setValue("files/recent", recent)
        return recent

    def clear_recent(self) -> None:
        self._s.setValue("files/recent", [])

    def last_dir(self) -> str:
        return str(self._s.value("files/last_dir", os.path.expanduser("~")))

    def set_last_dir(self, path: str) -> None:
        self._s.setValue("files/last_dir", os.path.dirname(os.path.abspath(path)))

    # ---- runs tab -----------------------------------------------------
    def runs_sort(self) -> tuple[str, bool]:
        """The Runs table's sort: a column's name and whether it is descending (newest run first)."""
        column = str(self._s.value("runs/sort_column", "started"))
        return column, str(self._s.value("runs/sort_descending", "true")).lower() == "true"

    def set_runs_sort(self, column: str, descending: bool) -> None:
        self._s.setValue("runs/sort_column", column)
        self._s.setValue("runs/sort_descending", "true" if descending else "false")

    # ---- plots tab ----------------------------------------------------
    def plots_smoothing(self, default: float) -> float:
        """The Plots tab's smoothing weight (0 = raw curves, up to 0.999), as last set."""
        try:
            value = float(str(self._s.value("plots/smoothing", default)))
        except (TypeError, ValueError):
            return default
        return min(max(value, 0.0), 0.999) if value == value else default  # (NaN: the default)

    def set_plots_smoothing(self, value: float) -> None:
        self._s.setValue("plots/smoothing", f"{float(value):.3f}")

    def plots_axis(self, default: str) -> str:
        """The Plots tab's x axis: ``step``, ``epoch`` or ``time``."""
        value = str(self._s.value("plots/x_axis", default))
        return value if value in ("step", "epoch", "time") else default

    def set_plots_axis(self, value: str) -> None:
        self._s.setValue("plots/x_axis", value)

    def plot_log_y(self, plot: str, default: bool) -> bool:
        """Whether the plot named ``plot`` (its object name, ``plot_loss``) has a log y axis."""
        value = str(self._s.value(f"plots/log_y/{plot}", "true" if default else "false")).lower()
        return value == "true" if value in ("true", "false") else default

    def set_plot_log_y(self, plot: str, on: bool) -> None:
        self._s.setValue(f"plots/log_y/{plot}", "true" if on else "false")

    # ---- runs tab: Sample… ------------------------------------------------
    def run_sample(self) -> tuple[int, float, int, str]:
        """Sample…'s last count, temperature, seed and output folder ("" where none was chosen yet)."""
        try:
            temperature = float(str(self._s.value("runs/sample_temperature", 1.0)))
        except (TypeError, ValueError):
            temperature = 1.0
        temperature = temperature if 0.01 <= temperature <= 10.0 else 1.0  # (NaN too: the default)
        return (self._whole_number("runs/sample_count", 16, 1, 100_000), temperature,
                self._whole_number("runs/sample_seed", 0, 0, 2 ** 31 - 1), str(self._s.value("runs/sample_folder", "")))

    def set_run_sample(self, count: int, temperature: float, seed: int, folder: str) -> None:
        self._s.setValue("runs/sample_count", int(count))
        self._s.setValue("runs/sample_temperature", f"{float(temperature):g}")
        self._s.setValue("runs/sample_seed", int(seed))
        self._s.setValue("runs/sample_folder", folder)
