"""The batch behind the memory figures, their labels, and measuring memory from the editor."""
from __future__ import annotations

from pathlib import Path

import pytest

from revstudio.core.project import load
from revstudio.diagnostics.check import full_check
from revstudio.diagnostics.estimate import max_batch_that_fits
from revstudio.qt.document import Document
from revstudio.qt.inspector import Inspector
from revstudio.qt.memory_figures import BatchField, region_badge, status_text
from revstudio.qt.memory_panel import MemoryPanel, parse_bytes

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _document(qtbot, name: str = "revnet_wired") -> Document:  # type: ignore[no-untyped-def]
    doc = Document(load(EXAMPLES / f"{name}.revs"))
    doc.current_report()
    return doc


def test_batch_field_edits_training_batch_size_and_undo_restores(qtbot) -> None:  # type: ignore[no-untyped-def]
    doc = _document(qtbot)
    field = BatchField(doc)
    qtbot.addWidget(field)
    assert field.value() == 32 and doc.report.estimate.batch == 32
    before = doc.report.estimate.peak_bytes("standard")
    field.setValue(8)
    assert doc.graph.training["batch_size"] == 8
    assert doc.undo_stack.count() == 1 and "batch size" in doc.undo_stack.undoText().lower()
    doc.current_report()
    assert doc.report.estimate.batch == 8 and doc.report.estimate.peak_bytes("standard") < before
    doc.undo_stack.undo()
    assert "batch_size" not in doc.graph.training and field.value() == 32
    doc.undo_stack.redo()
    assert field.value() == 8


def test_a_batch_beyond_the_field_shows_as_its_largest_and_changes_nothing(qtbot) -> None:  # type: ignore[no-untyped-def]
    # a hand-edited training.batch_size of 10**15 raised OverflowError in the field (an
    # exception in Qt's event loop each time the project was opened or its training changed)
    doc = _document(qtbot)
    doc.graph.training = {"version": 1, "batch_size": 10**15}
    field = BatchField(doc)
    qtbot.addWidget(field)
    assert field.value() == field.maximum()
    assert doc.graph.training["batch_size"] == 10**15 and doc.undo_stack.count() == 0


def test_inspector_project_facts_have_the_batch_field_and_labelled_figures(qtbot) -> None:  # type: ignore[no-untyped-def]
    doc = _document(qtbot)
    inspector = Inspector(doc)
    qtbot.addWidget(inspector)
    inspector.show()
    assert inspector.batch_field.isVisible() and inspector.batch_field.value() == 32
    text = inspector.facts.text()
    assert "batch 32, float32" in text and "peak" in text and "kept" in text
    inspector.batch_field.setValue(4)
    qtbot.waitUntil(lambda: "batch 4, float32" in inspector.facts.text(), timeout=5000)
    inspector.set_selection(doc.graph, ["block0_f_conv1"])
    assert not inspector.batch_field.isVisible()
    facts = inspector.facts.text()
    assert "Kept (standard, batch 4, float32)" in facts
    assert "does not need it" in facts


def test_status_text_and_region_badges_say_batch_and_dtype(qtbot) -> None:  # type: ignore[no-untyped-def]
    doc = _document(qtbot)
    text = status_text(doc.report)
    assert text is not None and text.startswith("float32") and "kept std" in text and "peak std" in text
    label, tip, saves = region_badge(doc.report, doc.report.regions[0].id)
    assert saves and "saves" in label and "batch 32, float32" in label
    assert "peak (batch 32" in label  # one region: the model's peak saving is its own
    birnn = _document(qtbot, "birnn_sequence")
    label, tip, saves = region_badge(birnn.report, birnn.report.regions[0].id)
    assert not saves and "saves" not in label.split("·")[1].replace("saves nothing", "")


def test_a_region_that_keeps_more_than_standard_says_what_it_costs(revnet) -> None:
    """DESIGN's RevNet block keeps its streams as float32 pairs: 256 KiB more than standard at
    batch 32. Its badge said "saves nothing", as if it cost nothing either."""
    from revstudio.diagnostics.check import full_check

    report = full_check(revnet)
    region = report.regions[0]
    assert report.estimate.regions[region.id].saved_bytes < 0
    label, _, saves = region_badge(report, region.id)
    assert not saves
    assert label == "reversible · costs 256.0 KiB more than standard (batch 32, float32)"


def test_with_two_regions_a_badge_does_not_claim_the_models_peak_saving(qtbot) -> None:  # type: ignore[no-untyped-def]
    from revstudio.core.generate import Builder, classifier_head, wired_block
    from revstudio.diagnostics.check import full_check

    b = Builder("two-regions")
    b.node("Input", "x", shape=[8, 8, 8])
    src = "x.out"
    for i in range(2):
        src = wired_block(b, src, f"a{i}", 8)
    b.node("Conv", "mid", out_channels=8, kernel_size=3, padding="same")  # not invertible: two regions
    b.wire(src, "mid")
    src = "mid.out"
    for i in range(2):
        src = wired_block(b, src, f"c{i}", 8)
    classifier_head(b, src, 10)
    report = full_check(b.done())
    assert len(report.regions) == 2
    for region in report.regions:
        label, _, saves = region_badge(report, region.id)
        assert saves and "at the model's peak (batch" in label, label


