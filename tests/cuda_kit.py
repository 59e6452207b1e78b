"""Files of weights as a CUDA machine writes them, made on a machine without one: every storage of the
file tagged ``cuda:0`` (torch.serialization's location tag patched while saving), so that a plain
``torch.load(path)`` here fails as it does on a laptop given a checkpoint trained on a GPU. A revstudio
checkpoint also gets what its run would have recorded there: its device and a CUDA random state."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CUDA = "cuda:0"


@contextlib.contextmanager
def saved_as_cuda() -> Iterator[None]:
    """``torch.save`` inside tags every storage ``cuda:0`` (the tag torch.load maps a storage back by)."""
    import torch.serialization as serialization

    real = serialization.location_tag
    serialization.location_tag = lambda storage: CUDA  # type: ignore[assignment]
    try:
        yield
    finally:
        serialization.location_tag = real


def cannot_load_plainly(path: str | Path) -> str:
    """torch's refusal of ``path`` without a map_location (the file really is one a CUDA machine wrote);
    an AssertionError where plain torch.load reads it."""
    import torch

    try:
        torch.load(path, weights_only=True)
    except RuntimeError as exc:
        assert "CUDA" in str(exc), exc
        return str(exc)
    raise AssertionError(f"{path}: plain torch.load read it, so it is no file of a CUDA machine")


def as_if_from_cuda(path: str | Path) -> dict[str, Any]:
    """Rewrite the file of weights at ``path`` (a revstudio checkpoint, a run folder's last one, or a
    state_dict) as a CUDA machine would have written it; returns what it now holds (on the CPU)."""
    import torch

    path = Path(path)
    if path.is_dir():
        path = path / "checkpoints" / "last.pt"
    data = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(data, dict) and data.get("format") == "revstudio-checkpoint":
        data["device"] = CUDA
        data["rng"] = {**data["rng"], "cuda": [torch.get_rng_state()[:16].clone()]}
    with saved_as_cuda():
        torch.save(data, path)
    cannot_load_plainly(path)
    return data
