"""The Runs tab's Export with Weights…: ``revstudio export RUN -o OUT.py --json`` in a child process (the
window keeps painting), the code and the trained weights written beside it and named in the status bar,
a refusal (no checkpoint, weights that do not fit) shown in the command's words with nothing written."""
from __future__ import annotations

import importlib.util

import pytest
from cuda_kit import as_if_from_cuda

from revstudio.qt.runs import export_run

from .conftest import START_TIMEOUT_MS, trained_run

torch = pytest.importorskip("torch")


RUN = "coupling-20261207-101500"


def _answer_file(monkeypatch, path):
    asked = []

    def ask(parent, title, start, filters):
        asked.append((title, start))
        return str(path), filters
    monkeypatch.setattr(export_run.QFileDialog, "getSaveFileName", ask)
    return asked


def test_export_with_weights_writes_the_code_and_the_weights_a_model_loads(qtbot, train_window, tmp_path,
                                                                             monkeypatch, dialogs):
    window = train_window({"steps": 3, "batch_size": 8, "val_every": 0})
    run_dir = trained_run(window, tmp_path, RUN)
    as_if_from_cuda(run_dir)  # (a run trained on a GPU machine, exported on this one)
    out = tmp_path / "ship" / "digits"  # (no .py typed: the dialog's filter adds it)
    out.parent.mkdir()
    asked = _answer_file(monkeypatch, out)
    panel = window.training.runs_panel
    panel.reload()
    panel.select_paths([run_dir])
    button = panel.buttons["export"]
    assert button.isEnabled() and button.text() == "Export with Weights…"
    button.click()
    assert asked == [(f"Export {run_dir.name} with its weights", str(tmp_path / "project" / "coupling.py"))]
    # the child works while the window goes on: the status bar says what is being written
    assert window.statusBar().currentMessage() == f"Exporting {run_dir.name} with its weights to digits.py…"
    qtbot.waitUntil(lambda: window.statusBar().currentMessage().startswith("Exported"), timeout=START_TIMEOUT_MS)
    said = window.statusBar().currentMessage()
    assert said.startswith(f"Exported {run_dir.name} with its weights: digits.py and digits.pt (")
    assert dialogs.errors == []
    code, weights = tmp_path / "ship" / "digits.py", tmp_path / "ship" / "digits.pt"
    lines = said.rsplit("(", 1)[1]  # "N lines)": the Log says it too, with the whole paths
    assert f"Exported {run_dir} with its weights: {code} and {weights} ({lines}" in window.bottom.log.toPlainText()
    # the run's detail records the export (it said nothing of it: the export was the status bar's alone)
    (line,) = [ln for ln in panel.detail.toPlainText().splitlines() if ln.startswith("exported: ")]
    assert line.startswith(f"exported: step 3 to {code} and digits.pt ("), line
    spec = importlib.util.spec_from_file_location("shipped_digits", code)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Model()
    model.load_state_dict(torch.load(weights, weights_only=True))
    trained = torch.load(run_dir / "checkpoints" / "last.pt", map_location="cpu", weights_only=False)["model"]
    assert set(trained) == set(model.state_dict())
    assert all(torch.equal(model.state_dict()[k].cpu(), v.cpu()) for k, v in trained.items())


def test_weights_that_do_not_fit_are_refused_in_words_and_nothing_is_written(qtbot, train_window, tmp_path,
                                                                             monkeypatch, dialogs):
    window = train_window({"steps": 3, "batch_size": 8, "val_every": 0})
    run_dir = trained_run(window, tmp_path, RUN)
    checkpoint = run_dir / "checkpoints" / "last.pt"
    state = torch.load(checkpoint, weights_only=False)
    state["model"] = {"someone_else.weight": torch.zeros(3, 3)}
    torch.save(state, checkpoint)
    out = tmp_path / "refused.py"
    _answer_file(monkeypatch, out)
    job = export_run.export_run_with_dialog(window, run_dir)
    assert job is not None and job.running
    qtbot.waitUntil(lambda: not job.running, timeout=START_TIMEOUT_MS)
    assert job.ok is False and dialogs.errors and dialogs.errors[-1][0] == "Cannot export"
    words = dialogs.errors[-1][1]
    assert words.startswith(f"Cannot export {run_dir.name}: ") and "do not fit" in words
    assert "someone_else.weight" in words and "Traceback" not in words
    assert window.statusBar().currentMessage() == f"Export of {run_dir.name} failed"
    assert not out.exists() and not (tmp_path / "refused.pt").exists()


def test_a_run_without_a_checkpoint_cannot_be_exported_and_says_why(qtbot, train_window, tmp_path,
                                                                     monkeypatch, dialogs):
    window = train_window({"steps": 3, "batch_size": 8, "val_every": 0})
    run_dir = trained_run(window, tmp_path, RUN)
    (run_dir / "checkpoints" / "last.pt").unlink()
    panel = window.training.runs_panel
    panel.reload()
    panel.select_paths([run_dir])
    assert not panel.buttons["export"].isEnabled()
    asked = _answer_file(monkeypatch, tmp_path / "never.py")
    assert export_run.export_run_with_dialog(window, run_dir) is None
    assert asked == []  # refused before a file name is asked for
    assert dialogs.errors[-1][0] == "Cannot export" and "has saved no checkpoint yet" in dialogs.errors[-1][1]
    assert not (tmp_path / "never.py").exists()


