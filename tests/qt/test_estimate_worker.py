"""The memory estimate after an edit is made on a worker thread from a copy of the graph.

The UI thread checks the edit (shapes, problems, regions), paints it, copies the graph and starts
an ``EstimateJob``; the job's result is applied only while no edit came since. A ``Gate`` holds
the job inside its peak walk so each test decides what happens meanwhile; nothing here is timed.
"""
from __future__ import annotations

import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import revstudio.diagnostics.estimate as estimate_module
from revstudio.core.commands import SetTraining
from revstudio.core.generate import revnet_chain
from revstudio.core.project import dumps, loads
from revstudio.diagnostics.check import full_check
from revstudio.qt import estimate_worker
from revstudio.qt.document import Document


class Gate:
    """Holds every peak walk made off the main thread until ``release`` is set."""

    def __init__(self) -> None:
        self.entered = threading.Event()  # a worker is inside its walk
        self.release = threading.Event()
        self.threads: list[str] = []  # the thread of each walk, in order

    def reset(self) -> None:
        self.entered.clear()
        self.release.clear()


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    held = Gate()
    real = estimate_module._peaks

    def walk(*args: Any, **kwargs: Any) -> Any:
        held.threads.append(threading.current_thread().name)
        if threading.current_thread() is not threading.main_thread():
            held.entered.set()
            held.release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(estimate_module, "_peaks", walk)
    yield held
    held.release.set()  # (a test that failed half-way leaves no thread waiting)


def _fresh(doc: Document) -> Any:
    """The synchronous full check of a copy of the document's graph, made from nothing."""
    return full_check(loads(dumps(doc.graph)))


def _set_batch(doc: Document, batch: int) -> None:
    doc.push(SetTraining(doc.graph, {**doc.graph.training, "batch_size": batch}))
    doc.break_merge()


def _shown_batches(doc: Document) -> list[int | None]:
    """The batch of the figures each estimateChanged announces, from now on."""
    shown: list[int | None] = []
    doc.estimateChanged.connect(lambda: shown.append(getattr(doc.report.estimate, "batch", None)))
    return shown


def test_the_estimate_is_made_off_the_ui_thread_and_equals_the_synchronous_one(qtbot: Any, gate: Gate) -> None:
    doc = Document(revnet_chain(3, channels=4, size=8))
    gate.release.set()
    gate.threads.clear()
    _set_batch(doc, 12)
    with qtbot.waitSignal(doc.estimateChanged, timeout=10_000):
        pass
    assert gate.threads == ["revstudio-estimate"]  # one walk, on the worker
    report, fresh = doc.report, _fresh(doc)
    assert not doc.estimate_pending and report.estimate.walked and report.estimate.batch == 12
    assert report.estimate.to_json() == fresh.estimate.to_json()
    for mode in ("standard", "reversible", "checkpoint"):
        assert report.estimate.peak_bytes(mode) == fresh.estimate.peak_bytes(mode)
    assert sorted(report.estimate.facts) == sorted(fresh.estimate.facts)
    assert [d.message for d in report.diagnostics] == [d.message for d in fresh.diagnostics]


def test_a_result_made_for_a_state_an_edit_replaced_is_never_shown(qtbot: Any, gate: Gate) -> None:
    doc = Document(revnet_chain(3, channels=4, size=8))
    shown = _shown_batches(doc)
    _set_batch(doc, 12)
    qtbot.waitUntil(gate.entered.is_set, timeout=10_000)  # 12's estimate is being made
    first = doc._job
    _set_batch(doc, 24)
    qtbot.waitUntil(lambda: doc._job is not None and doc._job is not first, timeout=10_000)  # 24's job waits
    assert first.cancelled() and doc.report.estimate is None
    gate.release.set()  # 12's job finishes its walk now, its result of a state that is gone
    qtbot.waitUntil(lambda: shown != [], timeout=10_000)
    qtbot.wait(50)  # (any late announcement of 12's figures would come in these turns)
    assert shown == [24] and doc.report.estimate.batch == 24
    assert doc.report.estimate.to_json() == _fresh(doc).estimate.to_json()


def test_current_report_waits_for_the_job_under_way(qtbot: Any, gate: Gate) -> None:
    doc = Document(revnet_chain(3, channels=4, size=8))
    shown = _shown_batches(doc)
    _set_batch(doc, 12)
    qtbot.waitUntil(gate.entered.is_set, timeout=10_000)
    assert doc.estimate_pending and doc.report.estimate is None
    threading.Timer(0.05, gate.release.set).start()  # the job may finish once the UI thread waits
    report = doc.current_report()  # Train, Export, Measure, a selection, a tooltip
    assert not doc.estimate_pending and report.estimate.walked and report.estimate.batch == 12
    assert report.estimate.to_json() == _fresh(doc).estimate.to_json()
    assert shown == [12]


