"""An edit shows at once; its memory figures (the estimate's walked peaks) follow after the paint.

The document checks shapes, diagnostics and regions when an edit lands and walks the estimate's
peaks from the event loop afterwards (``Document.finish_estimate``); a new edit drops a walk not
yet run. These tests drive the two phases by hand: ``recompute()`` is what the edit's timer runs.
"""
from __future__ import annotations

from typing import Any

import pytest

import revstudio.diagnostics.estimate as estimate_module
from revstudio.core.commands import SetParam, SetTraining
from revstudio.core.generate import large_graph, revnet_chain
from revstudio.core.project import dumps, loads
from revstudio.diagnostics.check import full_check
from revstudio.qt.canvas.region_badges import RegionBadges
from revstudio.qt.document import Document
from revstudio.qt.memory_figures import status_text


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per peak walk of any estimate (``estimate_units._peaks`` as the estimate calls it)."""
    calls: list[int] = []
    real = estimate_module._peaks

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(estimate_module, "_peaks", counted)
    return calls


def _fresh(doc: Document) -> Any:
    """The full check of a copy of the document's graph, made from nothing."""
    return full_check(loads(dumps(doc.graph)))


def _conv(doc: Document) -> str:
    return next(nid for nid, node in doc.graph.nodes.items() if node.type == "Conv")


def test_a_burst_of_edits_walks_the_peaks_once(qtbot: Any, walks: list[int]) -> None:
    doc = Document(revnet_chain(3, channels=4, size=8))
    conv = _conv(doc)
    walks.clear()
    for width in (5, 6, 7):  # each edit is checked, then the next lands before the walk has run
        doc.push(SetParam(doc.graph, conv, "out_channels", width))
        doc.break_merge()
        doc.recompute()
    assert walks == []
    assert doc.estimate_pending and doc.report.estimate is None  # made with its peaks after the paint
    with qtbot.waitSignal(doc.estimateChanged, timeout=5_000):
        pass  # the event loop runs the walk of the last state only
    assert len(walks) == 1 and not doc.estimate_pending
    assert doc.report.estimate.to_json() == _fresh(doc).estimate.to_json()


def test_current_report_after_an_edit_has_the_new_estimate(qtbot: Any, walks: list[int]) -> None:
    doc = Document(revnet_chain(3, channels=4, size=8))
    before = doc.report.estimate.peak_bytes("standard")
    doc.push(SetTraining(doc.graph, {**doc.graph.training, "batch_size": 64}))
    doc.recompute()
    assert doc.estimate_pending
    report = doc.current_report()  # Train, Export, Measure: the walk is done on demand
    assert not doc.estimate_pending and report.estimate.walked and report.estimate.batch == 64
    assert report.estimate.peak_bytes("standard") > before
    assert report.estimate.to_json() == _fresh(doc).estimate.to_json()
    # straight after the push too (the check itself still pending)
    doc.push(SetTraining(doc.graph, {**doc.graph.training, "batch_size": 16}))
    assert doc.current_report().estimate.batch == 16 and doc.report.estimate.walked


def test_a_walk_dropped_by_the_next_edit_is_not_remembered(qtbot: Any, walks: list[int]) -> None:
    """An undo back to a state whose walk never ran walks it then (the memo kept nothing of it)."""
    doc = Document(revnet_chain(3, channels=4, size=8))
    conv = _conv(doc)
    doc.push(SetParam(doc.graph, conv, "out_channels", 5))
    doc.recompute()  # state B checked, not walked
    doc.push(SetParam(doc.graph, conv, "kernel_size", 5))
    doc.recompute()  # state C: B's walk is dropped
    doc.undo_stack.undo()  # back to B
    walks.clear()
    report = doc.current_report()
    assert len(walks) == 1 and report.estimate.to_json() == _fresh(doc).estimate.to_json()


