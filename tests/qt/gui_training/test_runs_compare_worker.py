"""Selecting several runs answers at once: their comparison (settings, environment, loss rows) is made on
a worker thread, "comparing…" shown meanwhile; a comparison for a selection since changed is dropped.

Ten 200,000-row runs selected one by one held the window for 39 s: every selection change read every
selected run's whole metrics.jsonl on the UI thread (benchmarks/README.md, "Long runs and hundreds of runs")."""
from __future__ import annotations

import json
import threading
from pathlib import Path

from revstudio.qt.runs.compare_worker import COMPARING
from revstudio.qt.runs.panel import RunsPanel
from revstudio.training import loss_rows, run_compare


def _run(root: Path, name: str, lr: float, losses: list[float]) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "status.json").write_text(json.dumps({"status": "finished", "step": len(losses), "metrics":
                                                  {"loss": losses[-1]}, "started": "2026-12-06T14:00:00"}))
    (path / "config.json").write_text(json.dumps({"lr": lr, "steps": len(losses)}))
    (path / "metrics.jsonl").write_text("".join(json.dumps({"kind": "step", "step": s, "loss": v}) + "\n"
                                                for s, v in enumerate(losses, 1)))
    return path


def _spy(monkeypatch, gate: threading.Event | None = None) -> list[tuple[int, str]]:
    """Record which thread reads each run file the comparison reads (its rows and its JSON files);
    with ``gate``, reading the rows waits for it (a comparison caught under way)."""
    seen: list[tuple[int, str]] = []
    rows, read_json = loss_rows.read_rows, run_compare.read_json

    def read_rows(path, limit):
        seen.append((threading.get_ident(), str(path)))
        if gate is not None:
            assert gate.wait(20)
        return rows(path, limit)

    def read(path, *a, **k):
        seen.append((threading.get_ident(), str(path)))
        return read_json(path, *a, **k)

    monkeypatch.setattr(loss_rows, "read_rows", read_rows)
    monkeypatch.setattr(run_compare, "read_json", read)
    return seen


def _panel(qtbot, tmp_path: Path) -> RunsPanel:
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path, "coupling")
    return panel


def test_the_selection_answers_at_once_and_the_files_are_read_off_the_ui_thread(qtbot, tmp_path, monkeypatch):
    a = _run(tmp_path, "coupling-20261206-140000", 0.01, [2.0, 1.5, 1.0])
    b = _run(tmp_path, "coupling-20261206-141500", 0.02, [2.0, 1.4, 0.9])
    panel = _panel(qtbot, tmp_path)
    gate = threading.Event()
    seen = _spy(monkeypatch, gate)
    panel.select_paths([a, b])  # returns while the worker waits on the first run's rows
    text = panel.detail.toPlainText()
    assert text.startswith("2 runs selected") and "lowest loss: coupling-20261206-141500 (0.9)" in text
    assert text.endswith(COMPARING) and panel.comparer.busy()
    gate.set()
    qtbot.waitUntil(lambda: not panel.comparer.busy(), timeout=20_000)
    text = panel.detail.toPlainText()
    assert COMPARING not in text and "lr:" in text and "part from" in text, text
    ui = threading.get_ident()
    assert {p for _t, p in seen} >= {str(a / "metrics.jsonl"), str(b / "metrics.jsonl")}
    assert all(t != ui for t, _p in seen), seen  # no run file read on the UI thread


def test_a_comparison_for_a_selection_since_changed_is_dropped(qtbot, tmp_path, monkeypatch):
    a = _run(tmp_path, "coupling-20261206-140000", 0.01, [2.0, 1.5])
    b = _run(tmp_path, "coupling-20261206-141500", 0.02, [2.0, 1.4])
    c = _run(tmp_path, "coupling-20261206-143000", 0.03, [2.0, 1.5])
    panel = _panel(qtbot, tmp_path)
    gate = threading.Event()
    _spy(monkeypatch, gate)
    shown: list[str] = []
    panel.comparer.ready.connect(shown.append)
    panel.select_paths([a, b])
    first = panel.comparer.job
    panel.select_paths([a, c])  # changed while [a, b] was still being compared
    gate.set()
    qtbot.waitUntil(lambda: not panel.comparer.busy() and first.done(), timeout=20_000)
    assert first.text is None or "coupling-20261206-141500" in first.text  # (made, or skipped: never shown)
    assert len(shown) == 1 and "coupling-20261206-141500" not in shown[0], shown
    text = panel.detail.toPlainText()
    assert text == shown[0] and "coupling-20261206-143000" in text and "identical (2 rows)" in text, text
    # a single run picked while several are compared: its own detail stays
    gate.clear()
    panel.select_paths([b, c])
    panel.select_paths([a])
    gate.set()
    qtbot.wait(200)
    assert panel.detail.toPlainText().startswith("coupling-20261206-140000: finished") and len(shown) == 1


def test_a_running_runs_refresh_keeps_the_comparison_shown_while_it_is_remade(qtbot, tmp_path):
    a = _run(tmp_path, "coupling-20261206-140000", 0.01, [2.0, 1.5])
    b = _run(tmp_path, "coupling-20261206-141500", 0.02, [2.0, 1.5])
    panel = _panel(qtbot, tmp_path)
    panel.select_paths([a, b])
    qtbot.waitUntil(lambda: not panel.comparer.busy(), timeout=20_000)
    assert "identical (2 rows)" in panel.detail.toPlainText()
    with (b / "metrics.jsonl").open("a") as handle:  # b goes on (a resumed run's rows)
        handle.write(json.dumps({"kind": "step", "step": 3, "loss": 1.2}) + "\n")
    panel.reload()  # (what a running run's refresh does): no "comparing…" flash over the same runs
    assert "identical (2 rows)" in panel.detail.toPlainText() and COMPARING not in panel.detail.toPlainText()
    qtbot.waitUntil(lambda: not panel.comparer.busy(), timeout=20_000)
    assert "1 step only in one of them" in panel.detail.toPlainText(), panel.detail.toPlainText()
