"""``revstudio gradcheck FILE --data SPEC`` checks a batch of the user's own data as ``train --data SPEC``
takes its first step on them (uint8 scaling, a mapped file), refuses data train refuses in train's
words, and its JSON says which data it used, as train's ``started`` row does."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from pixel_kit import pixel_classifier, write_uint8_npz
from training_kit import checked_inputs, train_start

from revstudio import cli
from revstudio.core.project_write import save
from revstudio.training import mapped

PIXELS = (np.arange(16 * 16, dtype=np.int64).reshape(16, 1, 4, 4) * 7) % 256


def _project(folder: Path) -> str:
    """An image classifier whose own training data are synthetic: the user's file comes by --data."""
    g = pixel_classifier()
    g.set_training({"version": 1, "data": "synthetic", "batch_size": 4, "seed": 5})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "img.revs"
    save(g, path)
    write_uint8_npz(folder / "d.npz", PIXELS, classes=10)
    return str(path)


@pytest.mark.parametrize("scale", [[], ["--no-scale-uint8"]])
def test_data_checks_the_batch_train_data_starts_on(tmp_path, monkeypatch, capsys, scale) -> None:
    path = _project(tmp_path / "p")
    monkeypatch.chdir(tmp_path)  # (a relative --data starts at the project's folder, as train's does)
    seen = checked_inputs(monkeypatch)
    assert cli.main(["gradcheck", path, "--data", "d.npz", "--batch", "3", "--json", *scale]) == 0
    got = json.loads(capsys.readouterr().out)["input_batch"]
    [checked] = seen[0]
    trained, started = train_start(path, ["--data", "d.npz", *scale], monkeypatch, capsys)
    assert torch.equal(checked, trained[:3].to(checked.dtype))  # the same samples, scaled the same
    assert float(checked.max()) > 1 if scale else float(checked.max()) <= 1
    assert got["source"] == "data" and got["data"] == "d.npz" and got["data_from"] == "--data"
    assert got["summary"] == started["data"] and got["inputs_note"] == started["inputs"]
    assert cli.main(["gradcheck", path, "--data", "d.npz", *scale]) == 0
    text = capsys.readouterr().out
    assert f"  data: {started['data']}\n  note: {started['inputs']}\n" in text


def test_a_mapped_file_is_read_as_train_reads_it(tmp_path, monkeypatch, capsys) -> None:
    path = _project(tmp_path)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)  # every array of d.npz mapped, read as used
    seen = checked_inputs(monkeypatch)
    assert cli.main(["gradcheck", path, "--data", "d.npz", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["input_batch"]
    trained, started = train_start(path, ["--data", "d.npz"], monkeypatch, capsys)
    assert "mapped" in started["data"] and got["summary"] == started["data"]
    assert torch.equal(seen[0][0], trained[:2].to(seen[0][0].dtype))


def _refusal(argv: list[str], capsys) -> tuple[int, str]:
    code = cli.main(argv)
    return code, capsys.readouterr().err.strip()


def test_data_train_refuses_is_refused_in_trains_words(tmp_path, monkeypatch, capsys) -> None:
    path = _project(tmp_path / "p")
    np.savez(tmp_path / "p" / "wide.npz", x=np.zeros((16, 3, 4, 4), np.float32), y=np.arange(16) % 10)
    (tmp_path / "here.npz").write_bytes((tmp_path / "p" / "d.npz").read_bytes())
    monkeypatch.chdir(tmp_path)
    seen = checked_inputs(monkeypatch)
    for spec in ("gone.npz", "wide.npz", "table.csv", "here.npz", ""):
        code, said = _refusal(["gradcheck", path, "--data", spec], capsys)
        train_code, train_said = _refusal(["train", path, "--data", spec, "--steps", "1",
                                           "--out", str(tmp_path / "r")], capsys)
        assert (code, said) == (train_code, train_said) and code == 2, spec
        assert said.startswith("revstudio: ") and "Traceback" not in said
    assert seen == []  # no check ran on a standard-normal batch instead
    assert not (tmp_path / "r").exists()
    code, said = _refusal(["gradcheck", path, "--data", "d.npz", "--inputs", "random"], capsys)
    assert code == 2 and "--data is about the training data checked" in said and "--inputs random" in said
    code, said = _refusal(["gradcheck", path, "--no-scale-uint8", "--inputs", "random"], capsys)
    assert code == 2 and said.startswith("revstudio: --no-scale-uint8 is about")


def test_data_at_a_runs_weights_keeps_the_runs_seed(tmp_path, monkeypatch, capsys) -> None:
    path = _project(tmp_path)
    assert cli.main(["train", path, "--steps", "1", "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    seen = checked_inputs(monkeypatch)
    assert cli.main(["gradcheck", path, "--checkpoint", str(tmp_path / "run"), "--data", "d.npz", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["input_batch"]
    assert got["data_from"] == "--data" and got["settings"] == "run"
    assert got["data"] == str(tmp_path / "d.npz")  # (made absolute: the run's folder is elsewhere)
    assert "with the run's other settings" in got["describe"]
    trained, _ = train_start(path, ["--data", "d.npz"], monkeypatch, capsys)
    assert torch.equal(seen[0][0], trained[:2].to(seen[0][0].dtype))


def test_seed_orders_the_samples_as_train_seed_does(tmp_path, monkeypatch, capsys) -> None:
    path = _project(tmp_path)  # training.seed 5
    seen = checked_inputs(monkeypatch)
    for flags in (["--seed", "11"], []):
        assert cli.main(["gradcheck", path, "--data", "d.npz", "--batch", "4", *flags]) == 0
    capsys.readouterr()
    by_seed, by_project = (s[0] for s in seen)
    trained, _ = train_start(path, ["--data", "d.npz", "--seed", "11"], monkeypatch, capsys)
    assert torch.equal(by_seed, trained.to(by_seed.dtype))
    project_first, _ = train_start(path, ["--data", "d.npz"], monkeypatch, capsys)
    assert torch.equal(by_project, project_first.to(by_project.dtype))
    assert not torch.equal(by_seed, by_project)
