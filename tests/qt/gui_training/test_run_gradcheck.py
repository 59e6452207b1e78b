"""The Runs tab's Gradient Check: ``revstudio gradcheck --checkpoint RUN`` in a child process, drawn.

The checkpoints are written here with the training loop's own writer
(``revstudio.training.checkpoint.save``); test_train_window.py checks one a
real run wrote.
"""
from __future__ import annotations

import json
import shutil

import pytest

from revstudio.qt.plots.diagnostic_plots import DiagnosticsDialog

from .conftest import EXAMPLE, START_TIMEOUT_MS

torch = pytest.importorskip("torch")


def _run_with_checkpoint(tmp_path, graph, step=7):
    from revstudio.compiler import compile as compile_graph
    from revstudio.training import checkpoint as ckpt

    run_dir = tmp_path / "project" / "runs" / f"coupling-{step}"
    (run_dir / "checkpoints").mkdir(parents=True)
    shutil.copy(EXAMPLE, run_dir / "project.revs")
    (run_dir / "status.json").write_text(json.dumps({"status": "finished", "step": step, "total_steps": step}))
    torch.manual_seed(3)
    model = compile_graph(graph, mode="standard")
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
    state = model.state_dict()
    ckpt.save(str(run_dir / "checkpoints" / "last.pt"), {"step": step, "model": state})
    return run_dir, state


def test_gradient_check_button_runs_the_cli_at_the_run_checkpoint(qtbot, train_window, tmp_path):
    from revstudio.core.project import load
    from revstudio.diagnostics.gradcheck import compare_modes

    window = train_window({"steps": 7})
    run_dir, state = _run_with_checkpoint(tmp_path, load(str(EXAMPLE)))
    panel = window.training.runs_panel
    panel.reload()
    panel.select_paths([run_dir])
    assert panel.buttons["gradcheck"].isEnabled()
    panel.buttons["gradcheck"].click()
    query = window.training.queries[-1]
    assert query.argv[-7:] == ["-m", "revstudio", "gradcheck", str(run_dir / "project.revs"), "--json",
                               "--checkpoint", str(run_dir)]
    qtbot.waitUntil(lambda: query.answer is not None, timeout=START_TIMEOUT_MS)
    answer = query.answer
    assert answer.get("ok") is True and answer["step"] == 7, str(answer)[:400]
    assert answer["checkpoint"] == str(run_dir / "checkpoints" / "last.pt")
    # the trained weights were used, not a fresh initialisation, on the project's first training batch
    from revstudio.diagnostics.check import full_check
    from revstudio.training.first_batch import first_batch

    graph = load(str(EXAMPLE))
    batch = first_batch(graph, full_check(graph), str(run_dir / "project.revs"), 2)
    expected = compare_modes(load(str(EXAMPLE)), state=state, inputs=batch.inputs)
    assert answer["gradient_norm"] == pytest.approx(expected.gradient_norm, rel=1e-9)
    dialog = window.training.dialogs[-1]
    assert isinstance(dialog, DiagnosticsDialog) and dialog.plot is not None
    assert f"At the weights of {run_dir / 'checkpoints' / 'last.pt'} (step 7)." in dialog.summary.text()
    assert "Inputs: the first training batch of the synthetic data (2 samples)." in dialog.summary.text()


def test_a_checkpoint_of_another_graph_is_shown_with_its_keys_and_the_app_goes_on(qtbot, train_window, tmp_path):
    from revstudio.core.generate import revnet_chain

    window = train_window({"steps": 7})
    run_dir, _state = _run_with_checkpoint(tmp_path, revnet_chain(2, channels=4, size=4))
    window.training.runs_panel.reload()
    query = window.training.run_action("gradcheck", [run_dir])
    qtbot.waitUntil(lambda: query.answer is not None, timeout=START_TIMEOUT_MS)
    assert query.answer["exit_code"] == 2
    error = query.answer["error"]
    assert "do not fit this graph" in error and "b0_f_conv1.weight" in error, error
    dialog = window.training.dialogs[-1]
    assert dialog.plot is None and "do not fit this graph" in dialog.summary.text()
    # the editor is unharmed: an edit and its undo
    from revstudio.core.commands import SetParam

    node = next(n for n in window.document.graph if n.type == "Conv")
    old = node.params["out_channels"]
    window.document.push(SetParam(window.document.graph, node.id, "out_channels", old + 1))
    window.document.undo_stack.undo()
    assert window.document.graph.nodes[node.id].params["out_channels"] == old


def _drawn_names(axis):
    """The tick labels ``axis`` paints (pyqtgraph's own draw specs)."""
    from PySide6.QtGui import QImage, QPainter

    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _rect, _flags, text in specs[2]] if specs else []


def _gradcheck_dialog(qtbot, names):
    result = {"ok": True, "mode": "reversible", "tolerance": 1e-10, "dtype": "float64", "batch": 2,
              "max_error": 1e-12, "parameters": {n: {"error": 10.0 ** -(12 + i % 5)} for i, n in enumerate(names)},
              "inversion_error": {"r0": 1e-15}}
    dialog = DiagnosticsDialog("Gradient check", "gradcheck", result)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    # the axes take the view's range once it is laid out, in more than one pass, which a loaded machine
    # may take more than a moment to finish: wait until the names drawn stop changing (none drawn at all
    # was the bug, and still times out)
    axis = dialog.plot.getAxis("left")
    seen: list[list[str]] = []

    def settled() -> bool:
        qtbot.wait(40)  # reads 50 ms apart
        seen.append(_drawn_names(axis))
        return len(seen) > 2 and bool(seen[-1]) and seen[-1] == seen[-2] == seen[-3]

    qtbot.waitUntil(settled, timeout=5000)
    return dialog


def test_the_gradient_check_names_every_bar(qtbot):
    """The bars run worst first, top down (an inverted y axis), and pyqtgraph hands such an axis
    its range high end first: the names were filtered against it and no bar had one."""
    names = [f"blocks.{i}.conv.weight" for i in range(20)]
    dialog = _gradcheck_dialog(qtbot, names)
    drawn = _drawn_names(dialog.plot.getAxis("left"))
    assert set(drawn) == {f"parameter {n}" for n in names} | {"inversion r0"}, drawn
    # more rows than lines of text fit: every k-th is named, in order, none over another
    many = [f"layer{i}.weight" for i in range(120)]
    crowded = _gradcheck_dialog(qtbot, many)
    shown = _drawn_names(crowded.plot.getAxis("left"))
    assert 20 < len(shown) < len(many)
