"""Run > Run Settings: every field, the config's own messages, one undoable edit; children for torch."""
from __future__ import annotations

from revstudio.core.commands import SetTraining
from revstudio.qt.training import section as sec

from .conftest import SHORT


def test_settings_are_checked_with_the_configs_messages_and_saved_as_one_undoable_edit(qtbot, train_window,
                                                                                       open_settings):
    window = train_window()
    stack = window.document.undo_stack
    dialog = open_settings(window)
    assert dialog.length.value() == 12 and dialog.fields["batch_size"].value() == 8  # filled from the project
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    assert ok.isEnabled() and not dialog.error.isVisibleTo(dialog)

    dialog.fields["lr"].setText("abc")
    assert dialog.error.text() == "training.lr: 'abc' is not a number" and not ok.isEnabled()
    dialog.fields["lr"].setText("-1")
    assert dialog.error.text() == sec.validate({"lr": -1.0})  # the CLI's message, naming the key
    assert dialog.error.text().startswith("training.lr") and not ok.isEnabled()
    dialog.fields["lr"].setText("0.01")
    dialog.fields["mode"].setCurrentIndex(dialog.fields["mode"].findData("checkpoint"))
    dialog.fields["schedule"].setCurrentIndex(dialog.fields["schedule"].findData("cosine"))
    dialog.fields["grad_clip"].setText("1.5")
    dialog.length_kind.setCurrentIndex(dialog.length_kind.findData("epochs"))
    dialog.length.setValue(3)
    assert ok.isEnabled(), dialog.error.text()
    count = stack.count()
    dialog.accept()
    assert stack.count() == count + 1  # one undo step for the whole dialog
    training = window.document.graph.training
    assert training["lr"] == 0.01 and training["mode"] == "checkpoint" and training["epochs"] == 3
    assert training["steps"] is None and training["grad_clip"] == 1.5 and training["version"] == 1
    stack.undo()
    assert window.document.graph.training == SHORT
    stack.redo()
    assert window.document.graph.training == training

    # Restore Defaults, then OK: the section holds only the version
    dialog = open_settings(window)
    dialog.restore_defaults()
    dialog.accept()
    assert window.document.graph.training == {"version": 1}


def test_large_whole_numbers_show_as_they_are_and_ok_keeps_them(qtbot, train_window, open_settings):
    # the fields stopped at 1e9 (steps at 1e8): a seed of 1.5e9 showed as 1e9 and OK wrote that,
    # and a value beyond 32 bits raised OverflowError when the dialog opened
    section = {**SHORT, "seed": 1_500_000_000, "steps": 300_000_000, "checkpoint_every": 2_000_000_000}
    window = train_window(section)
    dialog = open_settings(window)
    assert dialog.fields["seed"].value() == 1_500_000_000 and dialog.length.value() == 300_000_000
    assert dialog.fields["checkpoint_every"].value() == 2_000_000_000
    count = window.document.undo_stack.count()
    dialog.accept()
    assert window.document.undo_stack.count() == count  # nothing changed, nothing cut down
    assert window.document.graph.training["seed"] == 1_500_000_000