def test_parse_bytes_reads_what_people_type() -> None:
    assert parse_bytes("8 GiB") == 8 << 30
    assert parse_bytes("24GB") == 24 * 10**9
    assert parse_bytes("512 mib") == 512 << 20
    assert parse_bytes("1.5e9") == 1_500_000_000
    for bad in ("", "lots", "8 parsecs", "0"):
        with pytest.raises(ValueError):
            parse_bytes(bad)


def test_fits_on_my_device_shows_max_batch_per_mode(qtbot) -> None:  # type: ignore[no-untyped-def]
    doc = _document(qtbot)
    panel = MemoryPanel(doc)
    qtbot.addWidget(panel)
    panel.budget.setText("4 MiB")
    panel.update_fits()
    report = full_check(doc.graph)
    for mode in ("standard", "reversible", "checkpoint"):
        expected = max_batch_that_fits(doc.graph, report, 4 << 20, mode=mode, optimizer="adam")
        assert panel.fit_results[mode] == expected
        assert f"{mode} {expected:,}" in panel.fits.text()
    assert panel.fit_results["reversible"] > panel.fit_results["standard"]
    panel.budget.setText("lots")
    panel.update_fits()
    assert "not an amount of memory" in panel.fits.text()


def test_fits_on_my_device_counts_the_projects_budget_and_device(qtbot) -> None:  # type: ignore[no-untyped-def]
    """With a memory budget in the run settings, the fit also says how large a batch a reversible
    run under that budget takes (the kept steps grow with the batch); a project set to train on
    cuda is priced as the GPU runtime runs (its stream updates in one piece)."""
    from revstudio.core.commands import SetTraining
    from revstudio.diagnostics.budget import budget_peak
    from revstudio.diagnostics.estimate import _state_bytes, estimate, input_bytes
    from revstudio.diagnostics.estimate_fit import UNDER_BUDGET, max_batches_that_fit

    doc = _document(qtbot)
    panel = MemoryPanel(doc)
    qtbot.addWidget(panel)
    doc.push(SetTraining(doc.graph, {**doc.graph.training, "memory_budget": "64KiB"}))
    doc.current_report()
    panel.budget.setText("4 MiB")
    panel.update_fits()
    n = panel.fit_results[UNDER_BUDGET]
    assert n is not None and panel.fit_results["standard"] <= n <= panel.fit_results["reversible"]
    assert f"reversible with its 64.0 KiB budget {n:,}" in panel.fits.text()
    report = full_check(doc.graph)

    def cost(b: int) -> int:
        est = estimate(doc.graph, report, report.regions, batch=b)
        params = est.parameter_bytes()
        return (params + input_bytes(doc.graph, report, b, est.dtype)
                + budget_peak(doc.graph, report, 64 << 10, batch=b) + _state_bytes(params, "adam"))

    assert cost(n) <= 4 << 20 < cost(n + 1)
    # a run in another mode uses no budget: no such entry
    doc.push(SetTraining(doc.graph, {**doc.graph.training, "mode": "standard"}))
    doc.current_report()
    panel.update_fits()
    assert UNDER_BUDGET not in panel.fit_results
    doc.push(SetTraining(doc.graph, {**doc.graph.training, "mode": "reversible", "memory_budget": None,
                                     "device": "cuda"}))
    doc.current_report()
    panel.update_fits()
    assert panel.fit_results == max_batches_that_fit(doc.graph, full_check(doc.graph), 4 << 20,
                                                     ("standard", "reversible", "checkpoint"),
                                                     optimizer="adam", device="cuda")


def test_measure_memory_runs_a_child_process_and_shows_measured_beside_estimate(qtbot) -> None:  # type: ignore[no-untyped-def]
    doc = _document(qtbot)
    panel = MemoryPanel(doc)
    qtbot.addWidget(panel)
    panel.batch.setValue(2)
    doc.current_report()
    with qtbot.waitSignal(panel.measured, timeout=180_000):
        panel.measure()
        assert panel.process is not None and not panel.measure_button.isEnabled()  # the GUI did not wait
    assert panel.message == "", panel.message
    assert panel.result is not None and panel.result["batch"] == 2
    assert set(panel.chart.rows) == {"standard", "reversible", "checkpoint"}
    for mode, parts in panel.chart.rows.items():
        assert parts["peak"]["real"] == panel.result["modes"][mode]["peak_bytes"]
        assert parts["peak"]["est"] > 0
    assert "%" in panel.table.text() and "measured at batch 2" in panel.status.text()
    assert panel.measure_button.isEnabled()


