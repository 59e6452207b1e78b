"""The Runs tab's Evaluate…: ``revstudio evaluate RUN --json`` in a child process (the window keeps
painting, Cancel stops it), its figures and a confusion-matrix heatmap shown, a refusal in words."""
from __future__ import annotations

import json

import pytest

from revstudio.qt import theme
from revstudio.qt.runs.evaluation_view import ConfusionHeatmap, EvaluationDialog

from .conftest import START_TIMEOUT_MS, trained_run

torch = pytest.importorskip("torch")


RUN = "coupling-eval"


def _dialog(window) -> EvaluationDialog:
    found = [d for d in window.findChildren(EvaluationDialog) if d.isVisible()]
    assert len(found) == 1
    return found[0]


def test_evaluate_runs_the_cli_on_the_run_and_draws_its_confusion_matrix(qtbot, train_window, tmp_path, capsys):
    window = train_window({"steps": 3, "batch_size": 8, "val_every": 0})
    run_dir = trained_run(window, tmp_path, RUN)
    capsys.readouterr()
    panel = window.training.runs_panel
    panel.reload()
    panel.select_paths([run_dir])
    assert panel.buttons["evaluate"].isEnabled()
    panel.buttons["evaluate"].click()
    dialog = _dialog(window)
    assert dialog.query.argv[-3:] == ["evaluate", str(run_dir), "--json"]
    assert dialog.running and dialog.busy.isVisible()  # the window paints on while the child works
    qtbot.waitUntil(lambda: dialog.figures is not None, timeout=START_TIMEOUT_MS)
    result = dialog.figures
    assert result.get("task") == "classification", str(result)[:400]
    assert cli_figures(run_dir, capsys)["confusion"] == result["confusion"]
    heat = dialog.heatmap
    assert heat is not None and heat.isVisible() and heat.matrix == result["confusion"]
    assert sum(map(sum, heat.matrix)) == result["scored"]
    assert f"{100 * result['accuracy']:.1f} %" in dialog.headline.text()
    assert "per class:" in dialog.text.toPlainText() and not dialog.cancel_button.isEnabled()
    saved = list((run_dir / "evaluations").glob("*.json"))
    assert len(saved) == 2 and json.loads(saved[0].read_text())["confusion"] == result["confusion"]
    dialog.close()
    panel.reload()
    panel.select_paths([run_dir])  # the run's detail says how it scored
    assert f"evaluated: accuracy {100 * result['accuracy']:.1f} %" in panel.detail.toPlainText()