def test_the_memory_budget_is_typed_as_an_amount_and_shown_as_one(qtbot, train_window, open_settings):
    window = train_window()
    dialog = open_settings(window)
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    field = dialog.fields["memory_budget"]
    assert field.text() == "" and "64MiB" in field.placeholderText()
    # the whole placeholder shows in the field at the dialog's size (its long form is the tooltip)
    assert field.fontMetrics().horizontalAdvance(field.placeholderText()) <= field.width() - 12
    assert "empty: no budget" in field.toolTip()
    field.setText("lots")
    assert dialog.error.text().startswith("training.memory_budget: 'lots' is not an amount of memory")
    assert not ok.isEnabled()
    assert not dialog.budget_hint.isVisibleTo(dialog)
    field.setText("64 MiB")
    assert ok.isEnabled(), dialog.error.text()
    # what it keeps, and its estimated peak beside the modes', from the editor's own analysis,
    # once typing pauses
    qtbot.waitUntil(lambda: dialog.budget_hint.isVisibleTo(dialog), timeout=5000)
    hint = dialog.budget_hint.text()
    assert "memory budget: at batch 8 keeps" in hint and "whole" in hint
    assert "estimated peak" in hint and "standard" in hint and "autocast" not in hint
    # under bf16 the peaks are still an fp32 step's, and the hint says so
    dialog.fields["precision"].setCurrentIndex(dialog.fields["precision"].findData("bf16"))
    qtbot.waitUntil(lambda: dialog.budget_hint.text().endswith(
        "; the estimate models fp32 steps only; bf16 autocast is not modelled"), timeout=5000)
    dialog.fields["precision"].setCurrentIndex(dialog.fields["precision"].findData("fp32"))
    dialog.fields["mode"].setCurrentIndex(dialog.fields["mode"].findData("standard"))
    qtbot.waitUntil(lambda: dialog.budget_hint.text() == "memory budget: used in reversible mode only",
                    timeout=5000)
    dialog.fields["mode"].setCurrentIndex(dialog.fields["mode"].findData("reversible"))
    dialog.accept()
    assert window.document.graph.training["memory_budget"] == 64 << 20  # stored as bytes
    dialog = open_settings(window)
    assert dialog.fields["memory_budget"].text() == "64MiB"  # and shown as an amount again
    for typed, stored in (("64MB", 64_000_000), ("1.5GB", 1_500_000_000), ("768 KiB", 768 << 10)):
        dialog.fields["memory_budget"].setText(typed)
        dialog.accept()
        assert window.document.graph.training["memory_budget"] == stored
        dialog = open_settings(window)
        assert dialog.fields["memory_budget"].text() == typed.replace(" ", "")
    dialog.fields["memory_budget"].setText("1.9")  # a fraction of a byte is refused, not cut off
    assert "whole number of bytes" in dialog.error.text()
    assert not dialog.buttons.button(dialog.buttons.StandardButton.Ok).isEnabled()
    dialog.fields["memory_budget"].setText("0")
    dialog.accept()
    assert window.document.graph.training["memory_budget"] == 0  # a budget that keeps nothing
    dialog = open_settings(window)
    dialog.fields["memory_budget"].setText("")
    dialog.accept()
    assert "memory_budget" not in window.document.graph.training


def test_devices_and_the_data_preview_come_from_a_child_process(qtbot, train_window, tmp_path, open_settings):
    window = train_window()
    import torch

    # a .pt file: train-data's .npz preview fails on numpy 2.4 (numpy.lib.format._read_array_header is gone)
    data = tmp_path / "project" / "tiny.pt"
    torch.save({"x": torch.zeros(20, 3, 16, 16), "y": torch.arange(20) % 10}, data)
    dialog = open_settings(window)
    qtbot.waitUntil(lambda: any(dialog.device.itemData(i) == "cpu" and "threads" in dialog.device.itemText(i)
                                for i in range(dialog.device.count())), timeout=120_000)
    dialog.data_kind.setCurrentIndex(dialog.data_kind.findData("file"))
    dialog.data_path.setText("missing.npz")
    dialog.request_preview()
    qtbot.waitUntil(lambda: "Reading" not in dialog.preview.text(), timeout=120_000)
    assert "missing.npz" in dialog.preview.text()  # the data loader's message names the file
    dialog.data_path.setText("tiny.pt")  # relative to the project file
    dialog.request_preview()
    qtbot.waitUntil(lambda: "Reading" not in dialog.preview.text(), timeout=120_000)
    assert dialog.preview.text() == "20 samples: x 20x3x16x16, y 20; 10 classes"
    dialog.accept()
    assert window.document.graph.training["data"] == "tiny.pt"
    # the snapshot of a run names the same file, made absolute (the snapshot lives in the run folder)
    text = sec.snapshot_text(window.document.graph, window.document.path)
    assert f'"data": "{data.resolve()}"' in text


def test_bad_settings_refuse_train_with_the_reason(qtbot, train_window, dialogs, open_settings):
    window = train_window()
    window.document.push(SetTraining(window.document.graph, {"lr": -1}))
    assert window.training.train() is not None
    assert not window.training.controller.running
    title, text = dialogs.errors[-1]
    assert title == "Cannot train" and "training.lr" in text and "Run Settings" in text

    # ... and they are fixed where the message says: the dialog opens on the bad value, and OK
    # with a good one applies the whole section as one undoable edit
    for bad in ({"lr": -1}, {"memory_budget": "lots"}, {"memory_budget": 1.5}):
        window.document.push(SetTraining(window.document.graph, bad))
        dialog = open_settings(window)
        key = next(iter(bad))
        assert dialog.error.text().startswith(f"training.{key}")
        dialog.fields[key].setText("0.01" if key == "lr" else "64MiB")
        count = window.document.undo_stack.count()
        dialog.accept()
        assert not dialog.isVisible() and window.document.undo_stack.count() == count + 1
        assert sec.validate(window.document.graph.training) is None
        window.document.undo_stack.undo()
        assert window.document.graph.training == bad  # nothing lost either way


