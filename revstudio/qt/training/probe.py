"""Questions only torch can answer, asked in a child process so the editor never imports torch.

``python -P -m revstudio.qt.training.probe devices`` prints the devices torch
sees; ``... peek SPEC BASE_DIR [SHAPES]`` prints what a data source holds (shape and
labels, ``revstudio.training.data.peek_data``) and, given the Input nodes' shapes as JSON, whether
it fits them. One JSON object on stdout,
``{"error": message}`` when the answer is a user error. No Qt here. (A gradient
check at a run's checkpoint is ``revstudio gradcheck --checkpoint``.)
"""
from __future__ import annotations

import json
import sys
from typing import Any


def devices() -> dict[str, Any]:
    import torch

    found = [{"id": "cpu", "name": f"CPU ({torch.get_num_threads()} threads)"}]
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            found.append({"id": f"cuda:{i}", "name": f"{props.name} ({props.total_memory / 2**30:.0f} GiB)"})
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append({"id": "mps", "name": "Apple GPU (MPS)"})
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        for i in range(xpu.device_count()):
            found.append({"id": f"xpu:{i}", "name": f"{xpu.get_device_name(i)} (XPU)"})
    return {"devices": found, "torch": torch.__version__}


def peek(spec: str, base: str | None, inputs: dict[str, list[int]] | None = None) -> dict[str, Any]:
    """What ``spec`` holds; with ``inputs`` (``{Input node id: shape}``) also ``problem``, the refusal
    a run would give for data that do not fit those nodes (read from the headers), or None."""
    if spec == "synthetic":
        return {"arrays": {}, "classes": None, "samples": None, "synthetic": True}
    try:
        from revstudio.training.data import DataError, data_problem, peek_data
    except ImportError:
        return {"error": "this build has no data loaders (revstudio.training.data)"}
    try:
        answer = dict(peek_data(spec, base_dir=base or None))
        if inputs:
            shapes = {node: tuple(int(s) for s in shape) for node, shape in inputs.items()}
            answer["problem"] = data_problem(spec, shapes, base or None, read_pt=True, arrays=answer["arrays"])
        return answer
    except DataError as exc:
        return {"error": str(exc)}
    except OSError as exc:
        return {"error": f"{spec}: {exc.strerror or exc}"}


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["devices"]:
            answer = devices()
        elif argv[:1] == ["peek"] and len(argv) >= 2:
            answer = peek(argv[1], argv[2] if len(argv) > 2 else None,
                          json.loads(argv[3]) if len(argv) > 3 else None)
        else:
            answer = {"error": "usage: probe devices | probe peek SPEC [BASE_DIR [INPUT_SHAPES_JSON]]"}
    except Exception as exc:  # the answer is shown in a dialog; a traceback would help nobody there
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
