"""``task: auto`` read a C x T Output as regression until a run read integer labels: ``revstudio check`` said
"regression" for a tagger whose data hold a class per step. Now the labels' header (shape and number type,
nothing scanned) decides it before any run, as the run will, and says why; without data, or where a header
cannot tell, the graph's guess stands with its "under auto the labels decide" words."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from revstudio import cli
from revstudio.core.generate import sequence_tagger
from revstudio.core.project_write import save
from revstudio.diagnostics.check import full_check
from revstudio.training.task import DataError, infer_task, labels_decide

F, T, C = 4, 10, 3


def _tagger(folder: Path, y: np.ndarray | None, data: str = "tags.npz") -> str:
    g = sequence_tagger(F, T, classes=C)
    g.set_training({"version": 1, "data": data, "batch_size": 4, "seed": 1})
    path = folder / "tagger.revs"
    save(g, path)
    if y is not None:
        x = np.random.default_rng(0).standard_normal((16, F, T)).astype(np.float32)
        np.savez(folder / "tags.npz", x=x, y=y)
    return str(path)


def _task(path: str, capsys: pytest.CaptureFixture[str]) -> dict:
    assert cli.main(["check", path, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["task"]


def test_integer_labels_per_step_make_check_say_classification_per_step(tmp_path, capsys) -> None:
    path = _tagger(tmp_path, np.random.default_rng(1).integers(0, C, (16, T)))
    assert cli.main(["check", path]) == 0
    assert ("training task (auto): classification, cross-entropy on 'tags': the data's 'y' (tags.npz) holds 16x10 "
            "int64: whole numbers for each of the 10 positions of 'tags', a class per step (3 scores a step, "
            "channels first); under auto the labels decide (the graph alone reads as regression)"
            ) in capsys.readouterr().out
    # the run agrees: the same task from the same file
    cfg_task = _task(path, capsys)
    g = sequence_tagger(F, T, classes=C)
    report = full_check(g, batch=4)
    from revstudio.training.data import load_data

    data = load_data("tags.npz", g, report, task=infer_task(g, report), base_dir=str(tmp_path))
    assert (data.task.kind, data.task.unit) == (cfg_task["kind"], "step")


def test_real_targets_of_the_outputs_shape_stay_regression_and_say_why(tmp_path, capsys) -> None:
    path = _tagger(tmp_path, np.zeros((16, C, T), np.float32))
    got = _task(path, capsys)
    assert got["kind"] == "regression" and got["why"].startswith(
        "the data's 'y' (tags.npz) holds 16x3x10 float32: real values of the shape 'tags' reads (3x10), regression "
        "targets; under auto the labels decide"), got
    assert "reads as" not in got["why"]


def test_without_readable_labels_the_graphs_guess_stands_with_what_would_change_it(tmp_path, capsys) -> None:
    for y, data in ((None, "tags.npz"), (None, "synthetic")):
        got = _task(_tagger(tmp_path, y, data), capsys)
        assert got["kind"] == "regression" and "labels" not in got
        assert got["why"].endswith("; N x 10 integers: a class per step)"), got["why"]


def test_labels_decide_reads_numpy_and_torch_names_and_leaves_a_requested_task_alone() -> None:
    g = sequence_tagger(F, T, classes=C)
    report = full_check(g, batch=4)
    guess = infer_task(g, report)
    for dtype in ("int64", "torch.int64", "uint8", "int32"):
        decided = labels_decide(guess, [16, T], dtype, "d.pt")
        assert decided is not None and decided[0].kind == "classification" and decided[0].per_step, dtype
    # labels a run refuses are refused in its words, for a requested task too (tests/training/test_label_fit_callers.py)
    with pytest.raises(DataError, match=r"^d\.npz: array 'y' has targets of shape 10, Output 'tags' reads 3x10$"):
        labels_decide(guess, [16, T], "float32", "d.npz")
    with pytest.raises(DataError, match=r"^d\.npz: array 'y' holds 11 labels a sample: Output 'tags'"):
        labels_decide(guess, [16, T + 1], "int64", "d.npz")
    with pytest.raises(DataError, match="has targets of shape 10, Output 'tags' reads 3x10"):
        labels_decide(infer_task(g, report, "regression"), [16, T], "int64", "d.npz")
    assert labels_decide(infer_task(g, report, "regression"), [16, C, T], "int64", "d.npz") is None  # (as asked)


@pytest.mark.parametrize("y", [np.ones((16, T), np.int64), np.ones((16, T), np.uint8), np.zeros((16, C, T), np.float32)],
                         ids=["int64 per step", "uint8 per step", "float targets"])
def test_what_check_says_is_what_the_run_decides(tmp_path, capsys, y) -> None:
    from revstudio.training.data import load_data

    said = _task(_tagger(tmp_path, y), capsys)
    g = sequence_tagger(F, T, classes=C)
    report = full_check(g, batch=4)
    data = load_data("tags.npz", g, report, task=infer_task(g, report), base_dir=str(tmp_path))
    assert said["kind"] == data.task.kind and "labels" in said