def test_a_data_file_that_does_not_exist_is_refused_in_the_dialog_and_by_train(qtbot, train_window, dialogs,
                                                                               tmp_path, open_settings):
    # it was accepted, and Train then started a run that failed reading it
    window = train_window()
    dialog = open_settings(window)
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    dialog.data_kind.setCurrentIndex(dialog.data_kind.findData("file"))
    dialog.data_path.setText("nope.npz")
    where = tmp_path / "project" / "nope.npz"
    assert dialog.error.text() == (f"training.data: no file nope.npz (looked for {where}); choose an existing "
                                   "file with Browse… or pick synthetic data")
    assert not ok.isEnabled()
    count = window.document.undo_stack.count()
    dialog.accept()
    assert dialog.isVisible() and window.document.undo_stack.count() == count  # refused, nothing pushed
    dialog.data_kind.setCurrentIndex(dialog.data_kind.findData("mnist"))
    assert dialog.error.text().startswith("training.data: no folder nope.npz") and not ok.isEnabled()
    (tmp_path / "project" / "digits").mkdir()
    dialog.data_path.setText("digits")
    assert ok.isEnabled(), dialog.error.text()
    dialog.data_kind.setCurrentIndex(dialog.data_kind.findData("synthetic"))
    dialog.val_data.setText(str(tmp_path / "val.pt"))
    assert dialog.error.text() == (f"training.val_data: no file {tmp_path / 'val.pt'}; name an existing file, "
                                   "or leave it empty to hold out the validation fraction")
    dialog.reject()

    # a project file that names missing data: Train refuses with the same message, before any run
    window.document.push(SetTraining(window.document.graph, {**SHORT, "data": "nope.npz"}))
    assert window.training.train() is not None
    assert not window.training.controller.running and window.training.controller.run is None
    title, text = dialogs.errors[-1]
    assert title == "Cannot train" and "no file nope.npz" in text and "Run Settings" in text


def test_synthetic_data_disables_the_path_and_keeps_its_text(qtbot, train_window, tmp_path, open_settings):
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "data.npz").write_bytes(b"")
    window = train_window({**SHORT, "data": "data.npz"})
    dialog = open_settings(window)
    assert dialog.data_path.isEnabled() and dialog.data_path.text() == "data.npz"
    dialog.data_kind.setCurrentIndex(dialog.data_kind.findData("synthetic"))
    assert not dialog.data_path.isEnabled() and dialog.data_path.text() == "data.npz"
    assert dialog.section()["data"] == "synthetic"
    dialog.data_kind.setCurrentIndex(dialog.data_kind.findData("file"))
    assert dialog.data_path.isEnabled() and dialog.section()["data"] == "data.npz"
    dialog.reject()
    dialog = open_settings(train_window())  # a project on synthetic data opens with the field disabled
    assert not dialog.data_path.isEnabled()
    dialog.reject()


def test_the_device_field_takes_the_names_train_and_rs_compile_take(qtbot, train_window, monkeypatch,
                                                                    open_settings):
    """Typed into Run Settings, "mps" or "xpu:0" was refused ("use auto, cpu, cuda or cuda:N") though
    rs.compile takes them; and the list of devices torch sees left out an Apple or Intel GPU."""
    from revstudio.qt.training import probe

    window = train_window()
    dialog = open_settings(window)
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    for name in ("mps", "xpu:0", "cuda:1"):
        dialog.device.setEditText(name)
        assert dialog.problem() is None and ok.isEnabled(), (name, dialog.error.text())
    dialog.device.setEditText("gpu")
    assert "training.device: 'gpu' is not a device torch knows" in (dialog.problem() or "")
    import torch

    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert {"id": "mps", "name": "Apple GPU (MPS)"} in probe.devices()["devices"]
