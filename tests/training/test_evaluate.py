"""``revstudio evaluate`` / ``rs.evaluate``: a trained run's weights scored on data, checked against the
model compiled by hand with the checkpoint's weights on the run's held-out samples: classification (the
accuracy, the confusion matrix, per class), a class per step (scored steps only), regression and a flow."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from training_kit import EXAMPLES, linear_regression

import revstudio as rs
from revstudio import cli
from revstudio.core.generate import sequence_tagger
from revstudio.core.project import load, save
from revstudio.diagnostics.check import full_check
from revstudio.training.config import TrainConfig
from revstudio.training.data import load_data
from revstudio.training.task import infer_task

DIGITS = str(next(p for p in EXAMPLES if p.stem == "digits_revnet"))
GLOW = str(next(p for p in EXAMPLES if p.stem == "glow_flow"))
QUIET = ["--device", "cpu", "--gradcheck-every", "0", "--memory-every", "0", "--val-every", "0", "--json"]


def _train(project: str, out: Path, *flags: str) -> Path:
    assert cli.main(["train", project, "--out", str(out), *QUIET, *flags]) == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    torch.set_num_threads(1)
    here = tmp_path_factory.mktemp("evaluate")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 4, 6)).astype(np.float32)  # a class per step, padded past `lengths`
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 1)
    lengths = rng.integers(2, 7, 60)
    y[np.arange(6)[None, :] >= lengths[:, None]] = 9
    np.savez(here / "tags.npz", x=x, y=y, lengths=lengths)
    save(sequence_tagger(4, 6, 3), here / "tagger.revs")
    xr = rng.standard_normal((80, 4)).astype(np.float32)  # regression: three real targets
    np.savez(here / "reg.npz", x=xr, y=(xr[:, :3] * 2 + 0.5).astype(np.float32))
    g = linear_regression({"task": "regression"})
    save(g, here / "reg.revs")
    made = {
        "digits": _train(DIGITS, here / "digits", "--steps", "20"),
        "tags": _train(str(here / "tagger.revs"), here / "tags", "--steps", "6", "--batch-size", "8",
                       "--data", str(here / "tags.npz"), "--val-fraction", "0.25"),
        "reg": _train(str(here / "reg.revs"), here / "reg", "--steps", "20", "--batch-size", "16",
                      "--data", str(here / "reg.npz"), "--lr", "0.05"),
        "flow": _train(GLOW, here / "flow", "--steps", "4", "--batch-size", "8", "--data", "synthetic"),
    }
    return here, made


def _direct(run: Path):
    """(the model compiled with the checkpoint's weights, in eval mode; the run's validation split; the task)."""
    graph = load(run / "project.revs")
    cfg = TrainConfig.from_section(graph.training)
    report = full_check(graph, batch=cfg.batch_size)
    task = infer_task(graph, report, cfg.task)
    data = load_data(cfg.data, graph, report, task=task, val_spec=cfg.val_data, val_fraction=cfg.val_fraction,
                     seed=cfg.seed, base_dir=str(run), scale_uint8=cfg.scale_uint8)
    model = rs.compile(graph, mode="standard", device="cpu")
    model.load_state_dict(torch.load(run / "checkpoints" / "last.pt", weights_only=True)["model"])
    model.eval()
    with torch.no_grad():
        out = model(*data.val.inputs.values())
    return (out[0] if isinstance(out, tuple) else out), data.val, data.task


def _final(run: Path) -> dict:
    return json.loads((run / "status.json").read_text())["metrics"]


def test_a_classification_is_scored_as_the_compiled_model_scores_its_held_out_samples(runs, capsys) -> None:
    _, made = runs
    run = made["digits"]
    assert cli.main(["evaluate", str(run), "--json", "--worst", "3"]) == 0
    ev = json.loads(capsys.readouterr().out)
    out, val, task = _direct(run)
    pred, labels = out.argmax(dim=1), val.targets
    assert ev["task"] == "classification" and ev["split"] == "validation" and ev["samples"] == len(labels) == 180
    assert ev["accuracy"] == pytest.approx(float((pred == labels).double().mean()), abs=1e-12)
    assert ev["loss"] == pytest.approx(float(torch.nn.functional.cross_entropy(out, labels)), rel=1e-4)
    assert ev["loss"] == pytest.approx(_final(run)["val_loss"], rel=1e-6)  # the very samples training held out
    assert ev["accuracy"] == pytest.approx(_final(run)["val_accuracy"], abs=1e-12)
    matrix = torch.tensor(ev["confusion"])
    assert matrix.shape == (10, 10) and int(matrix.sum()) == 180
    assert torch.equal(matrix, torch.bincount(labels * 10 + pred, minlength=100).reshape(10, 10))
    assert ev["class_counts"] == torch.bincount(labels, minlength=10).tolist()
    for k in range(10):
        mine = labels == k
        assert ev["class_accuracy"][k] == pytest.approx(float((pred[mine] == k).double().mean()), abs=1e-12)
    each = torch.nn.functional.cross_entropy(out, labels, reduction="none")
    assert [w["index"] for w in ev["worst"]] == each.argsort(descending=True)[:3].tolist()
    assert all(w["label"] == int(labels[w["index"]]) and w["prediction"] == int(pred[w["index"]])
               for w in ev["worst"])
    saved = json.loads(Path(ev["saved"]).read_text())  # the run folder keeps it, as printed
    assert Path(ev["saved"]).parent == run / "evaluations" and saved == ev
    assert cli.main(["evaluate", str(run), "--no-save"]) == 0
    text = capsys.readouterr().out
    assert "confusion matrix (rows: true class, columns: predicted):" in text
    assert f"accuracy {100 * ev['accuracy']:.1f} %" in text and "saved:" not in text
    assert len(os.listdir(run / "evaluations")) == 1


def test_a_class_per_step_counts_the_scored_steps_only(runs, capsys) -> None:
    _, made = runs
    ev = rs.evaluate(made["tags"], save=False)
    out, val, _ = _direct(made["tags"])
    labels = val.targets
    scored = labels != -100
    pred = out.argmax(dim=1)
    assert ev["per"] == "step" and ev["scored"] == int(scored.sum()) < labels.numel()
    assert ev["correct"] == int(((pred == labels) & scored).sum())
    assert sum(map(sum, ev["confusion"])) == ev["scored"]
    assert ev["loss"] == pytest.approx(float(torch.nn.functional.cross_entropy(out, labels, ignore_index=-100)),
                                       rel=1e-4)
    assert ev["loss"] == pytest.approx(_final(made["tags"])["val_loss"], rel=1e-6)
    worst = ev["worst"][0]
    i = worst["index"]
    assert worst["scored"] == int(scored[i].sum())
    assert worst["accuracy"] == pytest.approx(float((pred[i][scored[i]] == labels[i][scored[i]]).double().mean()))
    assert "accuracy of its steps" in repr(ev)


def test_a_regression_gives_its_mse_and_mae(runs) -> None:
    _, made = runs
    ev = rs.evaluate(str(made["reg"]), save=False)
    out, val, _ = _direct(made["reg"])
    assert ev["task"] == "regression" and "accuracy" not in ev
    assert ev["mse"] == pytest.approx(float(((out - val.targets) ** 2).mean()), rel=1e-5)
    assert ev["mae"] == pytest.approx(float((out - val.targets).abs().mean()), rel=1e-5)
    assert ev["mse"] == pytest.approx(_final(made["reg"])["val_loss"], rel=1e-6)
    assert "mse" in repr(ev) and "mae" in repr(ev)


def test_a_flow_gives_its_bits_per_dimension_as_validation_did(runs) -> None:
    _, made = runs
    ev = rs.evaluate(made["flow"], save=False)
    assert ev["task"] == "flow" and ev["loss_name"] == "nll"
    assert ev["bits_per_dim"] == pytest.approx(_final(made["flow"])["val_loss"], rel=1e-5)
    assert len(ev["worst"]) == 5 and ev["worst"][0]["loss"] >= ev["worst"][-1]["loss"]


def test_test_data_a_checkpoint_file_and_a_state_dict_with_its_project(runs, capsys, tmp_path) -> None:
    here, made = runs
    run = made["reg"]
    whole = rs.evaluate(run, data=str(here / "reg.npz"), save=False)  # every sample of a test file
    assert whole["split"] == "all" and whole["samples"] == 80
    by_file = rs.evaluate(run / "checkpoints" / "last.pt", save=False)  # its snapshot comes with it
    assert by_file["mse"] == pytest.approx(rs.evaluate(run, save=False)["mse"], rel=1e-12)
    torch.save(torch.load(run / "checkpoints" / "last.pt", weights_only=True)["model"], tmp_path / "sd.pt")
    assert cli.main(["evaluate", str(tmp_path / "sd.pt"), "--data", str(here / "reg.npz")]) == 2
    assert "--project FILE" in capsys.readouterr().err
    bare = rs.evaluate(tmp_path / "sd.pt", project=here / "reg.revs", data=here / "reg.npz")
    assert bare["mse"] == pytest.approx(whole["mse"], rel=1e-12) and bare["saved"] is None


def test_bad_input_is_a_message_naming_the_file_never_a_traceback(runs, capsys, tmp_path) -> None:
    here, made = runs
    assert cli.main(["evaluate", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such run folder or file" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "project.revs").write_text((made["reg"] / "project.revs").read_text())
    assert cli.main(["evaluate", str(empty), "--json"]) == 2
    err = json.loads(capsys.readouterr().out)
    assert "saved no checkpoint (no checkpoints/last.pt)" in err["error"] and err["exit_code"] == 2
    assert cli.main(["evaluate", str(made["reg"]), "--data", str(here / "tags.npz")]) == 2  # another network's
    err = capsys.readouterr().err
    assert "tags.npz" in err and "the data must fit the network the run trained" in err and "Traceback" not in err
    other = torch.load(made["tags"] / "checkpoints" / "last.pt", weights_only=True)
    other["versions"]["revstudio"] = "0.0.1"  # another revstudio's run of another network
    torch.save(other, tmp_path / "old.pt")
    assert cli.main(["evaluate", str(made["reg"]), "--checkpoint", str(tmp_path / "old.pt")]) == 2
    err = capsys.readouterr().err
    assert "old.pt: the weights do not fit the network" in err and "saved by revstudio 0.0.1" in err

    newer = tmp_path / "newer"  # a run another revstudio made, whose project this one cannot read
    shutil.copytree(made["reg"], newer)
    project = json.loads((newer / "project.revs").read_text())
    (newer / "project.revs").write_text(json.dumps({**project, "version": 99}))
    assert cli.main(["evaluate", str(newer)]) == 2
    err = capsys.readouterr().err
    assert "newer/project.revs: made by a newer revstudio" in err and "Traceback" not in err
    with pytest.raises(FileNotFoundError, match="no such run folder"):
        rs.evaluate(tmp_path / "nowhere")


def test_a_project_given_instead_of_a_run_is_named_as_one(runs, capsys) -> None:
    """A new user's guess, `evaluate model.revs`, or the project.revs inside a run folder: torch's 'not a
    readable checkpoint (UnpicklingError)' told neither what the file is nor what to give instead."""
    here, made = runs
    assert cli.main(["evaluate", str(here / "reg.revs")]) == 2
    err = capsys.readouterr().err
    assert "reg.revs: is a project, not a trained run" in err and f"'revstudio train {here / 'reg.revs'}'" in err
    assert "UnpicklingError" not in err
    snapshot = made["reg"] / "project.revs"
    assert cli.main(["evaluate", str(snapshot), "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert "is the project snapshot of a run, not its weights" in err
    assert err.endswith(f"give the run folder: revstudio evaluate {made['reg']}")
    with pytest.raises(ValueError, match="is a project, not a trained run"):
        rs.evaluate(here / "reg.revs")
    copy = here / "reg_copy.json"  # a project by its content, whatever its name (as the checkpoint reader sees it)
    shutil.copy(here / "reg.revs", copy)
    assert cli.main(["evaluate", str(copy)]) == 2
    err = capsys.readouterr().err
    assert "reg_copy.json: is a project, not a trained run" in err and "Traceback" not in err


def test_many_classes_list_their_largest_confusions_instead_of_the_matrix() -> None:
    from revstudio.clicmd.evaluate import MATRIX_CLASSES, text_lines

    classes = MATRIX_CLASSES + 5
    matrix = [[10 if t == p else 0 for p in range(classes)] for t in range(classes)]
    matrix[3][5], matrix[7][1], matrix[2][9] = 12, 4, 4
    result = {"checkpoint": "c.pt", "step": 1, "mode": "standard", "device": "cpu", "split": "test", "samples": 270,
              "data": "t.npz", "task": "classification", "per": "sample", "loss": 0.5, "loss_name": "cross-entropy",
              "accuracy": 250 / 270, "correct": 250, "scored": 270, "class_counts": [sum(r) for r in matrix],
              "class_accuracy": [r[i] / sum(r) for i, r in enumerate(matrix)], "confusion": matrix, "worst": []}
    lines = text_lines(result)
    assert "confusion matrix (rows: true class, columns: predicted):" not in lines
    at = lines.index(f"largest confusions ({classes} classes; the whole matrix is in --json):")
    assert lines[at + 1:at + 4] == ["  true 3 predicted as 5: 12", "  true 2 predicted as 9: 4",
                                    "  true 7 predicted as 1: 4"]