def test_the_edit_shows_before_the_walk_and_no_figure_of_the_state_before_passes_as_current(
        qtbot: Any, make_window: Any, walks: list[int]) -> None:
    window = make_window(revnet_chain(3, channels=4, size=8))
    doc, scene = window.document, window.current_view().scene()
    qtbot.waitUntil(lambda: not doc.estimate_pending, timeout=5_000)
    shown_before = window.status_memory.text()
    badges_before = [r.label for r in scene.region_items]
    assert "batch 32" in badges_before[0] and window.status_memory.isEnabled()
    walks.clear()
    doc.push(SetTraining(doc.graph, {**doc.graph.training, "batch_size": 8}))
    doc.recompute()  # phase one: what the edit's paint shows
    assert walks == [] and doc.estimate_pending
    # the figures of the state before stay whole (no line of new kept and old peak figures) ...
    assert window.status_memory.text() == shown_before and [r.label for r in scene.region_items] == badges_before
    doc._on_waiting()  # ... and once the wait is visible (WAITING_MS), they are greyed, not current
    assert not window.status_memory.isEnabled() and not window.inspector.facts.isEnabled()
    assert all(r.waiting and not r.current for r in scene.region_items)
    with qtbot.waitSignal(doc.estimateChanged, timeout=5_000):
        pass
    fresh = _fresh(doc)
    assert len(walks) == 1
    assert window.status_memory.isEnabled() and window.status_memory.text() == status_text(fresh)
    assert window.inspector.facts.isEnabled() and "batch 8" in window.inspector.facts.text()
    badges = RegionBadges(doc.graph, fresh)
    assert [(r.label, r.waiting, r.current) for r in scene.region_items] == \
        [(badges.badge(r.region_id, len(r.node_ids))[0], False, True) for r in scene.region_items]
    assert all("batch 8" in r.label for r in scene.region_items)


def test_problems_and_cards_show_an_edit_before_its_walk(qtbot: Any, make_window: Any) -> None:
    window = make_window(revnet_chain(3, channels=4, size=8))
    doc, scene = window.document, window.current_view().scene()
    qtbot.waitUntil(lambda: not doc.estimate_pending, timeout=5_000)
    conv = next(e.src.node for e in doc.graph.edges
                if doc.graph.nodes[e.src.node].type == "Conv" and doc.graph.nodes[e.dst.node].type == "Merge")
    doc.push(SetParam(doc.graph, conv, "out_channels", 3))  # the merge after it no longer adds up
    doc.recompute()
    assert doc.estimate_pending
    errors = [d for d in doc.report.diagnostics if d.severity == "error"]
    assert errors and window.status_errors.text().startswith(f"● {len(errors)} error")
    assert any(scene.node_items[d.node].errors for d in errors if d.node in scene.node_items)


def test_a_selection_while_the_walk_is_pending_walks_it_first(qtbot: Any, make_window: Any) -> None:
    window = make_window(revnet_chain(3, channels=4, size=8))
    doc = window.document
    qtbot.waitUntil(lambda: not doc.estimate_pending, timeout=5_000)
    conv = _conv(doc)
    doc.push(SetTraining(doc.graph, {**doc.graph.training, "batch_size": 8}))
    doc.recompute()
    window.inspector.set_selection(doc.graph, [conv])
    assert not doc.estimate_pending and "batch 8" in window.inspector.facts.text()


def test_while_typing_pauses_the_check_the_memory_figures_are_greyed(qtbot: Any, make_window: Any) -> None:
    """On a big graph a keystroke's check waits for the typing to pause (300 ms): the memory figures
    shown meanwhile are of the state before it, so they grey from WAITING_MS after the keystroke,
    not only once the check has run."""
    window = make_window(large_graph(200))
    doc = window.document
    qtbot.waitUntil(lambda: not doc.estimate_pending, timeout=10_000)
    conv = _conv(doc)
    order: list[str] = []
    doc.estimateWaiting.connect(lambda: order.append("greyed"))
    doc.analysisChanged.connect(lambda: order.append("checked"))
    doc.push(SetParam(doc.graph, conv, "kernel_size", 5))  # a keystroke: merges, waits for the pause
    with qtbot.waitSignal(doc.estimateChanged, timeout=10_000):
        pass
    assert order[:2] == ["greyed", "checked"]
    assert window.status_memory.isEnabled() and not doc.estimate_overdue
