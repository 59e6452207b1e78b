"""``revstudio sample`` and ``rs.sample``: a trained flow's inverse run on seeded Gaussian noise, the same
draws from the command and the notebook, written whole or not at all, and refused for what is no flow."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from flow_kit import moons_realnvp  # noqa: E402

import revstudio as rs  # noqa: E402
from revstudio.cli import main  # noqa: E402
from revstudio.core.generate import Builder  # noqa: E402
from revstudio.core.project import save  # noqa: E402

QUICK = ["--steps", "3", "--device", "cpu", "--val-every", "0", "--gradcheck-every", "0", "--memory-every", "0",
         "--json"]


@pytest.fixture(scope="module")
def flow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sample")
    save(moons_realnvp().graph, folder / "moons.revs")
    assert main(["train", str(folder / "moons.revs"), "--out", str(folder / "run"), *QUICK]) == 0
    return folder / "run"


def test_the_samples_are_the_inverse_of_the_seeded_noise_and_the_api_draws_the_same(
        flow_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.npz"
    assert main(["sample", str(flow_run), "-o", str(out), "-n", "5", "--temperature", "0.5", "--seed", "3"]) == 0
    said = capsys.readouterr().out
    assert "sampled 5 from" in said and "z ~ N(0, 0.5^2) in the shape of Output 'z' (2), seed 3" in said
    x = np.load(out)["x"]
    assert x.shape == (5, 2) and x.dtype == np.float32
    model = rs.compile(rs.load(flow_run / "project.revs"), device="cpu")
    model.load_state_dict(torch.load(flow_run / "checkpoints" / "last.pt", weights_only=True)["model"])
    z = torch.randn((5, 2), generator=torch.Generator().manual_seed(3)) * 0.5
    with torch.no_grad():
        expected = model.inverse(z)
        assert torch.allclose(model(torch.from_numpy(x)), z, atol=1e-5)  # x -> z gives the noise back
    assert np.allclose(x, expected.numpy(), atol=1e-6)
    assert torch.equal(rs.sample(str(flow_run), 5, temperature=0.5, seed=3), torch.from_numpy(x))
    assert not torch.equal(rs.sample(str(flow_run), 5, temperature=0.5, seed=4), torch.from_numpy(x))
    assert main(["sample", str(flow_run), "-o", str(out), "-n", "2", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["arrays"] == {"x": [2, 2]} and done["written"] == str(out) and done["z_shape"] == [2]


def test_a_run_that_is_no_flow_is_refused_saying_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = Builder("regress")
    b.node("Input", "x", shape=[4])
    b.chain("x", b.node("Linear", "l", out_features=3), b.node("Output", "y"))
    save(b.graph, tmp_path / "regress.revs")
    assert main(["train", str(tmp_path / "regress.revs"), "--out", str(tmp_path / "run"), *QUICK]) == 0
    capsys.readouterr()
    assert main(["sample", str(tmp_path / "run"), "-o", str(tmp_path / "s.npz")]) == 2
    err = capsys.readouterr().err
    assert "project.revs: cannot sample: task 'flow' needs a log-determinant" in err
    assert "sampling runs a flow's inverse on Gaussian noise" in err
    assert not (tmp_path / "s.npz").exists()
    with pytest.raises(ValueError, match="cannot sample: task 'flow' needs a log-determinant"):
        rs.sample(str(tmp_path / "run"))
    assert main(["sample", str(tmp_path / "regress.revs"), "-o", str(tmp_path / "s.npz")]) == 2
    assert "is a project, not a trained run" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "words"), [
    (["-o", "{tmp}/none/s.npz"], "the folder {tmp}/none does not exist"),
    (["-o", "{tmp}/s.np"], "give a file name ending in .npz"),
    (["-o", "{tmp}/s.npz", "--temperature", "0"], "temperature 0.0: give a number above 0"),
    (["-o", "{tmp}/s.npz", "--temperature", "nan"], "temperature nan: give a number above 0"),
])
def test_settings_and_paths_that_cannot_work_write_nothing(flow_run: Path, tmp_path: Path, args: list[str],
                                                           words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sample", str(flow_run), *[a.format(tmp=tmp_path) for a in args]]) == 2
    assert words.format(tmp=tmp_path) in capsys.readouterr().err
    assert os.listdir(tmp_path) == []  # (no file, not even the temporary one)


def test_the_api_refuses_a_run_that_is_not_there_and_a_count_below_one(flow_run: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such run folder or file"):
        rs.sample(str(tmp_path / "gone"))
    with pytest.raises(ValueError, match="count 0: give a whole number of samples, 1 or more"):
        rs.sample(str(flow_run), 0)


def test_weights_whose_actnorm_never_saw_a_batch_are_sampled_with_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A state_dict saved before any batch: its ActNorm is the identity, and the samples looked like any
    others with nothing said."""
    graph = moons_realnvp().graph
    save(graph, tmp_path / "moons.revs")
    torch.save(rs.compile(graph, device="cpu").state_dict(), tmp_path / "fresh.pt")
    with pytest.warns(UserWarning, match=r"ActNorm layer\(s\) 'an' of these weights never saw a batch") as seen:
        x = rs.sample(str(tmp_path / "fresh.pt"), 3, project=str(tmp_path / "moons.revs"))
    assert x.shape == (3, 2) and len([w for w in seen if "never saw a batch" in str(w.message)]) == 1
    out = tmp_path / "s.npz"
    assert main(["sample", str(tmp_path / "fresh.pt"), "--project", str(tmp_path / "moons.revs"), "-o", str(out),
                 "-n", "2"]) == 0
    said = capsys.readouterr()
    assert "'an' of these weights never saw a batch" in said.out + said.err
    assert "sample a checkpoint written after training began" in said.out + said.err
