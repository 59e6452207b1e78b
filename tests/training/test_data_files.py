"""Data files that are not what their name says: each refusal names the file and what to save.

A text file named .npz was reported as "pickled (object) data" with numpy's advice to load it
with allow_pickle; a .pt of numpy arrays quoted torch's advice to load it with weights_only=False
(which runs the file's code) with terminal escape codes; a sparse tensor was an internal error.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from revstudio.training.sources import DataError, load_arrays


def _refusal(path: Path) -> str:
    with pytest.raises(DataError) as err:
        load_arrays(str(path))
    return str(err.value)


@pytest.mark.parametrize("content", [b"hello", b"", b"PK\x03\x04cut short"])
def test_a_file_that_is_no_npz_archive_says_so_and_never_suggests_unpickling(tmp_path, content) -> None:
    path = tmp_path / "d.npz"
    path.write_bytes(content)
    message = _refusal(path)
    assert message.startswith(f"{path}: not a .npz archive") and "numpy.savez" in message
    assert "pickle" not in message


def test_a_pt_of_numpy_arrays_names_them_and_never_suggests_weights_only_false(tmp_path) -> None:
    path = tmp_path / "d.pt"
    torch.save({"x": np.zeros((4, 2), "float32"), "y": np.zeros(4, "int64")}, path)
    message = _refusal(path)
    assert "objects other than tensors (numpy" in message and "torch.from_numpy" in message
    assert "weights_only=False" not in message and "\x1b" not in message and "\n" not in message


def test_an_empty_pt_file_and_a_sparse_tensor_are_refused_naming_them(tmp_path) -> None:
    empty = tmp_path / "e.pt"
    empty.write_bytes(b"")
    assert _refusal(empty) == f"{empty}: an empty file; save a dict of tensors, e.g. torch.save({{'x': x, 'y': y}}, path)"
    sparse = tmp_path / "s.pt"
    torch.save({"x": torch.eye(4).to_sparse(), "y": torch.zeros(4, dtype=torch.int64)}, sparse)
    assert "tensor 'x' is a sparse_coo tensor" in _refusal(sparse)
