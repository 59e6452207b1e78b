"""The Run Settings fields whose content a child process answers: the device list and the data preview.

Both need torch (which devices it sees, what a data file holds) and the editor
never imports it, so each asks a :class:`ChildQuery` and fills itself in when the
answer arrives; ``stop()`` kills a question still running when the dialog closes.
"""
from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QComboBox

from revstudio.qt import theme
from revstudio.qt.document import Document
from revstudio.qt.training import section as sec
from revstudio.qt.training.child_query import ChildQuery
from revstudio.qt.wrap_label import WrapLabel

PROBE = "revstudio.qt.training.probe"
AUTO_TIP = ("auto: the first CUDA device when torch sees one, else the CPU; or type any device torch names "
            "(cuda:1, mps, xpu), as revstudio train --device takes it")
_devices_seen: list[dict[str, str]] = []  # what torch saw, once per editor session (a child costs seconds)


class DeviceBox(QComboBox):
    """An editable list of ``auto`` and the devices torch sees; ``value()`` is the section's ``device``."""

    def __init__(self) -> None:
        super().__init__()
        self.setEditable(True)
        self.setToolTip(AUTO_TIP)
        self.queries: list[ChildQuery] = []

    def fill(self, current: str) -> None:
        self.blockSignals(True)
        self.clear()
        self.addItem("auto", "auto")
        seen = _devices_seen or [{"id": "cpu", "name": "CPU"}]
        for d in seen:
            self.addItem(f"{d['id']} — {d['name']}", d["id"])
        i = self.findData(current)
        if i < 0:
            self.addItem(current, current)
            i = self.count() - 1
        self.setCurrentIndex(i)
        self.blockSignals(False)

    def value(self) -> str:
        text = self.currentText().strip()
        data = self.currentData()
        return str(data) if data is not None and self.itemText(self.currentIndex()) == text \
            else text.split(" ", 1)[0]

    def detect(self) -> None:
        if _devices_seen:
            return
        self.setToolTip("Asking torch which devices it sees …")
        query = ChildQuery(PROBE, ["devices"], parent=self)
        query.answered.connect(self._answered)
        self.queries.append(query.start())

    def _answered(self, answer: dict[str, Any]) -> None:
        if isinstance(answer.get("devices"), list):
            _devices_seen[:] = [d for d in answer["devices"] if isinstance(d, dict) and "id" in d]
            self.fill(self.value())
            self.setToolTip(f"{AUTO_TIP}. Torch sees: " + ", ".join(d["id"] for d in _devices_seen))
        else:
            self.setToolTip(f"Could not ask torch for its devices: {answer.get('error')}")

    def stop(self) -> None:
        for query in self.queries:
            query.kill()


class DataPreview(WrapLabel):
    """What the chosen data holds (samples, shapes, classes) and whether it fits the graph's inputs.

    ``current_spec()`` is the data the form names now (an older question's answer is
    dropped); ``scaled()`` whether uint8 inputs are scaled, which ``show_answer``
    words without asking again.
    """

    def __init__(self, document: Document, current_spec: Callable[[], str], scaled: Callable[[], bool]) -> None:
        super().__init__("")
        self.setObjectName("dataPreview")
        self.document = document
        self._current_spec = current_spec
        self._scaled = scaled
        self.answer: dict[str, Any] | None = None  # the last answer (peek_data) for the current spec
        self.queries: list[ChildQuery] = []
        self.listeners: list[Callable[[], None]] = []  # told when the answer changes (the task hint reads it)

    def request(self, path_given: bool) -> None:
        self.answer = None  # (the box's toggle redraws the preview of this spec's answer only)
        self._tell()
        spec = self._current_spec()
        if spec == "synthetic":
            self.setText("Synthetic data: a learnable task shaped like this graph's inputs and outputs.")
            return
        if not path_given:
            self.setText("Choose a file or folder.")
            return
        self.setText(f"Reading {spec} …")
        base = str(Path(self.document.path).resolve().parent) if self.document.path else ""
        query = ChildQuery(PROBE, ["peek", spec, base, json.dumps(self._input_shapes())], parent=self)
        query.answered.connect(lambda answer, s=spec: self._answered(s, answer))
        self.queries.append(query.start())

    def _input_shapes(self) -> dict[str, list[int]]:
        """The Input nodes' shapes as the check infers them ({} while any is unknown): the preview
        says whether the data fit them before Train is pressed."""
        report = self.document.current_report()
        found = {nid: report.shape(f"{nid}.out") for nid in report.nodes if report.nodes[nid].type == "Input"}
        if any(shape is None for shape in found.values()):
            return {}
        return {nid: [int(s) for s in shape] for nid, shape in found.items() if shape is not None}

    def _answered(self, spec: str, answer: dict[str, Any]) -> None:
        if spec != self._current_spec():
            return  # an older question
        if answer.get("error"):
            self.setText(f"<span style='color:{theme.colors().error}'>{answer['error']}</span>")
            return
        self.answer = answer
        self.show_answer()
        self._tell()

    def _tell(self) -> None:
        for listener in self.listeners:
            listener()

    def show_answer(self, *_args: object) -> None:
        answer = self.answer
        if answer is None or answer.get("error"):
            return
        report = self.document.current_report()
        inputs = [nid for nid in report.nodes if report.nodes[nid].type == "Input"]
        text = sec.preview_text(answer, self._scaled(), inputs)
        if answer.get("problem"):
            problem = html.escape(answer["problem"], quote=False)
            text = f"{html.escape(text, quote=False)}<br><span style='color:{theme.colors().error}'>{problem}</span>"
        self.setText(text)

    def stop(self) -> None:
        for query in self.queries:
            query.kill()
