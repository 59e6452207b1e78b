"""A run on class labels per step (sequence tagging) with a padded set's ``lengths``: its loss is the
cross-entropy over the scored steps of the batch, its accuracy counts them only, and ``steps_scored``
says how many, in the step and validation rows, the terminal, ``--json``, status.json, ``revstudio runs``
and ``gradcheck --data``. Such labels were refused before any run started."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from training_kit import Rows

from revstudio import cli
from revstudio.core.generate import sequence_tagger
from revstudio.core.project import save
from revstudio.diagnostics.check import full_check
from revstudio.training.config import TrainConfig
from revstudio.training.data import load_data
from revstudio.training.first_batch import epoch_order
from revstudio.training.loop import train
from revstudio.training.task import infer_task

K, STEPS, N = 3, 10, 48
FLAGS = ["--steps", "2", "--batch-size", "8", "--device", "cpu", "--gradcheck-every", "0", "--memory-every", "0",
         "--val-every", "0", "--log-every", "1"]


def write_tags(folder: Path) -> tuple[str, str]:
    """tagger.revs (``generate.sequence_tagger``) and tags.npz: labels of whether feature 0 is positive
    (plus 1 where feature 1 is above 1) per step, padded past ``lengths`` with 9s that are never scored."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, 4, STEPS)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 1)
    lengths = rng.integers(3, STEPS + 1, N)
    y[np.arange(STEPS)[None, :] >= lengths[:, None]] = 9
    np.savez(folder / "tags.npz", x=x, y=y, lengths=lengths)
    save(sequence_tagger(4, STEPS, K), folder / "tagger.revs")
    return str(folder / "tagger.revs"), str(folder / "tags.npz")


def _scored_mean(model, x: torch.Tensor, y: torch.Tensor) -> tuple[float, int]:
    with torch.no_grad():
        out = model(x)
        out = out[0] if isinstance(out, tuple) else out
    loss = torch.nn.functional.cross_entropy(out.float(), y, ignore_index=-100, reduction="sum")
    return float(loss), int((y != -100).sum())


def test_the_loss_and_accuracy_are_over_the_scored_steps_in_training_and_validation(tmp_path):
    project, spec = write_tags(tmp_path)
    from revstudio.core.project import load

    graph = load(project)
    cfg = TrainConfig.from_section({"data": "tags.npz", "steps": 1, "batch_size": 8, "log_every": 1,
                                    "val_every": 0, "gradcheck_every": 0, "memory_every": 0, "checkpoint_every": 0,
                                    "val_fraction": 0.25, "mode": "standard"})
    report = full_check(graph, batch=8)
    data = load_data(spec, graph, report, task=infer_task(graph, report), val_fraction=0.25, base_dir=str(tmp_path))
    from revstudio.compiler import compile as compile_graph

    torch.manual_seed(cfg.seed)  # the run's own first weights
    first = compile_graph(graph, mode="standard", report=report)
    idx = epoch_order(len(data.train), cfg.seed, 0)[:8]
    total, scored = _scored_mean(first, data.train.inputs["x"][idx], data.train.targets[idx])
    rows = Rows()
    result = train(graph, report, cfg, data, callbacks=[rows])
    assert result.status == "finished"
    step = rows.kind("step")[0]
    assert step["steps_scored"] == scored < 8 * STEPS
    assert abs(step["loss"] - total / scored) < 1e-5
    # validation: every scored step of the 12 samples weighs the same (batches of 8 and 4)
    result.model.eval()
    val_total, val_scored = _scored_mean(result.model, data.val.inputs["x"], data.val.targets)
    val = rows.kind("val")[0]
    assert val["val_steps_scored"] == val_scored and abs(val["val_loss"] - val_total / val_scored) < 1e-5
    with torch.no_grad():
        out = result.model(data.val.inputs["x"])
    y = data.val.targets
    hits = int(((out.argmax(1) == y) & (y != -100)).sum())
    assert abs(val["val_accuracy"] - hits / val_scored) < 1e-9
    assert result.metrics["steps_scored"] == scored and result.metrics["val_steps_scored"] == val_scored


def test_the_cli_says_the_padding_and_the_steps_scored_in_rows_status_and_runs(tmp_path, capsys):
    project, spec = write_tags(tmp_path)
    run = str(tmp_path / "runs" / "r1")
    assert cli.main(["train", project, "--data", spec, *FLAGS, "--out", run, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    started = next(r for r in rows if r.get("event") == "started")
    assert started["task"] == "classification"
    assert "labels: tags.npz: a class per step; loss and accuracy count the" in started["inputs"]
    assert "('lengths' mark the rest); padded steps are still fed to the network" in started["inputs"]
    assert "does not read" not in started["inputs"]
    steps = [r for r in rows if r["kind"] == "step"]
    assert [0 < r["steps_scored"] <= 8 * STEPS for r in steps] == [True, True]
    assert next(r for r in rows if r["kind"] == "val")["val_steps_scored"] > 0
    status = json.loads((Path(run) / "status.json").read_text())
    assert status["metrics"]["steps_scored"] == steps[-1]["steps_scored"]
    assert status["inputs"] == started["inputs"]
    assert cli.main(["runs", str(tmp_path / "runs")]) == 0
    assert f"steps_scored {steps[-1]['steps_scored']}" in capsys.readouterr().out
    assert cli.main(["train", project, "--data", spec, *FLAGS, "--out", str(tmp_path / "r2")]) == 0
    text = capsys.readouterr().out
    assert "data: tags.npz: 43 train / 5 val, x 4x10, 3 classes per step" in text
    assert "note: labels: tags.npz: a class per step" in text and "steps_scored" in text


def test_gradcheck_data_reads_the_per_step_labels(tmp_path, capsys):
    project, spec = write_tags(tmp_path)
    assert cli.main(["gradcheck", project, "--data", spec, "--batch", "4", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    said = json.dumps(answer)
    assert "labels: tags.npz: a class per step" in said and "data_error" not in said


def test_synthetic_data_gives_a_class_per_step_under_task_classification(tmp_path, capsys):
    project, _ = write_tags(tmp_path)
    assert cli.main(["train", project, "--data", "synthetic", "--task", "classification", *FLAGS,
                     "--out", str(tmp_path / "syn"), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["steps_scored"] for r in rows if r["kind"] == "step"] == [8 * STEPS, 8 * STEPS]
    started = next(r for r in rows if r.get("event") == "started")
    assert started["data"].endswith("3 classes per step")
    assert started["inputs"].startswith("labels: synthetic: a class per step; loss and accuracy count the")
    assert "padded" not in started["inputs"]  # (no step left out: nothing to say of padding)
