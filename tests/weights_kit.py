"""Weights of one's own for a project (what `train --init`, Train From Weights… and the exported
script's `--init` start from): the project's model with every parameter drawn anew, saved as a
plain state_dict."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def own_weights(project: str | Path, path: Path, *, seed: int, rename: bool = False) -> dict[str, Any]:
    """Save (and return) a state_dict of ``project``'s model, parameters drawn from N(0, 0.3) with
    ``seed``; ``rename`` writes its keys as another program would name them (``layers.`` for
    ``blocks.``), so they do not fit."""
    import torch

    import revstudio as rs

    torch.manual_seed(seed)
    model = rs.compile(rs.load(str(project)), device="cpu")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    state = {(k.replace("blocks.", "layers.") if rename else k): v.clone() for k, v in model.state_dict().items()}
    torch.save(state, path)
    return state
