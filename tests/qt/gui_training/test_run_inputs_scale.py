"""What became of a run's uint8 inputs (scaled to [0, 1], or kept raw) reaches the Log, in the
editor's words; Run Settings holds the setting as a box, saved only when it differs from the default."""
from __future__ import annotations

from pathlib import Path

import numpy as np

NOTE = ("inputs: uint8 scaled to [0, 1] (x: k / 255, as mnist: and cifar10: read pixels); --no-scale-uint8 keeps "
        "them raw 0..255")


def test_the_log_says_the_uint8_inputs_were_scaled_once(qtbot, fake_run):
    window = fake_run({"steps": 5, "log_every": 1}, inputs=NOTE)
    log = window.bottom.log.toPlainText()
    assert log.count("inputs: uint8 scaled to [0, 1]") == 1
    assert ('"scale uint8 inputs to [0, 1]" off keeps them raw 0..255 (Run > Run Settings)' in log
            and "--no-scale-uint8" not in log)


def test_a_run_on_other_inputs_says_nothing_of_scaling(qtbot, fake_run):
    window = fake_run({"steps": 3, "log_every": 1})
    assert "uint8" not in window.bottom.log.toPlainText()


def test_run_settings_keep_raw_bytes_with_the_box_unticked(qtbot, train_window, open_settings):
    window = train_window()
    dialog = open_settings(window)
    box = dialog.fields["scale_uint8"]
    assert box.isChecked()  # (the default: scaled)
    box.setChecked(False)
    dialog.accept()
    assert window.document.graph.training["scale_uint8"] is False
    dialog = open_settings(window)
    assert not dialog.fields["scale_uint8"].isChecked()
    dialog.fields["scale_uint8"].setChecked(True)
    dialog.accept()
    assert "scale_uint8" not in window.document.graph.training


def test_the_data_preview_says_what_a_run_does_with_uint8_inputs_as_the_box_says(qtbot, train_window, open_settings,
                                                                                 settings_preview):
    window = train_window()
    folder = Path(window.document.path).parent
    np.savez(folder / "u8.npz", x=np.zeros((20, 3, 16, 16), "uint8"), y=(np.arange(20) % 10).astype("uint8"))
    dialog = open_settings(window)
    assert settings_preview(dialog, "u8.npz") == "20 samples: x 20x3x16x16, y 20; 10 classes; uint8 x: scaled to [0, 1]"
    dialog.fields["scale_uint8"].setChecked(False)
    assert dialog.preview.text().endswith("; uint8 x: kept raw 0..255")
    dialog.reject()
