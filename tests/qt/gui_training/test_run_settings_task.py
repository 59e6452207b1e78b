"""Run Settings says, beside the task box, what a run will optimise and why: under ``auto`` the labels the
data preview read decide a C x T Output's task as the run will (integer N x T labels: a class per step,
where nothing said so and the graph alone reads as regression), and without them the guess says what would
change it; a chosen task names its loss."""
from __future__ import annotations

import numpy as np

from revstudio.core.generate import sequence_tagger

F, T = 4, 10


def _tagger_window(make_window, tmp_path):
    from revstudio.core.project import save
    from revstudio.qt.files import read_project

    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    x = np.random.default_rng(0).standard_normal((16, F, T)).astype(np.float32)
    np.savez(folder / "tags.npz", x=x, y=np.random.default_rng(1).integers(0, 3, (16, T)))
    np.savez(folder / "real.npz", x=x, y=np.zeros((16, 3, T), np.float32))
    g = sequence_tagger(F, T, classes=3)
    g.training = {"version": 1, "data": "synthetic", "steps": 4, "batch_size": 4}
    path = folder / "tagger.revs"
    save(g, str(path))
    return make_window(read_project(str(path)), str(path))


def test_the_task_hint_follows_the_labels_the_preview_read(qtbot, make_window, tmp_path, open_settings,
                                                           settings_preview):
    dialog = open_settings(_tagger_window(make_window, tmp_path))
    hint = dialog.task_hint
    assert hint.isVisibleTo(dialog) and hint.objectName() == "taskHint"
    assert hint.text() == ("auto: regression (mse on 'tags'): synthetic data follow the graph's guess (choose "
                           "classification for a class per step)"), hint.text()
    settings_preview(dialog, "tags.npz")
    qtbot.waitUntil(lambda: "class per step" in hint.text() and hint.text().startswith("auto: classification"))
    assert hint.text() == ("auto: classification per step (3 classes x 10 steps, cross-entropy on 'tags', labels of "
                           "-100 and padding not scored): the data's 'y' (tags.npz) holds 16x10 int64: whole numbers "
                           "for each of the 10 positions of 'tags', a class per step (3 scores a step, channels first)")
    settings_preview(dialog, "real.npz")
    qtbot.waitUntil(lambda: "real values" in hint.text())
    assert hint.text().startswith("auto: regression (mse on 'tags'): the data's 'y' (real.npz) holds 16x3x10 float32")
    dialog.fields["task"].setCurrentIndex(dialog.fields["task"].findData("classification"))
    # asked for classification, real values of the Output's shape are refused, as the run refuses them
    assert hint.text().startswith("classification: refused: real.npz: array 'y' holds 3x10 a sample, Output 'tags' "
                                  "(port 'tags.in') reads 3x10 scores (classes x steps)"), hint.text()
    settings_preview(dialog, "tags.npz")
    qtbot.waitUntil(lambda: "refused" not in hint.text())
    assert hint.text().startswith("classification: classification per step (3 classes x 10 steps"), hint.text()
    dialog.reject()


def test_before_the_labels_are_read_the_guess_says_what_would_change_it(qtbot, make_window, tmp_path, open_settings):
    dialog = open_settings(_tagger_window(make_window, tmp_path))
    dialog.data_kind.setCurrentIndex(dialog.data_kind.findData("file"))
    dialog.data_path.setText("tags.npz")  # (typed: no preview asked yet)
    dialog.preview.answer = None
    dialog.update_task_hint()
    assert dialog.task_hint.text() == ("auto: regression (mse on 'tags'), the graph's guess until the data's labels "
                                       "are read; N x 10 whole numbers would make it a class per step")
    dialog.reject()
