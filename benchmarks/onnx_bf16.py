"""Whether onnxruntime's CPU provider runs the examples as bfloat16 ONNX graphs (docs/cli.md, ONNX export).

``revstudio export -o OUT.onnx`` writes float32 (float64) files only: a run trained at bf16 precision keeps
float32 weights. This script compiles each example in bfloat16 anyway, has torch's exporter write it at its
default opset and at opset 23 (where ONNX's Conv and LSTM take bfloat16), and
asks onnxruntime to load and run it, inputs given as ml_dtypes' bfloat16; it prints onnxruntime's first
words for each (or the largest difference from the module's eager outputs where it runs).

    python benchmarks/onnx_bf16.py [EXAMPLE ...]
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def attempt(graph, opset):
    import ml_dtypes
    import numpy as np
    import onnxruntime
    import torch

    from revstudio.codegen import onnx_export as ox
    from revstudio.compiler.module import compile as compile_graph

    model = compile_graph(graph, mode="standard", device="cpu", dtype=torch.bfloat16)
    model.eval()
    inputs = ox._batch(graph, model, ox.TRACE_BATCH, 0)
    with torch.no_grad():
        model(*inputs)  # (an ActNorm sets itself from a first batch)
    names = [n.id for n in graph if n.type == "Input"]
    outs = [n.id for n in graph if n.type == "Output"] + (["logdet"] if model.logdet is not None else [])
    target = model.with_logdet() if model.logdet is not None else model
    try:
        data = ox._trace(model, target, inputs, names, outs, opset).model_proto.SerializeToString()
    except ox.OnnxError as exc:
        return "torch's exporter: " + str(exc)[:90]
    try:
        session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        xs = ox._batch(graph, model, 5, 1)
        got = session.run(None, {i.name: x.float().numpy().astype(ml_dtypes.bfloat16)
                                 for i, x in zip(session.get_inputs(), xs)})
    except Exception as exc:  # onnxruntime's own words are the finding
        text = re.sub(r"\s+", " ", str(exc))
        return text.replace("[ONNXRuntimeError] : ", "")[:150]
    with torch.no_grad():
        want = ox._flat(target(*xs))
    diff = max(float(np.max(np.abs(np.asarray(h, dtype=np.float64) - w.float().numpy()))) for h, w in zip(got, want))
    return f"runs: max abs difference {diff:.3g}"


def main(argv: list[str]) -> None:
    import onnxruntime
    import torch

    from revstudio.core.project import load

    torch.set_num_threads(1)
    examples = sorted((ROOT / "resources" / "examples").glob("*.revs"))
    if argv:
        examples = [p for p in examples if p.stem in argv]
    print(f"onnxruntime {onnxruntime.__version__}, torch {torch.__version__}, CPUExecutionProvider")
    print("| example | default opset | opset 23 |\n|---|---|---|")
    for path in examples:
        graph = load(str(path))
        print(f"| {path.stem} | {attempt(graph, None)} | {attempt(graph, 23)} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
