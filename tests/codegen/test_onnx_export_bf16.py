"""ONNX export and bfloat16: a run trained at ``--precision bf16`` keeps float32 weights (autocast), so its
file is float32 and checked by onnxruntime as any other, and the export says so; no bfloat16 file is written,
as onnxruntime's CPU provider runs none (benchmarks/onnx_bf16.py). Without onnxruntime, ``onnx.checker``'s
full check refuses a file whose node types its opset does not allow (one onnxruntime would not load)."""
from __future__ import annotations

import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
pytest.importorskip("onnxruntime")

from codegen_harness import with_section  # noqa: E402

from revstudio.cli import main  # noqa: E402
from revstudio.core import generate  # noqa: E402
from revstudio.core.project import save  # noqa: E402


def test_a_run_trained_at_bf16_exports_a_float32_file_checked_by_onnxruntime(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = with_section(generate.revnet_chain(1, channels=4, size=4, wired=True), data="synthetic", steps=2,
                         precision="bf16", device="cpu", val_every=0, gradcheck_every=0, memory_every=0)
    save(graph, tmp_path / "net.revs")
    run, out = tmp_path / "run", tmp_path / "net.onnx"
    assert main(["train", str(tmp_path / "net.revs"), "--out", str(run), "--json"]) == 0
    capsys.readouterr()
    assert main(["export", str(run), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "checked with onnxruntime: max abs difference" in said, said
    assert ("note: the run trained at precision bf16, autocast over float32 weights: the file is float32, as they "
            "are (no bfloat16 ONNX file is written: onnxruntime's CPU provider runs none)") in said, said
    model = onnx.load(str(out))
    assert {i.type.tensor_type.elem_type for i in model.graph.input} == {onnx.TensorProto.FLOAT}


def test_without_onnxruntime_a_file_its_opset_does_not_type_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from onnx import TensorProto, helper

    from revstudio.codegen.onnx_export import OnnxError, _check

    # a bfloat16 Conv at opset 18 (what torch writes for a bfloat16 model): Conv takes no bfloat16 before
    # opset 22, and onnxruntime refuses to load it ("Type Error: Type 'tensor(bfloat16)' ... of operator (Conv)")
    x = helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [1, 1, 3, 3])
    w = helper.make_tensor_value_info("w", TensorProto.BFLOAT16, [1, 1, 1, 1])
    y = helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [1, 1, 3, 3])
    proto = helper.make_model(helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "g", [x, w], [y]),
                              opset_imports=[helper.make_opsetid("", 18)])
    monkeypatch.setitem(__import__("sys").modules, "onnxruntime", None)  # (import onnxruntime fails)
    with pytest.raises(OnnxError) as caught:
        _check(None, types.SimpleNamespace(dtype=torch.float32), None, proto.SerializeToString(), ["y"])
    assert str(caught.value).startswith("the ONNX file torch wrote is not valid (") and "Conv" in str(caught.value)
    assert str(caught.value).endswith("; nothing was written")
