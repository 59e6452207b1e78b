"""Questions only torch can answer, asked in a child process so the editor never imports torch.

``python -P -m revstudio.qt.training.probe devices`` prints the devices torch
sees; ``... peek SPEC BASE_DIR`` prints what a data source holds (shape and
labels, ``revstudio.training.data.peek_data``); ``... gradcheck SNAPSHOT
CHECKPOINT`` compares reversible and standard gradients at a run's trained
weights (the JSON of ``revstudio gradcheck --json``). One JSON object on
stdout, ``{"error": message}`` when the answer is a user error. No Qt here.
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
    return {"devices": found, "torch": torch.__version__}


def peek(spec: str, base: str | None) -> dict[str, Any]:
    if spec == "synthetic":
        return {"arrays": {}, "classes": None, "samples": None, "synthetic": True}
    try:
        from revstudio.training.data import DataError, peek_data
    except ImportError:
        return {"error": "this build has no data loaders (revstudio.training.data)"}
    try:
        return dict(peek_data(spec, base_dir=base or None))
    except DataError as exc:
        return {"error": str(exc)}
    except OSError as exc:
        return {"error": f"{spec}: {exc.strerror or exc}"}


def gradcheck(snapshot: str, checkpoint: str) -> dict[str, Any]:
    """``revstudio gradcheck --json`` of ``snapshot`` with the weights of a training checkpoint."""
    import torch

    from revstudio.core.check import check
    from revstudio.core.project import ProjectError, load
    from revstudio.diagnostics.gradcheck import compare_modes

    try:
        graph = load(snapshot)
    except (ProjectError, OSError) as exc:
        return {"error": f"{snapshot}: {exc}"}
    try:
        state = torch.load(checkpoint, weights_only=True, map_location="cpu")
    except (OSError, RuntimeError, ValueError) as exc:
        return {"error": f"{checkpoint}: not a readable checkpoint ({exc})"}
    if not isinstance(state, dict) or not isinstance(state.get("model"), dict):
        return {"error": f"{checkpoint}: not a revstudio checkpoint (no model weights in it)"}
    report = compare_modes(graph, state=state["model"])
    regions = getattr(check(graph), "regions", [])
    return {"file": snapshot, "checkpoint": checkpoint, "step": state.get("step"), **report.to_json(),
            "regions": [r.to_json() for r in regions if hasattr(r, "to_json")]}


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["devices"]:
            answer = devices()
        elif argv[:1] == ["peek"] and len(argv) >= 2:
            answer = peek(argv[1], argv[2] if len(argv) > 2 else None)
        elif argv[:1] == ["gradcheck"] and len(argv) == 3:
            answer = gradcheck(argv[1], argv[2])
        else:
            answer = {"error": "usage: probe devices | probe peek SPEC [BASE_DIR] | probe gradcheck SNAPSHOT CKPT"}
    except Exception as exc:  # the answer is shown in a dialog; a traceback would help nobody there
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
