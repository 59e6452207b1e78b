"""The Run Settings preview reads a data file's labels once: its child process asks what the file holds
(with the label count, a scan of ``y``) and whether it fits the Input nodes, which used to read the
headers again and scan the labels a second time (a ``.pt``: load the whole file again); ``revstudio
check``'s fit question does not scan the labels at all."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from revstudio.qt.training import probe
from revstudio.training import data, sources


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    reads = {"labels": 0, "pt": 0}

    def labels(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads["labels"] += 1
        return scan(*args, **kwargs)

    def load(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads["pt"] += 1
        return whole(*args, **kwargs)

    scan, whole = data._label_classes, sources.load_arrays
    monkeypatch.setattr(data, "_label_classes", labels)
    monkeypatch.setattr(sources, "load_arrays", load)
    return reads


@pytest.mark.parametrize("fits", [True, False])
def test_the_preview_scans_the_labels_of_a_npz_once(tmp_path: Path, counted: dict[str, int], fits: bool) -> None:
    np.savez(tmp_path / "d.npz", x=np.zeros((6, 1, 8, 8), "float32"), y=np.arange(6) % 3)
    answer = probe.peek("d.npz", str(tmp_path), {"img": [1, 8, 8] if fits else [3, 8, 8]})
    assert counted["labels"] == 1
    assert answer["classes"] == 3 and answer["arrays"] == {"x": [6, 1, 8, 8], "y": [6]}
    want = None if fits else data.data_problem("d.npz", {"img": (3, 8, 8)}, str(tmp_path))
    assert answer["problem"] == want and (fits or "Input node 'img' expects 3x8x8" in answer["problem"])
    assert counted["labels"] == 1  # (data_problem alone, as revstudio check asks it, scans none)


def test_the_preview_loads_a_pt_once(tmp_path: Path, counted: dict[str, int]) -> None:
    torch = pytest.importorskip("torch")
    torch.save({"x": torch.zeros(5, 4), "y": torch.arange(5) % 2}, tmp_path / "d.pt")
    answer = probe.peek("d.pt", str(tmp_path), {"a": [3]})
    assert counted["pt"] == 1 and answer["classes"] == 2
    assert "array 'x' has samples of shape 4" in answer["problem"] and "Input node 'a' expects 3" in answer["problem"]