def test_current_report_after_an_edit_that_lands_while_a_job_runs_is_of_that_edit(qtbot: Any, gate: Gate) -> None:
    doc = Document(revnet_chain(3, channels=4, size=8))
    shown = _shown_batches(doc)
    _set_batch(doc, 12)
    qtbot.waitUntil(gate.entered.is_set, timeout=10_000)
    _set_batch(doc, 24)  # not checked yet: its check's timer is pending
    report = doc.current_report()  # checked and estimated now, on this thread, while 12's job waits
    assert report.estimate.batch == 24 and report.estimate.walked and gate.threads[-1] == "MainThread"
    assert report.estimate.to_json() == _fresh(doc).estimate.to_json()
    gate.release.set()
    qtbot.wait(100)
    assert shown == [24] and doc.report is report and doc.report.estimate.batch == 24


def test_a_failed_estimate_on_the_worker_is_reported_as_before(qtbot: Any, monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    doc = Document(revnet_chain(3, channels=4, size=8))
    threads: list[str] = []

    def broken(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        raise RuntimeError("walk broke")

    monkeypatch.setattr(estimate_module, "_peaks", broken)
    with caplog.at_level(logging.ERROR, logger="revstudio"), qtbot.waitSignal(doc.estimateChanged, timeout=10_000):
        _set_batch(doc, 12)
    assert threads == ["revstudio-estimate"]
    assert doc.analysis_error == "the memory estimate failed: RuntimeError: walk broke"
    assert doc.report.estimate is None and not doc.estimate_pending
    assert any("memory estimate failed" in r.getMessage() and r.exc_info for r in caplog.records)


def test_closing_the_window_while_a_job_runs_is_clean(qtbot: Any, tmp_path: Path, dialogs: Any, gate: Gate,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    from shiboken6 import isValid

    from revstudio.qt.autosave import RecoveryStore
    from revstudio.qt.main_window import MainWindow
    from revstudio.qt.settings import Settings

    doc = Document(revnet_chain(3, channels=4, size=8))
    window = MainWindow(doc, Settings(), dialogs, RecoveryStore(tmp_path / "recovery"))  # (deleted below)
    window.show()
    qtbot.waitUntil(lambda: not doc.estimate_pending, timeout=10_000)
    shown = _shown_batches(doc)
    _set_batch(doc, 12)
    qtbot.waitUntil(gate.entered.is_set, timeout=10_000)
    job = doc._job
    doc.undo_stack.setClean()  # (nothing to ask about on close)
    with caplog.at_level(logging.WARNING):
        assert window.close()
        window.deleteLater()
        doc.deleteLater()  # the document and its timers are gone while the job still runs
        qtbot.waitUntil(lambda: not isValid(doc), timeout=10_000)
        gate.release.set()
        assert job.wait(30) and job.cancelled() and job.result is None
        qtbot.wait(50)  # the turns in which a poll would have applied it
    assert shown == [] and not estimate_worker.busy()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


QUIT_DURING_A_JOB = """
import sys, threading, time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
app = QApplication([])
import revstudio.diagnostics.estimate as estimate_module
from revstudio.core.commands import SetTraining
from revstudio.core.generate import revnet_chain
from revstudio.qt.document import Document
real, inside = estimate_module._peaks, threading.Event()
def slow(*args, **kwargs):
    if threading.current_thread() is not threading.main_thread():
        inside.set()
        time.sleep(600)
    return real(*args, **kwargs)
estimate_module._peaks = slow
doc = Document(revnet_chain(3, channels=4, size=8))
doc.push(SetTraining(doc.graph, {**doc.graph.training, "batch_size": 12}))
def poll(left=4000):
    if inside.is_set() or not left:
        print("quitting with the job under way" if left else "no job started in 20 s", flush=True)
        app.quit()
    else:
        QTimer.singleShot(5, lambda: poll(left - 1))
poll()
app.exec()
"""


def test_quitting_the_app_while_a_job_runs_neither_hangs_nor_crashes(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {"QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(root), "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", QUIT_DURING_A_JOB], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "quitting with the job under way"
    assert "Traceback" not in proc.stderr


def test_the_job_reads_its_copy_of_the_graph_not_the_live_one(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = Document(revnet_chain(3, channels=4, size=8))
    entered, release = threading.Event(), threading.Event()
    real = estimate_module._estimate

    def held(*args: Any, **kwargs: Any) -> Any:  # the job holds its copy and has read nothing yet
        if threading.current_thread() is not threading.main_thread():
            entered.set()
            release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(estimate_module, "_estimate", held)
    _set_batch(doc, 12)
    qtbot.waitUntil(entered.is_set, timeout=10_000)
    expected = _fresh(doc).estimate.to_json()
    source = next(nid for nid, node in doc.graph.nodes.items() if node.type == "Input")
    doc.graph.nodes[source].params["dtype"] = "float64"  # behind the document's back: no event, no check
    assert _fresh(doc).estimate.to_json() != expected  # (what the live graph would give)
    with qtbot.waitSignal(doc.estimateChanged, timeout=10_000):
        release.set()
    assert doc.report.estimate.to_json() == expected
