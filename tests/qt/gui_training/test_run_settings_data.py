"""Run > Run Settings: the data preview says, before Train is pressed, when the chosen file does
not fit the graph's Input node (and what to change), as ``revstudio train`` would refuse it.

The preview listed the arrays' shapes (``x 20x16x16x3``) and left the user to find out from a
failed run that the Input node 'image' expects 3x16x16.
"""
from __future__ import annotations

import numpy as np


def test_the_preview_says_when_the_data_do_not_fit_the_input_node(qtbot, train_window, tmp_path, open_settings,
                                                                  settings_preview):
    window = train_window()
    folder = tmp_path / "project"
    np.savez(folder / "hwc.npz", x=np.zeros((20, 16, 16, 3), "float32"), y=np.arange(20) % 10)
    np.savez(folder / "ok.npz", x=np.zeros((20, 3, 16, 16), "float32"), y=np.arange(20) % 10)
    dialog = open_settings(window)
    text = settings_preview(dialog, "hwc.npz")
    assert text.startswith("20 samples: x 20x16x16x3, y 20; 10 classes<br><span")
    assert ("array 'x' has samples of shape 16x16x3 (array 20x16x16x3), Input node 'image' expects 3x16x16"
            in text and "numpy.transpose(x, (0, 3, 1, 2))" in text)
    assert settings_preview(dialog, "ok.npz") == "20 samples: x 20x3x16x16, y 20; 10 classes"
    dialog.reject()


def test_the_preview_checks_a_pt_file_against_the_input_node_too(qtbot, train_window, tmp_path, open_settings,
                                                                 settings_preview):
    import torch

    window = train_window()
    torch.save({"inputs": torch.zeros(20, 3, 16, 16), "y": torch.arange(20) % 10}, tmp_path / "project" / "d.pt")
    dialog = open_settings(window)
    text = settings_preview(dialog, "d.pt")
    assert text.startswith("20 samples: inputs 20x3x16x16, y 20; 10 classes<br><span")
    assert "missing array 'x' (the inputs of Input node 'image', N first); found inputs, y" in text
    assert "torch.save({'x': inputs, 'y': targets}, path)" in text
    dialog.reject()


def test_the_preview_says_how_a_large_file_is_read():
    from revstudio.qt.training.section import preview_text

    answer = {"samples": 9, "arrays": {"x": [9, 4], "y": [9]}, "classes": 3, "reading": "x mapped (read as used)"}
    assert preview_text(answer, True) == "9 samples: x 9x4, y 9; 3 classes; x mapped (read as used)"
    assert preview_text({**answer, "reading": "read whole"}, True).endswith("; 3 classes; read whole")


def test_the_preview_names_the_arrays_no_run_reads():
    """A padded sequence set's lengths and mask were listed beside x and y as if a run used them."""
    from revstudio.qt.training.section import preview_text

    answer = {"samples": 9, "arrays": {"x": [9, 4, 12], "y": [9], "lengths": [9], "mask": [9, 12]},
              "classes": 3, "kind": "npz"}
    text = preview_text(answer, True, ["seq"])
    assert text.startswith("9 samples: x 9x4x12, y 9, lengths 9, mask 9x12; 3 classes; not read: lengths, mask")
    assert "'lengths' and 'mask' are read for N x T labels of a class per step only" in text
    tags = preview_text({**answer, "arrays": {**answer["arrays"], "y": [9, 12]}}, True, ["seq"])
    assert tags.endswith("; lengths and mask: steps past each length or where the mask is 0 are not scored if the "
                         "labels are a class per step (loss and accuracy leave them out); padded steps are still "
                         "fed to the network")
    assert "not read" not in tags
    ids = preview_text({**answer, "arrays": {"a": [9, 4], "b": [9, 4], "x": [9, 4], "y": [9]}}, True, ["a", "b"])
    assert ids.endswith("; not read: x (a run reads the inputs and 'y')")
    assert "not read" not in preview_text({**answer, "arrays": {"x": [9, 4], "y": [9]}}, True, ["seq"])
