"""Run > Run Settings' CPU threads field: torch's default (the section's null) or a count, round-tripped
through the project's training section, with a tooltip saying what the count changes."""
from __future__ import annotations

from .conftest import SHORT


def test_the_threads_field_round_trips_and_says_what_the_count_changes(qtbot, train_window, open_settings) -> None:
    window = train_window()
    dialog = open_settings(window)
    field = dialog.fields["threads"]
    assert field.value() == field.minimum() == 0 and field.text() == "torch's default"
    assert "last bits" in field.toolTip() and "speed" in field.toolTip()
    field.setValue(3)
    dialog.accept()
    training = window.document.graph.training
    assert training["threads"] == 3 and training["version"] == 2  # (a key of version 2 of the section)

    dialog = open_settings(window)  # reopened: the count as saved, and back to torch's default
    assert dialog.fields["threads"].value() == 3
    dialog.fields["threads"].setValue(0)
    dialog.accept()
    assert "threads" not in window.document.graph.training
    assert window.document.graph.training == {**SHORT, "version": 1}


def test_a_project_that_sets_threads_opens_with_it(qtbot, train_window, open_settings) -> None:
    window = train_window({**SHORT, "version": 2, "threads": 2})
    dialog = open_settings(window)
    assert dialog.fields["threads"].value() == 2
    count = window.document.undo_stack.count()
    dialog.accept()
    assert window.document.undo_stack.count() == count  # nothing changed


def test_the_log_says_a_resume_on_another_thread_count_once(qtbot, fake_run, monkeypatch) -> None:
    note = ("the run trained on 2 CPU threads before and goes on with 1: the losses from here may differ in "
            "their last bits from those of a run that kept 2 (training.threads, --threads N)")
    monkeypatch.setenv("FAKE_THREADS_NOTE", note)
    window = fake_run({"steps": 4, "log_every": 1})
    log = window.bottom.log.toPlainText()
    assert log.count("the run trained on 2 CPU threads before and goes on with 1") == 1, log
    # in the editor's words: the field of Run Settings, not the flag
    assert "(training.threads, CPU threads N) (Run > Run Settings)" in log and "--threads" not in log, log


def test_the_log_says_a_resume_on_another_device_once(qtbot, fake_run, monkeypatch) -> None:
    from revstudio.training.checkpoint import device_changed_note

    note = device_changed_note("cuda:0", "cpu")
    monkeypatch.setenv("FAKE_DEVICE_NOTE", note)
    window = fake_run({"steps": 4, "log_every": 1})
    log = window.bottom.log.toPlainText()
    assert log.count("the run trained on cuda:0 before and goes on on cpu") == 1, log
    assert "CUDA random state cannot be restored on cpu" in log, log
