"""Run > Train From Weights…: a run from weights of one's own (``revstudio train --init``) in the app.

The real worker checks the weights: ones that fit start the run (its detail in the Runs tab names
them), ones of another graph are refused before step 1 with the CLI's own message, no run kept.
"""
from __future__ import annotations

import pytest
from weights_kit import own_weights

from .conftest import START_TIMEOUT_MS

pytestmark = pytest.mark.slow
ONE_STEP = {"steps": 1, "batch_size": 8, "val_every": 0, "gradcheck_every": 0, "memory_every": 0,
            "checkpoint_every": 0, "optimizer": "sgd", "lr": 1e-9, "momentum": 0.0}


def _run(qtbot, window):
    ctl = window.training.controller
    qtbot.waitUntil(lambda: not ctl.running, timeout=START_TIMEOUT_MS)
    return ctl


def test_a_run_starts_from_ones_own_weights_and_its_detail_names_them(qtbot, train_window, dialogs, tmp_path):
    import torch

    window = train_window(ONE_STEP)
    mine = own_weights(window.document.path, tmp_path / "mine.pt", seed=7)
    dialogs.weights_paths.append(str(tmp_path / "mine.pt"))
    assert window.actions_by_name["train_from_weights"] in window.training.run_menu.actions()
    window.actions_by_name["train_from_weights"].trigger()
    assert "weights" in dialogs.asked
    ctl = _run(qtbot, window)
    assert ctl.run.status == "finished", (ctl.run.message, ctl.stderr_tail())
    trained = torch.load(ctl.run_dir / "checkpoints" / "last.pt", weights_only=True)["model"]
    assert all(torch.allclose(trained[k], mine[k], rtol=0, atol=1e-6) for k in mine)
    panel = window.training.runs_panel
    panel.reload()
    panel.select_paths([ctl.run_dir])
    assert f"started from weights: {tmp_path / 'mine.pt'}" in panel.detail.toPlainText()


def test_cancelling_the_file_dialog_starts_nothing(qtbot, train_window, dialogs):
    window = train_window(ONE_STEP)
    assert window.training.train_from_weights() is None
    assert not window.training.controller.running and window.training.controller.run is None


def test_weights_that_do_not_fit_are_refused_with_the_clis_message(qtbot, train_window, dialogs, tmp_path):
    window = train_window(ONE_STEP)
    own_weights(window.document.path, tmp_path / "foreign.pt", seed=7, rename=True)
    dialogs.weights_paths.append(str(tmp_path / "foreign.pt"))
    window.actions_by_name["train_from_weights"].trigger()
    ctl = _run(qtbot, window)
    assert ctl.run.status == "failed" and ctl.run_removed and not ctl.run_dir.exists()
    text = window.training.runs_panel.detail.toPlainText()
    assert f"--init {tmp_path / 'foreign.pt'}: the weights do not fit the run's graph" in text, text
    assert "rs.load_weights" in text and "Traceback" not in text
    title, said = dialogs.errors[-1]
    assert "do not fit" in said