def test_export_with_weights_as_onnx_writes_one_file_onnxruntime_runs_with_the_trained_weights(
        qtbot, train_window, tmp_path, monkeypatch, dialogs):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    window = train_window({"steps": 3, "batch_size": 8, "val_every": 0})
    run_dir = trained_run(window, tmp_path, RUN)
    out = tmp_path / "ship" / "digits"
    out.parent.mkdir()

    def ask(parent, title, start, filters):  # the user picks the ONNX filter and types no suffix
        assert filters.split(";;") == [export_run.PYTHON_FILES, export_run.ONNX_FILES]
        return str(out), export_run.ONNX_FILES
    monkeypatch.setattr(export_run.QFileDialog, "getSaveFileName", ask)
    job = export_run.export_run_with_dialog(window, run_dir)
    assert job is not None
    qtbot.waitUntil(lambda: not job.running, timeout=START_TIMEOUT_MS)
    assert dialogs.errors == [] and job.ok
    said = window.statusBar().currentMessage()
    assert said.startswith(f"Exported {run_dir.name} as ONNX: digits.onnx (inputs ")
    assert "onnxruntime's outputs differ from the model's by at most" in said
    # the Log keeps the whole report (the status bar's message goes), with the file's whole path
    report = said.split("digits.onnx", 1)[1]
    assert f"Exported {run_dir.name} as ONNX: {out.parent / 'digits.onnx'}{report}" in window.bottom.log.toPlainText()
    assert sorted(p.name for p in out.parent.iterdir()) == ["digits.onnx"]
    import revstudio as rs
    from revstudio.diagnostics.gradcheck import random_inputs

    graph = rs.load(str(run_dir / "project.revs"))
    model = rs.compile(graph, device="cpu")
    model.load_state_dict(torch.load(run_dir / "checkpoints" / "last.pt", weights_only=False)["model"])
    model.eval()
    x = random_inputs(graph, 3, torch.float32, requires_grad=False)
    session = ort.InferenceSession(str(out.parent / "digits.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(None, {i.name: t.numpy() for i, t in zip(session.get_inputs(), x)})
    with torch.no_grad():
        want = model(*x)
    assert float((torch.from_numpy(got[0]) - want).abs().max()) <= 1e-4


def test_file_export_onnx_writes_the_canvas_project_and_a_refusal_is_shown_in_words(
        qtbot, train_window, tmp_path, monkeypatch, dialogs):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    from revstudio.qt import export_onnx

    window = train_window({"steps": 3, "batch_size": 8, "val_every": 0})
    out = tmp_path / "canvas.onnx"
    asked = []

    def ask(parent, title, start, filters):
        asked.append((title, filters))
        return str(out), filters
    monkeypatch.setattr(export_onnx.QFileDialog, "getSaveFileName", ask)
    action = window.actions_by_name["export_onnx"]
    assert action.text().replace("&", "") == "Export ONNX…"
    action.trigger()
    assert asked == [("Export ONNX", export_run.ONNX_FILES)]
    job = window.onnx_export
    qtbot.waitUntil(lambda: not job.running, timeout=START_TIMEOUT_MS)
    assert dialogs.errors == [] and out.is_file()
    said = window.statusBar().currentMessage()
    assert said.startswith(f"Exported {job.name} as ONNX: canvas.onnx (inputs ")
    logged = [ln for ln in window.bottom.log.toPlainText().splitlines() if f"Exported {job.name} as ONNX" in ln]
    assert len(logged) == 1 and logged[0].endswith(f"Exported {job.name} as ONNX: {out}{said.split('canvas.onnx', 1)[1]}")
    assert "; opset " in logged[0] and "onnxruntime's outputs differ" in logged[0]
    assert not job.run_dir.parent.exists()  # the snapshot it exported is gone

    # a flow whose ActNorm never saw a batch: refused in the command's words, the old file kept
    import types

    import revstudio as rs
    from revstudio.resources import path as resource

    out.write_bytes(b"before")
    flow = types.SimpleNamespace(graph=rs.load(str(resource("examples", "glow_flow.revs"))), path=None)
    job = export_onnx.export_onnx(window, flow, str(out))
    qtbot.waitUntil(lambda: not job.running, timeout=START_TIMEOUT_MS)
    assert job.ok is False and dialogs.errors[-1][0] == "Cannot export"
    words = dialogs.errors[-1][1]
    assert words.startswith(f"Cannot export {job.name}: node actnorm0, node actnorm1") and "Traceback" not in words
    assert out.read_bytes() == b"before"
