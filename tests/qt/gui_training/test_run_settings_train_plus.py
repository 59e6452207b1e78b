"""Run > Run Settings' early stopping (patience, min. delta) and gradient accumulation (micro-batches per
step) fields, round-tripped through the project's training section and refused as the config refuses
them; and a run that stopped early says so in the status bar, the Runs tab and the log."""
from __future__ import annotations

from .conftest import SHORT


def test_the_fields_round_trip_and_off_is_the_sections_null(qtbot, train_window, open_settings) -> None:
    window = train_window()
    dialog = open_settings(window)
    patience, delta, accumulate = (dialog.fields[k] for k in ("patience", "min_delta", "accumulate"))
    assert patience.value() == patience.minimum() == 0 and patience.text() == "off"
    assert accumulate.value() == accumulate.minimum() == 1 and delta.text() == "0.0"
    assert "best.pt" in patience.toolTip() and "memory of one micro-batch" in accumulate.toolTip()
    patience.setValue(3)
    delta.setText("0.01")
    accumulate.setValue(4)
    dialog.accept()
    training = window.document.graph.training
    assert (training["patience"], training["min_delta"], training["accumulate"], training["version"]) == (
        3, 0.01, 4, 3)

    dialog = open_settings(window)  # reopened: the values as saved, then back to the defaults
    assert (dialog.fields["patience"].value(), dialog.fields["accumulate"].value()) == (3, 4)
    assert dialog.fields["min_delta"].text() == "0.01"
    dialog.fields["patience"].setValue(0)
    dialog.fields["min_delta"].setText("0")
    dialog.fields["accumulate"].setValue(1)
    dialog.accept()
    assert window.document.graph.training == {**SHORT, "version": 1}


def test_bad_combinations_are_refused_naming_the_setting(qtbot, train_window, open_settings) -> None:
    window = train_window()
    dialog = open_settings(window)
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    dialog.fields["patience"].setValue(2)
    dialog.fields["val_every"].setValue(0)
    assert not ok.isEnabled()
    assert dialog.error.text().startswith("training.patience: early stopping counts validations, and val_every is 0")
    dialog.fields["val_every"].setValue(6)
    assert ok.isEnabled() and not dialog.error.isVisible()
    dialog.fields["min_delta"].setText("-1")
    assert not ok.isEnabled() and dialog.error.text().startswith("training.min_delta: -1.0 is out of range")
    dialog.fields["min_delta"].setText("x")
    assert dialog.error.text() == "training.min_delta: 'x' is not a number"
    count = window.document.undo_stack.count()
    dialog.accept()  # refused: nothing changes
    assert window.document.undo_stack.count() == count
    dialog.reject()


def test_a_run_that_stopped_early_says_so(qtbot, fake_run, monkeypatch, caplog) -> None:
    monkeypatch.setenv("FAKE_EARLY_AT", "8")
    with caplog.at_level("INFO"):
        window = fake_run({**SHORT, "val_every": 2, "patience": 2})
    ui = window.training
    run = ui.controller.run
    assert run.status == "finished" and run.step == 8 and run.early == "stopped early at step 8 (best at 4)"
    assert ui.status_progress.label.text() == "finished: stopped early at step 8 (best at 4)"
    assert ": stopped early at step 8 (best at 4) · step 8 / 12" in ui.runs_panel.progress.label.text()
    assert "finished: stopped early at step 8 (best at 4)" in caplog.text
