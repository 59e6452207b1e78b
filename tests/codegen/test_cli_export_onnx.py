"""`revstudio export FILE -o OUT.onnx`: the format follows -o's name, a run folder's trained weights go into
the file, the file is checked with onnxruntime (its max abs difference printed) and written whole or
not at all; a layer ONNX lacks, a missing package and options of the other format are refused in words."""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
ort = pytest.importorskip("onnxruntime")

import revstudio as rs  # noqa: E402
from revstudio.cli import main  # noqa: E402
from revstudio.core.spec import registry  # noqa: E402
from revstudio.diagnostics.gradcheck import random_inputs  # noqa: E402
from revstudio.training import checkpoint  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DIGITS = ROOT / "resources" / "examples" / "digits_revnet.revs"
GLOW = ROOT / "resources" / "examples" / "glow_flow.revs"
BEFORE = b"the file from before"


def _glow_run(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A run folder of the flow as `revstudio train` leaves it, its ActNorm layers initialised."""
    graph = rs.load(str(GLOW))
    torch.manual_seed(2)
    model = rs.compile(graph, device="cpu")
    with torch.no_grad():
        model(*random_inputs(graph, 8, torch.float32, seed=3, requires_grad=False))
    run = tmp_path / "runs" / "glow"
    (run / "checkpoints").mkdir(parents=True)
    (run / "project.revs").write_text(GLOW.read_text(encoding="utf-8"), encoding="utf-8")
    (run / "status.json").write_text('{"status": "finished"}', encoding="utf-8")
    checkpoint.save(str(run / "checkpoints" / "last.pt"),
                    {"step": 3, "model": model.state_dict(), "optimizer": {}, "rng": {}, "config": {}})
    return run, model.state_dict()


def test_a_run_folder_exports_its_trained_flow_with_the_log_determinant_and_prints_the_check(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, state = _glow_run(tmp_path)
    out = tmp_path / "glow.onnx"
    assert main(["export", str(run), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"wrote {out} (ONNX opset" in said and f"the trained weights of {run}" in said
    assert "inputs: image; outputs: z, logdet" in said
    assert "checked with onnxruntime: max abs difference" in said
    assert not out.with_suffix(".pt").exists()  # the weights are in the file
    graph = rs.load(str(GLOW))
    model = rs.compile(graph, device="cpu")
    model.load_state_dict(state)
    x = random_inputs(graph, 3, torch.float32, seed=6, requires_grad=False)
    with torch.no_grad():
        z = model(*x)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    z_onnx, logdet = session.run(None, {"image": x[0].numpy()})
    assert float((torch.from_numpy(z_onnx) - z).abs().max()) <= 1e-4
    assert float((torch.from_numpy(logdet) - model.logdet).abs().max()) <= 1e-4 * float(model.logdet.abs().max())


def test_json_reports_the_names_the_opset_and_the_difference(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "digits.onnx"
    assert main(["export", str(DIGITS), "-o", str(out), "--opset", "18", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["ok"], got["format"], got["inputs"], got["outputs"], got["opset"]) == (
        True, "onnx", ["image"], ["logits"], 18)
    assert 0 <= got["max_abs_diff"] <= 1e-4 and got["weights_from"] is None


def test_a_flow_with_fresh_weights_is_refused_naming_its_actnorm_nodes_and_the_old_file_stays(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "glow.onnx"
    out.write_bytes(BEFORE)
    assert main(["export", str(GLOW), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"cannot export {GLOW} as ONNX" in err and "node actnorm0, node actnorm1" in err
    assert "Traceback" not in err
    assert out.read_bytes() == BEFORE and os.listdir(tmp_path) == ["glow.onnx"]


class BesselJ0(torch.nn.Module):
    """A layer of a plugin's that torch traces and its ONNX exporter has no function for."""

    def forward(self, x: Any) -> tuple[Any]:
        return (torch.special.bessel_j0(x),)


@pytest.fixture
def bessel() -> Iterator[str]:
    spec = registry.register(replace(registry.get("Activation"), type_id="BesselJ0", legacy_ids=(),
                                     build=lambda ctx: BesselJ0()))
    yield spec.type_id
    registry._specs.pop(spec.type_id, None)


def test_a_layer_onnx_has_no_function_for_is_refused_naming_its_node_and_type(
        bessel: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = rs.Graph("bessel")
    g.add_node("Input", "x", {"shape": [4]})
    g.add_node("Linear", "lin", {"out_features": 4})
    g.add_node(bessel, "wave")
    g.add_node("Output", "y")
    for a, b in (("x", "lin"), ("lin", "wave"), ("wave", "y")):
        g.connect(f"{a}.out", f"{b}.in")
    rs.save(g, str(tmp_path / "bessel.revs"))
    out = tmp_path / "bessel.onnx"
    out.write_bytes(BEFORE)
    assert main(["export", str(tmp_path / "bessel.revs"), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "node wave (BesselJ0): torch's ONNX exporter cannot translate this layer" in err
    assert "bessel_j0" in err and "-o model.py" in err
    assert out.read_bytes() == BEFORE


@pytest.mark.parametrize("package", ["onnx", "onnxscript"])
def test_without_the_onnx_packages_it_says_which_and_how_to_install_them(
        package: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # import fails as where it is not installed
    assert main(["export", str(DIGITS), "-o", str(tmp_path / "d.onnx")]) == 2
    err = capsys.readouterr().err
    assert f"needs the {package} package" in err and "pip install 'revstudio[onnx]'" in err
    assert os.listdir(tmp_path) == []


def test_without_onnxruntime_the_file_is_checked_by_onnx_and_it_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    out = tmp_path / "d.onnx"
    assert main(["export", str(DIGITS), "-o", str(out)]) == 0
    assert "onnxruntime is not installed: the file was checked with onnx.checker only" in capsys.readouterr().out
    import onnx

    onnx.checker.check_model(onnx.load(str(out)))


@pytest.mark.parametrize(("argv", "words"), [
    (["--onnx", "x.onnx", "-o", "x.py"], "--onnx: the format follows -o's name; write ONNX with -o x.onnx"),
    (["-o", "x.onnx", "--with-training"], "--with-training: an ONNX file holds the network alone"),
    (["-o", "x.py", "--opset", "18"], "--opset: it is for an ONNX file; name it -o OUT.onnx"),
    (["-o", "x.onnx", "--opset", "0"], "opset 0: the installed onnx knows opsets 1 to"),
])
def test_options_of_the_other_format_are_refused_saying_what_to_write(
        argv: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(DIGITS), *argv]) == 2
    assert words in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_the_doc_sample_is_what_it_prints_but_the_measured_difference(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    command = "revstudio export resources/examples/digits_revnet.revs -o digits.onnx"
    block = re.search(rf"^\$ {re.escape(command)}\n(.*?)^```", text, re.M | re.S)
    assert block is not None, "docs/cli.md has no sample of the ONNX export"
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(DIGITS), "-o", "digits.onnx"]) == 0
    number = re.compile(r"difference \S+ against")
    said = [number.sub("difference N against", line) for line in capsys.readouterr().out.splitlines()]
    assert said == [number.sub("difference N against", line) for line in block.group(1).splitlines()]
