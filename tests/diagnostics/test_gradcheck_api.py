"""``rs.gradcheck``: the gradient check of ``revstudio gradcheck`` from Python, returning the report
the CLI prints (the same batch of the project's data, the same weights of a run or of one's own)."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import revstudio as rs  # noqa: E402
from revstudio import cli  # noqa: E402
from revstudio.diagnostics.gradcheck import StateMismatch  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "resources" / "examples" / "revnet_coupling.revs")
SAME = ("ok", "max_error", "tolerance", "batch", "mode", "dtype")


def _cli(capsys, *args: str) -> dict:
    assert cli.main(["gradcheck", EXAMPLE, "--json", *args]) in (0, 1)
    return json.loads(capsys.readouterr().out)


def _weights(path: Path) -> dict:
    torch.manual_seed(5)
    model = rs.compile(rs.load(EXAMPLE), device="cpu")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.2)
    state = model.state_dict()
    torch.save(state, path)
    return state


def test_the_report_is_the_one_the_cli_prints(capsys) -> None:
    torch.set_num_threads(1)
    ours = rs.gradcheck(EXAMPLE, batch=2).to_json()
    theirs = _cli(capsys, "--batch", "2")
    assert ours["ok"] and {k: ours[k] for k in SAME} == {k: theirs[k] for k in SAME}
    assert ours["parameters"] == theirs["parameters"]  # (the same batch of data: the same errors, tensor by tensor)
    shuffled = rs.gradcheck(EXAMPLE, batch=2, inputs="random").to_json()
    assert shuffled["parameters"] == _cli(capsys, "--batch", "2", "--inputs", "random")["parameters"]
    assert shuffled["parameters"] != ours["parameters"]


def test_weights_of_ones_own_a_state_dict_and_tensors_by_node(tmp_path: Path, capsys) -> None:
    torch.set_num_threads(1)
    state = _weights(tmp_path / "mine.pt")
    from_file = rs.gradcheck(EXAMPLE, checkpoint=tmp_path / "mine.pt").to_json()
    assert from_file["parameters"] == _cli(capsys, "--checkpoint", str(tmp_path / "mine.pt"))["parameters"]
    assert rs.gradcheck(rs.load(EXAMPLE), checkpoint=state).to_json()["parameters"] == from_file["parameters"]
    graph = rs.load(EXAMPLE)
    node = next(n.id for n in graph.nodes.values() if n.type == "Input")
    x = torch.randn(3, *graph.node(node).params["shape"], dtype=torch.float64)
    by_id, listed = rs.gradcheck(graph, inputs={node: x}), rs.gradcheck(graph, inputs=[x])
    assert by_id.batch == 3 and by_id.to_json() == listed.to_json()


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"seed": 1.5}, "seed=1.5: 1.5 is not a whole number"),  # was torch's RuntimeError from manual_seed
    ({"seed": -1}, "seed=-1: -1 is out of range"),  # was taken, where the command refuses it
    ({"tolerance": "x"}, "tolerance='x'"),  # was taken, and the check passed
    ({"tolerance": -1}, "tolerance=-1"),
    ({"batch": 10 ** 9}, "batch=1000000000: 1000000000 is too large"),  # tried to allocate terabytes
    ({"batch": 1.5}, "rs.gradcheck: batch=1.5"),  # (named rs.check before)
])
def test_bad_numbers_are_value_errors_naming_the_keyword(kwargs: dict, words: str) -> None:
    with pytest.raises(ValueError, match="rs.gradcheck: ") as info:
        rs.gradcheck(EXAMPLE, inputs="random", **kwargs)
    assert words in str(info.value), str(info.value)


def test_what_does_not_fit_is_said(tmp_path: Path) -> None:
    state = _weights(tmp_path / "mine.pt")
    with pytest.raises(StateMismatch, match=r"checkpoint the state dict given: .*layers\.0.*rs\.load_weights"):
        rs.gradcheck(EXAMPLE, checkpoint={k.replace("blocks.", "layers."): v for k, v in state.items()})
    with pytest.raises(FileNotFoundError, match="checkpoint .*nowhere.pt: no such file or folder"):
        rs.gradcheck(EXAMPLE, checkpoint=tmp_path / "nowhere.pt")
    with pytest.raises(ValueError, match="inputs='pictures'"):
        rs.gradcheck(EXAMPLE, inputs="pictures")
    graph = rs.load(EXAMPLE)
    graph.training = {**graph.training, "data": str(tmp_path / "missing.npz")}
    with pytest.raises(ValueError, match="inputs='data': the project's training data cannot be read"):
        rs.gradcheck(graph, inputs="data")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert rs.gradcheck(graph).ok
    assert any("checking a standard-normal batch instead" in str(w.message) for w in said)
