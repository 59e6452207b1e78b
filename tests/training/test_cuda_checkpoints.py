"""Checkpoints that cross machines: a run trained on a CUDA machine (its file's storages tagged ``cuda:0``,
which plain ``torch.load`` refuses here) is resumed, fine-tuned from, evaluated, exported and gradchecked on
this CPU-only one; a resume on another device says so, and what that means for its random draws."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from cuda_kit import as_if_from_cuda, cannot_load_plainly, saved_as_cuda
from training_kit import EXAMPLES

import revstudio as rs
from revstudio import cli

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))
QUICK = ["--batch-size", "8", "--device", "cpu", "--val-every", "0", "--gradcheck-every", "0",
         "--memory-every", "0", "--checkpoint-every", "0"]


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory) -> Path:
    """A 2-step Adam run whose last checkpoint is as a CUDA machine wrote it."""
    torch.set_num_threads(1)
    run = tmp_path_factory.mktemp("cuda") / "run"
    assert cli.main(["train", EXAMPLE, "--steps", "2", "--optimizer", "adam", *QUICK, "--out", str(run),
                     "--json"]) == 0
    as_if_from_cuda(run)
    return run


def _copy(run: Path, where: Path) -> Path:
    shutil.copytree(run, where)
    return where


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_the_fixture_is_a_file_plain_torch_cannot_load_here(gpu_run) -> None:
    words = cannot_load_plainly(gpu_run / "checkpoints" / "last.pt")
    assert "map_location" in words


def test_a_cuda_run_resumes_here_with_adams_moments_on_the_cpu_and_says_what_changed(gpu_run, tmp_path,
                                                                                     capsys) -> None:
    run = _copy(gpu_run, tmp_path / "run")
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(run), "--steps", "4", "--device", "cpu", "--json"]) == 0
    started = next(r for r in _rows(capsys.readouterr().out) if r.get("event") == "started")
    assert started["device"] == "cpu" and started["resumed_at"] == 2
    notes = started["device_notes"]
    assert len(notes) == 1 and "cuda:0" in notes[0] and "cpu" in notes[0]
    assert "CUDA random state" in notes[0] and "dropout" in notes[0]
    resumed = torch.load(run / "checkpoints" / "last.pt", weights_only=True)  # (written here: plain again)
    assert resumed["step"] == 4 and resumed["device"] == "cpu"
    moments = [t for s in resumed["optimizer"]["state"].values() for k, t in s.items() if k != "step"]
    assert moments and all(t.device.type == "cpu" for t in moments)
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(run), "--steps", "5", "--device", "cpu"]) == 0
    out = capsys.readouterr()
    assert "cuda:0" not in out.out + out.err  # (a resume on the device of the run's last start says nothing)


def test_a_resume_in_words_names_both_devices(gpu_run, tmp_path, capsys) -> None:
    run = _copy(gpu_run, tmp_path / "run")
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(run), "--steps", "3", "--device", "cpu"]) == 0
    text = capsys.readouterr()
    assert "note: the run trained on cuda:0 before and goes on on cpu" in text.out + text.err


def test_a_checkpoint_of_before_the_device_was_recorded_tells_it_by_its_storages(gpu_run, tmp_path) -> None:
    from revstudio.training import checkpoint as ckpt

    path = tmp_path / "old.pt"
    data = torch.load(gpu_run / "checkpoints" / "last.pt", map_location="cpu", weights_only=True)
    del data["device"]
    with saved_as_cuda():
        torch.save(data, path)
    assert ckpt.trained_on(ckpt.load(str(path))) == "cuda:0"
    torch.save(data, path)
    assert ckpt.trained_on(ckpt.load(str(path))) == "cpu"


def test_init_evaluate_export_and_gradcheck_take_a_cuda_run_here(gpu_run, tmp_path, capsys) -> None:
    weights = torch.load(gpu_run / "checkpoints" / "last.pt", map_location="cpu", weights_only=True)["model"]
    new = tmp_path / "new"
    assert cli.main(["train", EXAMPLE, "--steps", "1", *QUICK, "--optimizer", "sgd", "--lr", "1e-9",
                     "--momentum", "0", "--init", str(gpu_run), "--out", str(new), "--json"]) == 0
    started = torch.load(new / "checkpoints" / "last.pt", weights_only=True)["model"]
    assert all(torch.allclose(started[k], weights[k], atol=1e-6) for k in weights)
    capsys.readouterr()
    assert cli.main(["evaluate", str(gpu_run), "--device", "cpu", "--no-save", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["step"] == 2
    for source in (["export", str(gpu_run)], ["export", EXAMPLE, "--weights", str(gpu_run)]):
        out = tmp_path / f"shipped{len(source)}.py"
        assert cli.main([*source, "-o", str(out), "--json"]) == 0
        shipped = torch.load(out.with_suffix(".pt"), weights_only=True)  # (plain: a CPU file)
        assert all(torch.equal(shipped[k], weights[k]) for k in weights)
    capsys.readouterr()
    assert cli.main(["gradcheck", EXAMPLE, "--checkpoint", str(gpu_run), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["step"] == 2


def test_the_python_loaders_take_a_cuda_file_here(gpu_run, tmp_path) -> None:
    bare = tmp_path / "bare.pt"
    weights = torch.load(gpu_run / "checkpoints" / "last.pt", map_location="cpu", weights_only=True)["model"]
    with saved_as_cuda():
        torch.save(weights, bare)
    cannot_load_plainly(bare)
    model = rs.compile(rs.load(EXAMPLE), device="cpu")
    rs.load_weights(model, str(bare))
    assert all(torch.equal(model.state_dict()[k], weights[k]) for k in weights)
    scored = rs.evaluate(str(gpu_run), device="cpu", save=False)
    assert scored["step"] == 2


@pytest.mark.filterwarnings("ignore:for .* copying from a non-meta parameter")
def test_a_cpu_checkpoint_resumed_on_another_device_has_its_state_mapped_there(gpu_run) -> None:
    """The reverse (a laptop's checkpoint resumed with --device cuda), the GPU faked by torch's meta device:
    restore puts the weights and Adam's moments on the device the run's model lives on."""
    from revstudio.training import checkpoint as ckpt
    from revstudio.training.config import TrainConfig
    from revstudio.training.parts import make_optimizer

    resume = ckpt.load(str(gpu_run / "checkpoints" / "last.pt"))
    cfg = TrainConfig.from_section(resume["config"])
    model = rs.compile(rs.load(EXAMPLE), device="meta")
    optimizer = make_optimizer(cfg, model.parameters())
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    ckpt.restore(resume, cfg, model, optimizer, scheduler, None, "--resume RUN")
    moments = [t for s in optimizer.state.values() for k, t in s.items() if k != "step"]
    assert moments and all(t.device.type == "meta" for t in moments)
    assert all(p.device.type == "meta" for p in model.parameters())
    assert ckpt.device_changed_note("cpu", "cuda:0").startswith(
        "the run trained on cpu before and goes on on cuda:0: ")
    assert "holds no CUDA random state" in ckpt.device_changed_note("cpu", "cuda:0")
    assert ckpt.device_changed_note("cuda:0", "cuda:0") is None and ckpt.device_changed_note(None, "cpu") is None
    assert ckpt.device_changed_note("cuda:0", "cuda") is None  # (an "auto" run on its machine's first GPU)
    assert "last bits" in ckpt.device_changed_note("cuda:0", "cuda:1")


def test_a_run_trained_on_a_gpu_is_evaluated_here_on_what_this_machine_has(gpu_run, tmp_path, capsys) -> None:
    """The app's Evaluate… passes no --device: a run whose training.device is cuda was refused on a laptop
    with "use --device cpu", a flag the app has none of. Scoring needs no GPU: it goes on here, saying so."""
    from revstudio.core.project import load, save

    run = _copy(gpu_run, tmp_path / "run")
    graph = load(str(run / "project.revs"))
    graph.training = {**graph.training, "device": "cuda"}
    save(graph, str(run / "project.revs"))
    capsys.readouterr()
    assert cli.main(["evaluate", str(run), "--no-save", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["device"] == "cpu" and result["step"] == 2
    assert result["device_note"].startswith("the run trained on cuda, which this machine cannot use (")
    assert result["device_note"].endswith("; scored on cpu instead (--device picks another)")
    assert cli.main(["evaluate", str(run), "--no-save"]) == 0
    assert "note: the run trained on cuda, which this machine cannot use" in capsys.readouterr().out
    assert cli.main(["evaluate", str(run), "--no-save", "--device", "cuda"]) == 2  # (asked for: refused)
    assert "use --device cpu" in capsys.readouterr().err
