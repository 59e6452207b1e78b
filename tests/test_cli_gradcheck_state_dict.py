"""``revstudio gradcheck FILE --checkpoint WEIGHTS.pt`` at weights of one's own: a bare state_dict
(``torch.save(model.state_dict(), path)``, after rs.load_weights brought another model's over)."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import revstudio as rs  # noqa: E402
from revstudio.cli import main  # noqa: E402
from revstudio.core.examples import example_projects  # noqa: E402


@pytest.fixture
def project(tmp_path: Path) -> Path:
    torch.set_num_threads(1)
    path = tmp_path / "revnet.revs"
    rs.save(example_projects()["revnet_coupling"], path)
    return path


def test_a_state_dict_of_the_model_is_checked_at_its_weights(project: Path, tmp_path: Path, capsys) -> None:
    model = rs.compile(rs.load(project), device="cpu")
    with torch.no_grad():
        model.stem.weight.mul_(4.0)
    torch.save(model.state_dict(), tmp_path / "mine.pt")
    assert main(["gradcheck", str(project), "--checkpoint", str(tmp_path / "mine.pt")]) == 0
    out = capsys.readouterr().out
    assert f"weights: {tmp_path / 'mine.pt'}\n" in out and "OK: reversible and standard" in out
    state = model.state_dict()
    state["head.weight"] = torch.zeros(3, 8)
    torch.save(state, tmp_path / "cut.pt")
    assert main(["gradcheck", str(project), "--checkpoint", str(tmp_path / "cut.pt")]) == 2
    assert "head.weight" in capsys.readouterr().err


def test_another_models_names_or_another_file_say_how_to_make_one(project: Path, tmp_path: Path, capsys) -> None:
    model = rs.compile(rs.load(project), device="cpu")
    foreign = {k.replace("blocks.blocks.", "layers."): v for k, v in model.state_dict().items()}
    torch.save(foreign, tmp_path / "foreign.pt")
    assert main(["gradcheck", str(project), "--checkpoint", str(tmp_path / "foreign.pt")]) == 2
    err = capsys.readouterr().err
    assert "the weights do not fit this graph" in err and "layers.0.coupling.f.f_conv1.weight" in err
    assert "load into rs.compile's model with rs.load_weights, and torch.save(model.state_dict(), path)" in err
    torch.save({"model": model.state_dict()}, tmp_path / "wrapped.pt")
    assert main(["gradcheck", str(project), "--checkpoint", str(tmp_path / "wrapped.pt")]) == 2
    err = capsys.readouterr().err
    assert "not a revstudio checkpoint (no 'format': 'revstudio-checkpoint') nor a state_dict" in err
    assert "Traceback" not in err
