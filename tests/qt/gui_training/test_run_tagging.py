"""Class labels per step in the app: Run Settings' preview of a padded tagging set says its
``lengths`` mark steps not scored and that padded steps are still fed (it listed them as not read),
and the run's start note on the scored steps reaches the Log once."""
from __future__ import annotations

import numpy as np

NOTE = ("labels: tags.npz: a class per step; loss and accuracy count the 200 scored steps of 240 ('lengths' mark "
        "the rest); padded steps are still fed to the network (a BiRNN's backward direction reads them, a Pool "
        "averages them): only the loss leaves them out")


def test_the_preview_says_the_lengths_of_per_step_labels_leave_padded_steps_unscored(qtbot, make_window, tmp_path,
                                                                                   open_settings, settings_preview):
    from revstudio.core.generate import sequence_tagger
    from revstudio.core.project import save

    save(sequence_tagger(4, 10, 2), tmp_path / "tagger.revs")
    window = make_window(sequence_tagger(4, 10, 2), str(tmp_path / "tagger.revs"))
    lengths = np.arange(24) % 10 + 1
    y = np.where(np.arange(10)[None, :] < lengths[:, None], 1, -100)
    np.savez(tmp_path / "tags.npz", x=np.zeros((24, 4, 10), np.float32), y=y, lengths=lengths)
    dialog = open_settings(window)
    text = settings_preview(dialog, "tags.npz")
    assert text.startswith("24 samples: lengths 24, x 24x4x10, y 24x10; 2 classes"), text
    assert "; lengths: steps past each length are not scored if the labels are a class per step" in text
    assert text.endswith("padded steps are still fed to the network") and "not read" not in text
    dialog.reject()


def test_the_log_says_which_steps_are_scored_once(qtbot, fake_run):
    window = fake_run({"steps": 5, "log_every": 1}, inputs=NOTE)
    log = window.bottom.log.toPlainText()
    assert log.count("a class per step; loss and accuracy count the 200 scored steps of 240") == 1
    assert "padded steps are still fed to the network" in log