def test_a_cuda_measurement_says_what_the_estimate_does_not_count(qtbot) -> None:  # type: ignore[no-untyped-def]
    doc = _document(qtbot)
    panel = MemoryPanel(doc)
    qtbot.addWidget(panel)
    mode = {"peak_bytes": 18_421_760, "kept_bytes": 500_000, "seconds": 0.01}
    panel.result = {"batch": 16, "device": "cuda:0", "measured_with": "cuda allocator statistics",
                    "modes": {"standard": mode}, "estimate": {"modes": {"standard": {"peak_bytes": 1_421_332}}},
                    "estimate_note": "the estimate counts the model's tensors; a CUDA peak also holds cuDNN's workspaces"}
    panel._show_result()
    assert "cuDNN's workspaces" in panel.status.text() and "-92%" in panel.table.text()


def test_a_bf16_measurement_stands_without_an_fp32_estimate(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The precision follows the project's (a bf16 project measures what its runs take) and goes
    to ``revstudio memory --precision``; its result shows no estimate column or bars."""
    doc = _document(qtbot)
    doc.graph.training = {**(doc.graph.training or {}), "precision": "bf16"}
    panel = MemoryPanel(doc)
    qtbot.addWidget(panel)
    assert panel.precision.currentText() == "bf16" and "autocast" in panel.precision.toolTip()
    mode = {"peak_bytes": 538_048, "kept_bytes": 363_426, "seconds": 0.01}
    panel.result = {"batch": 32, "device": "cpu", "precision": "bf16", "measured_with": "live tensor accounting",
                    "modes": {"standard": mode, "reversible": mode}, "estimate": {},
                    "estimate_note": "no estimate: the estimate models fp32 steps only; bf16 autocast is not modelled"}
    panel._show_result()
    assert panel.status.text().startswith("measured at batch 32, cpu, bf16 autocast (live tensor accounting); "
                                          "no estimate: the estimate models fp32")
    assert "%" not in panel.table.text() and panel.table.text().count("–") == 8
    assert all("est" not in part for parts in panel.chart.rows.values() for part in parts.values())
    # the fit is priced from the estimate, and says whose step that is
    doc.current_report()
    panel.budget.setText("4 MiB")
    panel.update_fits()
    assert panel.fits.text().endswith("counted); bf16 runs: the estimate models fp32 steps only; bf16 autocast "
                                      "is not modelled")


def test_the_memory_tab_gets_room_and_nothing_in_it_overlaps(make_window, revnet, qtbot, settle):
    """In a 200 px Output panel the 'Fits on my device' row lay over the chart, and at 800 px
    wide the buttons were squeezed to 're m' and 'ance'."""
    for size in ((1400, 880), (800, 600)):
        window = make_window(revnet)
        window.resize(*size)
        qtbot.wait(100)
        settle()
        window.bottom.setCurrentIndex(window.bottom.indexOf(window.bottom.tab("Memory")))
        qtbot.wait(100)
        settle()
        panel = window.memory_panel
        assert panel.isVisible()
        for button in (panel.measure_button, panel.cancel_button):
            assert button.width() >= button.minimumSizeHint().width(), (size, button.text())
        assert panel.height() >= panel.minimumSizeHint().height(), size
        chart = panel.chart.geometry()
        assert chart.bottom() < panel.budget.geometry().top(), size
        if size == (1400, 880):
            assert window.bottom_dock.height() >= 300  # shown, it grows a short panel as Code does


def test_with_errors_the_memory_figures_say_they_are_partial_as_the_parameters_do(make_window, settle):
    """A broken graph showed 'kept std 0 B · peak std 0 B' as if the network needed no memory,
    beside '0+ parameters' and 'so far (fix the errors for the total)'."""
    graph = load(EXAMPLES / "revnet_wired.revs")
    graph.remove_edge(next(e for e in graph.edges if e.dst.node == "stem"))
    window = make_window(graph)
    settle()
    assert window.status_errors.text() == "● 1 error"
    assert window.status_params.text().startswith("0+")
    memory = window.status_memory
    assert "so far" in memory.text() and "fix the errors" in memory.toolTip()
    assert "so far" in window.inspector.facts.text().split("Memory figures", 1)[1].split("</tr>", 1)[0]
    graph_ok = load(EXAMPLES / "revnet_wired.revs")
    window.files.document.replace_graph(graph_ok)
    settle()
    assert "so far" not in window.status_memory.text()


def test_measuring_a_graph_with_errors_names_them_not_a_temporary_file(qtbot) -> None:  # type: ignore[no-untyped-def]
    """It started a child that refused the graph, and the tab said 'measurement failed:
    /tmp/revstudio-memory-.../project.revs: the graph has errors ...' (a deleted snapshot)."""
    from revstudio.core.commands import Disconnect

    doc = _document(qtbot)
    panel = MemoryPanel(doc)
    qtbot.addWidget(panel)
    edge = next(e for e in doc.graph.edges if doc.graph.node(e.dst.node).type == "Output")
    doc.push(Disconnect(doc.graph, edge))
    panel.measure()  # at once: the edit's pending check is done first
    assert panel.process is None and panel.measure_button.isEnabled()
    text = panel.status.text()
    assert f"{edge.dst.node}.{edge.dst.port}:" in text and "revstudio-memory" not in text, text
