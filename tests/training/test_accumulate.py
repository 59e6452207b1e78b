"""Gradient accumulation: ``training.accumulate`` / ``--accumulate K`` sum the gradients of K micro-batches
of ``batch_size`` per optimizer step, so a step sees ``batch_size x K`` samples at the memory of one
micro-batch. The same gradients and weights as one batch of K x B (standard mode, float64); the peak
of a micro-batch; epochs, samples_per_s and resume counted in optimizer steps; bad values refused."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from training_kit import EXAMPLES

from revstudio import cli
from revstudio.core.graph import Graph
from revstudio.core.project import save
from revstudio.training.config import ConfigError, TrainConfig
from revstudio.training.runs import read_metrics

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))
QUIET = ["--device", "cpu", "--gradcheck-every", "0", "--memory-every", "0", "--json"]


@pytest.fixture(scope="module")
def float64_project(tmp_path_factory):
    """A float64 regression (4 -> Linear 8 -> Tanh -> Linear 3) on 96 samples, no validation."""
    torch.set_num_threads(1)
    here = tmp_path_factory.mktemp("accumulate")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((96, 4))
    np.savez(here / "reg.npz", x=x, y=np.tanh(x[:, :3] * 2 + 0.5))
    g = Graph("reg")
    g.add_node("Input", "x", {"shape": [4], "dtype": "float64"})
    g.add_node("Linear", "fc1", {"out_features": 8})
    g.add_node("Activation", "act", {"fn": "tanh"})
    g.add_node("Linear", "fc2", {"out_features": 3})
    g.add_node("Output", "y")
    for a, b in (("x", "fc1"), ("fc1", "act"), ("act", "fc2"), ("fc2", "y")):
        g.connect(f"{a}.out", f"{b}.in")
    g.training = {"task": "regression", "data": "reg.npz", "val_fraction": 0.0, "val_every": 0,
                  "mode": "standard", "optimizer": "sgd", "lr": 0.2, "log_every": 1}
    save(g, here / "reg.revs")
    return here


def _run(project, name: str, capsys, *flags: str) -> tuple[list[dict], dict]:
    assert cli.main(["train", str(project / "reg.revs"), "--out", str(project / name), *QUIET, *flags]) == 0
    capsys.readouterr()
    state = torch.load(project / name / "checkpoints" / "last.pt", weights_only=True)
    return read_metrics(str(project / name)), state


def test_k_micro_batches_of_b_train_as_one_batch_of_k_times_b(float64_project, capsys) -> None:
    rows4, four = _run(float64_project, "four", capsys, "--batch-size", "8", "--accumulate", "4", "--steps", "7")
    rows1, one = _run(float64_project, "one", capsys, "--batch-size", "32", "--steps", "7")
    assert four["model"]["fc1.weight"].dtype == torch.float64
    for key, value in one["model"].items():
        assert torch.allclose(four["model"][key], value, rtol=0, atol=1e-10), key
    # (after 7 steps the weights moved: equal weights are equal gradients, step after step)
    assert (one["model"]["fc2.weight"] - four["model"]["fc2.weight"]).abs().max() < 1e-10
    steps4 = [r for r in rows4 if r["kind"] == "step"]
    steps1 = [r for r in rows1 if r["kind"] == "step"]
    assert [r["step"] for r in steps4] == list(range(1, 8))  # steps count optimizer steps
    assert [r["epoch"] for r in steps4] == [r["epoch"] for r in steps1] == [round(s / 3, 4) for s in range(1, 8)]
    # (the loss figure is float32: the loss function reports it so)
    assert [r["loss"] for r in steps4] == pytest.approx([r["loss"] for r in steps1], rel=1e-6)
    assert four["data"]["steps_per_epoch"] == one["data"]["steps_per_epoch"] == 3  # 96 // (8 x 4)
    started = next(r for r in rows4 if r.get("event") == "started")
    assert started["steps_per_epoch"] == 3 and started["config"]["accumulate"] == 4
    assert started["batch_size"] == 8  # the micro-batch, what a process holds at once
    # samples_per_s counts every micro-batch's samples: about the same speed as the one batch of 32
    rate4 = sum(r["samples_per_s"] for r in steps4) / 7
    rate1 = sum(r["samples_per_s"] for r in steps1) / 7
    assert rate1 / 5 < rate4 < rate1 * 5


def test_a_resumed_accumulating_run_continues_as_if_never_stopped(float64_project, capsys) -> None:
    common = ["--batch-size", "8", "--accumulate", "3", "--optimizer", "adam", "--lr", "0.01"]
    _, whole = _run(float64_project, "whole", capsys, *common, "--steps", "9")
    _run(float64_project, "half", capsys, *common, "--steps", "4")
    assert cli.main(["train", "--resume", str(float64_project / "half"), "--json", "--steps", "9"]) == 0
    capsys.readouterr()
    rest = torch.load(float64_project / "half" / "checkpoints" / "last.pt", weights_only=True)
    assert rest["step"] == 9 and all(torch.equal(whole["model"][k], rest["model"][k]) for k in whole["model"])


def test_the_measured_peak_is_one_micro_batchs(tmp_path, capsys) -> None:
    """Four micro-batches of 8 peak at about one batch of 8's memory, far below one batch of 32's."""
    peaks = {}
    for name, flags in (("k4", ["--batch-size", "8", "--accumulate", "4"]), ("b8", ["--batch-size", "8"]),
                        ("b32", ["--batch-size", "32"])):
        assert cli.main(["train", EXAMPLE, "--out", str(tmp_path / name), "--device", "cpu", "--json",
                         "--steps", "1", "--memory-every", "1", "--gradcheck-every", "0", "--val-every", "0",
                         *flags]) == 0
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        step = next(r for r in rows if r["kind"] == "step")
        peaks[name] = (step["peak_bytes"], step["estimate_bytes"])
    assert peaks["k4"][1] == peaks["b8"][1]  # the estimate is a micro-batch's
    assert peaks["k4"][0] <= peaks["b8"][0] * 1.1, peaks  # (.grad sums in place: a little more at most)
    assert peaks["b32"][0] > peaks["k4"][0] * 2, peaks


def test_bad_values_are_refused_naming_the_setting(float64_project, capsys) -> None:
    for value, words in ((0, "training.accumulate: 0 is too small; use at least 1 micro-batch"),
                         (-2, "training.accumulate: -2 is too small"),
                         (2.5, "training.accumulate: expected a whole number"),
                         ("4", "training.accumulate: expected a whole number")):
        with pytest.raises(ConfigError) as caught:
            TrainConfig.from_section({"accumulate": value})
        assert str(caught.value).startswith(words) and caught.value.key == "accumulate"
    assert TrainConfig.from_section({"accumulate": 4}).to_section() == {"version": 3, "accumulate": 4}
    for value in ("0", "-1", "1.5"):
        assert cli.main(["train", str(float64_project / "reg.revs"), "--accumulate", value]) == 2
        err = capsys.readouterr().err
        assert "argument --accumulate: " in err and value in err, err
    # more samples a step than the data holds: said before anything trains, no run folder left
    assert cli.main(["train", str(float64_project / "reg.revs"), "--batch-size", "32", "--accumulate", "4",
                     "--device", "cpu", "--out", str(float64_project / "too_many")]) == 2
    err = capsys.readouterr().err
    assert "accumulate 4 micro-batches of batch size 32 needs 128 training samples a step, and there are 96; " \
           "lower --accumulate" in err, err
    assert not (float64_project / "too_many").exists()


def test_a_grad_scaler_steps_once_per_optimizer_step(float64_project, capsys, monkeypatch) -> None:
    """fp16's GradScaler (here a CPU one standing in for CUDA's): each micro-batch's loss scaled, the
    optimizer stepped and the scale updated once a step, and the same weights as one batch of 32."""
    import contextlib

    from revstudio.training import loop

    calls = {"scale": 0, "step": 0, "update": 0}

    class Counted(torch.amp.GradScaler):
        def scale(self, outputs):  # type: ignore[override]
            calls["scale"] += 1
            return super().scale(outputs)

        def step(self, optimizer, *args, **kwargs):  # type: ignore[override]
            calls["step"] += 1
            return super().step(optimizer, *args, **kwargs)

        def update(self, new_scale=None):  # type: ignore[override]
            calls["update"] += 1
            return super().update(new_scale)

    monkeypatch.setattr(loop, "precision_context", lambda cfg, device: (contextlib.nullcontext, Counted("cpu")))
    _, four = _run(float64_project, "scaled4", capsys, "--batch-size", "8", "--accumulate", "4", "--steps", "3")
    assert calls == {"scale": 12, "step": 3, "update": 3}
    _, one = _run(float64_project, "scaled1", capsys, "--batch-size", "32", "--steps", "3")
    for key, value in one["model"].items():
        assert torch.allclose(four["model"][key], value, rtol=0, atol=1e-10), key
