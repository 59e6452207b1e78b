"""8-bit images for the data, flow and exported-script tests: MNIST folders of IDX files, uint8 .npz
files, and the one-ActNorm flow over 1x4x4 images that trains on them.

A plain module beside the tests' conftest (as ``scaling`` and ``pipe_reader``): the training and
the codegen tests both import it by name.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np


def random_pixels(*counts: int, seed: int = 0) -> list[np.ndarray]:
    """One array of ``count`` random 1x4x4 images (0..255, int64) per count, drawn in turn from one
    seeded generator (a training set and its validation set)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (n, 1, 4, 4)) for n in counts]


def write_uint8_npz(path: Path, images: np.ndarray, classes: int | None = None) -> Path:
    """``images`` as uint8 under ``x`` in the .npz ``path``, with labels ``y`` = i % ``classes`` when given."""
    arrays: dict[str, Any] = {"x": images.astype(np.uint8)}
    if classes is not None:
        arrays["y"] = np.arange(len(images)) % classes
    np.savez(path, **arrays)
    return path


def write_idx(path: Path, array: np.ndarray) -> None:
    """``array`` as an IDX file of unsigned bytes (MNIST's format), uncompressed."""
    path.write_bytes(bytes([0, 0, 8, array.ndim]) + struct.pack(">" + "I" * array.ndim, *array.shape)
                     + array.astype(np.uint8).tobytes())


def mnist_folder(root: Path, train: np.ndarray, val: np.ndarray) -> Path:
    """The folder ``root`` made an MNIST folder (``mnist:root``) of ``train`` and ``val`` images (N x H x W),
    labelled i % 10."""
    root.mkdir()
    write_idx(root / "train-images-idx3-ubyte", train)
    write_idx(root / "train-labels-idx1-ubyte", np.arange(len(train)) % 10)
    write_idx(root / "t10k-images-idx3-ubyte", val)
    write_idx(root / "t10k-labels-idx1-ubyte", np.arange(len(val)) % 10)
    return root


def actnorm_flow(training: dict[str, Any] | None = None) -> Any:
    """Graph ``flat``: Input ``x`` (1x4x4) -> ActNorm ``an`` -> Output ``z``, with ``training`` as its section."""
    from revstudio.core.graph import Graph

    g = Graph("flat")
    if training is not None:
        g.training = dict(training)
    g.add_node("Input", "x", {"shape": [1, 4, 4]})
    g.add_node("ActNorm", "an", {})
    g.add_node("Output", "z", {})
    g.connect("x.out", "an.in")
    g.connect("an.out", "z.in")
    return g


def pixel_classifier() -> Any:
    """Graph ``img``: Input ``x`` (1x4x4 pixels) -> Linear ``fc`` (10 classes) -> Output ``y``."""
    from revstudio.core.graph import Graph

    g = Graph("img")
    g.add_node("Input", "x", {"shape": [1, 4, 4]})
    g.add_node("Linear", "fc", {"out_features": 10})
    g.add_node("Output", "y", {})
    g.connect("x.out", "fc.in")
    g.connect("fc.out", "y.in")
    return g
