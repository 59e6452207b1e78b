"""``revstudio gradcheck FILE --checkpoint RUN_DIR_OR_CKPT``: a run's trained weights, or a clear exit 2."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.cli import main  # noqa: E402
from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.core.generate import revnet_chain  # noqa: E402
from revstudio.diagnostics.gradcheck import compare_modes  # noqa: E402
from revstudio.training import checkpoint as ckpt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def project(small_revnet: Path) -> Path:
    return small_revnet


def _weights(graph, scale: float = 3.0) -> dict:
    torch.manual_seed(5)
    model = compile_graph(graph, mode="standard")
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(scale).add_(0.01)  # far from a fresh initialisation, so using them shows
    return model.state_dict()


def _run_dir(tmp_path: Path, project: Path, state: dict | None, step: int = 7) -> Path:
    run = tmp_path / "runs" / "small-20261202-013000"
    (run / "checkpoints").mkdir(parents=True)
    (run / "project.revs").write_bytes(project.read_bytes())
    if state is not None:
        ckpt.save(str(run / "checkpoints" / "last.pt"), {"step": step, "model": state, "optimizer": {}})
    return run


def _json(capsys: pytest.CaptureFixture[str]) -> dict:
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1, out
    return json.loads(out[0])


def test_a_run_folder_or_its_file_loads_the_trained_weights(tmp_path, project, capsys) -> None:
    from revstudio.core.project import load

    graph = load(str(project))
    state = _weights(graph)
    run = _run_dir(tmp_path, project, state)
    # (the standard-normal batch compare_modes draws itself, not the project's data)
    assert main(["gradcheck", str(project), "--json", "--inputs", "random"]) == 0
    fresh = _json(capsys)
    for where in (run, run / "checkpoints" / "last.pt"):
        assert main(["gradcheck", str(project), "--checkpoint", str(where), "--json", "--inputs", "random"]) == 0
        data = _json(capsys)
        assert data["ok"] is True and data["step"] == 7
        assert data["checkpoint"] == str(run / "checkpoints" / "last.pt")
        expected = compare_modes(load(str(project)), state=state)
        assert data["gradient_norm"] == pytest.approx(expected.gradient_norm, rel=1e-12)
        assert data["gradient_norm"] != pytest.approx(fresh["gradient_norm"], rel=1e-3)
    assert main(["gradcheck", str(project), "--checkpoint", str(run)]) == 0
    text = capsys.readouterr().out
    assert f"weights: {run / 'checkpoints' / 'last.pt'} (step 7)" in text and "OK:" in text


def test_the_checkpoint_a_training_run_writes(tmp_path, project, capsys) -> None:
    out = tmp_path / "run"
    assert main(["train", str(project), "--steps", "3", "--batch", "4", "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    assert main(["gradcheck", str(project), "--checkpoint", str(out), "--json"]) == 0
    data = _json(capsys)
    assert data["ok"] is True and data["step"] == 3


@pytest.mark.parametrize("case, words", [
    ("missing", ["no such file or folder"]),
    ("no checkpoint yet", ["saved no checkpoint yet", "checkpoints/last.pt"]),
    ("plain folder", ["neither a run directory"]),
    ("corrupt", ["not a readable checkpoint"]),
    ("truncated", ["not a readable checkpoint"]),
    ("not ours", ["not a revstudio checkpoint"]),
    ("pickled code", ["not a readable checkpoint"]),
    ("no weights", ["without model weights"]),
])
def test_bad_checkpoints_exit_2_with_a_message(case, words, tmp_path, project, capsys) -> None:
    from revstudio.core.project import load

    run = _run_dir(tmp_path, project, _weights(load(str(project))))
    good = run / "checkpoints" / "last.pt"
    target = {"missing": tmp_path / "nowhere.pt", "no checkpoint yet": _run_dir(tmp_path / "b", project, None),
              "plain folder": tmp_path / "b"}.get(case, tmp_path / "bad.pt")
    if case == "corrupt":
        target.write_bytes(b"\x00garbage" * 50)
    elif case == "truncated":
        target.write_bytes(good.read_bytes()[:300])
    elif case == "not ours":
        torch.save({"weights": [torch.zeros(2)]}, target)  # (a dict of tensors is a state_dict: read)
    elif case == "pickled code":
        torch.save({"format": "revstudio-checkpoint", "version": 1, "model": Path("x")}, target)
    elif case == "no weights":
        ckpt.save(str(target), {"step": 1})
    assert main(["gradcheck", str(project), "--checkpoint", str(target)]) == 2
    err = capsys.readouterr().err
    assert str(target) in err and all(w in err for w in words), err
    assert "Traceback" not in err


def test_a_checkpoint_of_another_graph_names_the_keys(tmp_path, project, capsys) -> None:
    other = revnet_chain(3, channels=4, size=4)  # one block more: keys the small graph lacks
    run = _run_dir(tmp_path, project, _weights(other))
    assert main(["gradcheck", str(project), "--checkpoint", str(run), "--json"]) == 2
    data = _json(capsys)
    assert data["exit_code"] == 2
    extra = sorted(set(_weights(other)) - set(_weights(revnet_chain(2, channels=4, size=4))))
    assert "not in the graph: " + ", ".join(extra[:2]) in data["error"], data["error"]
    # different widths: the same keys with other shapes, each named with both shapes
    wide = revnet_chain(2, channels=8, size=4)
    run2 = _run_dir(tmp_path / "w", project, _weights(wide))
    assert main(["gradcheck", str(project), "--checkpoint", str(run2)]) == 2
    err = capsys.readouterr().err
    assert "other shapes: " in err and "in the graph" in err and str(project) in err


def test_no_traceback_from_a_child_process(tmp_path, project) -> None:
    bad = tmp_path / "bad.pt"
    bad.write_text("not a checkpoint")
    proc = subprocess.run([sys.executable, "-P", "-m", "revstudio", "gradcheck", str(project), "--checkpoint",
                           str(bad), "--json"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "not a readable checkpoint" in json.loads(proc.stdout)["error"]


class _Planted:
    def __reduce__(self):  # what a hostile pickle would run; weights_only never calls it
        return (os.system, ("echo planted",))


def test_a_plain_pickle_is_refused_without_torchs_warning(tmp_path, project, capsys) -> None:
    # torch warns about the pickle protocol on its way to refusing it; that must not reach the user
    target = tmp_path / "plain.pt"
    target.write_bytes(pickle.dumps({"model": _Planted()}, protocol=4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["gradcheck", str(project), "--checkpoint", str(target)]) == 2
    assert [str(w.message) for w in caught] == []
    assert "not a readable checkpoint" in capsys.readouterr().err


def test_a_run_is_checked_on_its_own_data_not_the_projects(tmp_path, project, capsys) -> None:
    # the run trained on --data other.npz with --seed 3; the project still says synthetic, seed 0.
    # gradcheck FILE --checkpoint RUN read FILE's settings: a batch the run never saw.
    import numpy as np

    from revstudio.core.project import load

    shape = tuple(load(str(project)).nodes["x"].params["shape"])
    rng = np.random.default_rng(0)
    other = tmp_path / "data" / "other.npz"
    other.parent.mkdir()
    np.savez(other, x=(100 + rng.standard_normal((40, *shape))).astype("float32"),
             y=rng.integers(0, 4, 40))
    out = tmp_path / "run"
    assert main(["train", str(project), "--steps", "2", "--batch", "4", "--data", str(other), "--seed", "3",
                 "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    assert main(["gradcheck", str(project), "--checkpoint", str(out), "--json"]) == 0
    batch = _json(capsys)["input_batch"]
    assert batch["source"] == "data" and batch["data"] == str(other)
    assert batch["settings"] == "run" and "with the run's settings" in batch["describe"]
    assert main(["gradcheck", str(project), "--checkpoint", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"inputs: the first training batch of {other}" in text and f"not {project}'s, which differ" in text
    # the app checks the run's own snapshot: the same settings, nothing to set apart
    assert main(["gradcheck", str(out / "project.revs"), "--checkpoint", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"inputs: the first training batch of {other}" in text and "which differ" not in text
    assert main(["gradcheck", str(project), "--json"]) == 0  # (no checkpoint: the project's own)
    batch = _json(capsys)["input_batch"]
    assert batch["data"] == "synthetic" and batch["settings"] == "project"