def cli_figures(run_dir, capsys) -> dict:
    from revstudio import cli

    assert cli.main(["evaluate", str(run_dir), "--json", "--device", "cpu"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cancel_stops_the_child_and_a_refusal_is_shown_in_words(qtbot, train_window, tmp_path):
    window = train_window({"steps": 3, "batch_size": 8, "val_every": 0})
    run_dir = trained_run(window, tmp_path, RUN)
    dialog = EvaluationDialog(run_dir, window)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.start()
    assert dialog.running
    dialog.cancel_button.click()
    assert not dialog.query.running and dialog.figures is None
    assert dialog.status.text() == "Evaluation cancelled." and not dialog.busy.isVisible()
    (run_dir / "checkpoints" / "last.pt").write_bytes(b"not a checkpoint")
    broken = EvaluationDialog(run_dir, window).start()
    qtbot.addWidget(broken)
    qtbot.waitUntil(lambda: broken.figures is not None, timeout=START_TIMEOUT_MS)
    words = broken.status.text()
    assert words.startswith("Cannot evaluate coupling-eval: ") and "last.pt: not a readable checkpoint" in words
    assert "Traceback" not in words and broken.heatmap is None


def test_the_button_waits_for_a_finished_or_stopped_run_with_a_checkpoint(qtbot, train_window, tmp_path):
    window = train_window({"steps": 3, "batch_size": 8, "val_every": 0})
    run_dir = trained_run(window, tmp_path, RUN)
    panel = window.training.runs_panel
    status = json.loads((run_dir / "status.json").read_text())
    (run_dir / "status.json").write_text(json.dumps({**status, "status": "failed"}))
    panel.reload()
    panel.select_paths([run_dir])
    assert not panel.buttons["evaluate"].isEnabled()
    (run_dir / "status.json").write_text(json.dumps({**status, "status": "stopped"}))
    panel.reload()
    panel.select_paths([run_dir])
    assert panel.buttons["evaluate"].isEnabled()
    (run_dir / "checkpoints" / "last.pt").unlink()
    panel.reload()
    panel.select_paths([run_dir])
    assert not panel.buttons["evaluate"].isEnabled()


@pytest.mark.parametrize("name", theme.THEMES)
def test_the_heatmap_is_row_normalised_and_its_counts_read_in_either_theme(qtbot, monkeypatch, name):
    monkeypatch.setattr(theme, "_current", name)
    heat = ConfusionHeatmap([[90, 10, 0], [1, 1, 0], [0, 0, 0]])
    qtbot.addWidget(heat)
    heat.resize(300, 300)
    c = theme.colors()
    assert heat.share(0, 0) == pytest.approx(0.9) and heat.share(1, 0) == pytest.approx(0.5)
    # a class of 2 samples half right reads as strongly as 50 of 100 would: its row's share, not the count
    assert heat.fill(1, 1).name() == ConfusionHeatmap([[50, 50], [0, 0]]).fill(0, 0).name()
    assert heat.fill(2, 2).name() == c.base  # (an empty row: no colour)
    from revstudio.qt.runs.evaluation_view import _ink_on

    def contrast(a, b) -> float:
        def lum(q) -> float:
            def lin(v: int) -> float:
                x = v / 255
                return x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4
            return 0.2126 * lin(q.red()) + 0.7152 * lin(q.green()) + 0.0722 * lin(q.blue())
        hi, lo = sorted((lum(a), lum(b)), reverse=True)
        return (hi + 0.05) / (lo + 0.05)

    for r in range(3):
        for col in range(3):
            fill = heat.fill(r, col)
            assert contrast(fill, _ink_on(fill)) >= 4.5, (name, r, col, fill.name())
    image = heat.grab().toImage()  # it paints: the full diagonal cell in the accent colour
    n, cell, m = heat._grid()
    assert image.pixelColor(m + 2, m + 2).name() == heat.fill(0, 0).name()


def test_a_run_with_best_pt_offers_its_best_weights_and_scores_them_again(qtbot, train_window, tmp_path):
    window = train_window({"steps": 3, "batch_size": 8, "val_every": 0})
    run_dir = trained_run(window, tmp_path, RUN)
    assert (run_dir / "checkpoints" / "best.pt").is_file()  # (the end's validation was its best)
    dialog = EvaluationDialog(run_dir, window)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.weights.isVisible() and dialog.weights.count() == 2
    dialog.start()
    qtbot.waitUntil(lambda: dialog.figures is not None, timeout=START_TIMEOUT_MS)
    assert dialog.figures["checkpoint"].endswith("last.pt") and dialog.heatmap is not None
    dialog.weights.setCurrentIndex(1)
    assert dialog.query.argv[-2:] == ["--checkpoint", "best"] and dialog.running
    assert dialog.heatmap is None and not dialog.headline.isVisible() and "best checkpoint" in dialog.status.text()
    qtbot.waitUntil(lambda: dialog.figures is not None, timeout=START_TIMEOUT_MS)
    assert dialog.figures["checkpoint"].endswith("best.pt"), str(dialog.figures)[:400]
    assert dialog.heatmap is not None and dialog.headline.isVisible()
    dialog.close()
    (run_dir / "checkpoints" / "best.pt").unlink()  # a run of a revstudio that kept last.pt alone
    alone = EvaluationDialog(run_dir, window)
    qtbot.addWidget(alone)
    alone.show()
    assert alone.weights.count() == 1 and not alone.weights.isVisible()


def test_a_run_trained_on_a_gpu_machine_is_scored_here_saying_so(qtbot, train_window, tmp_path):
    """Evaluate… passes no --device: a GPU machine's run (its checkpoint saved on cuda:0, its training.device
    cuda) was refused here with advice to give --device cpu, a flag the app has no field for."""
    from cuda_kit import as_if_from_cuda

    from revstudio.core.project import load, save

    window = train_window({"steps": 3, "batch_size": 8, "val_every": 0})
    run_dir = trained_run(window, tmp_path, RUN)
    as_if_from_cuda(run_dir)
    graph = load(str(run_dir / "project.revs"))
    graph.training = {**graph.training, "device": "cuda"}
    save(graph, str(run_dir / "project.revs"))
    panel = window.training.runs_panel
    panel.reload()
    panel.select_paths([run_dir])
    panel.buttons["evaluate"].click()
    dialog = _dialog(window)
    qtbot.waitUntil(lambda: dialog.figures is not None or not dialog.running, timeout=START_TIMEOUT_MS)
    assert dialog.figures is not None and dialog.figures["device"] == "cpu", dialog.text.toPlainText()[:600]
    assert "note: the run trained on cuda, which this machine cannot use" in dialog.text.toPlainText()
    dialog.close()
