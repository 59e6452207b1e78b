"""uint8 inputs of a .npz / .pt are scaled to [0, 1] by default, as mnist: / cifar10: pixels are (and
torchvision's ToTensor): the same images fed from a user's file trained on values 255 times larger.
The start says so; ``scale_uint8`` false keeps them raw; labels and other number types never change."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from pixel_kit import actnorm_flow, mnist_folder, pixel_classifier, random_pixels, write_uint8_npz
from training_kit import Rows

from revstudio.core.graph import Graph
from revstudio.diagnostics.check import full_check
from revstudio.training.config import ConfigError, TrainConfig
from revstudio.training.data import load_data
from revstudio.training.loop import train
from revstudio.training.task import infer_task

PIXELS = np.arange(16 * 16, dtype=np.int64).reshape(16, 1, 4, 4) % 256


def _load(graph: Graph, spec: str, tmp_path: Path, **kw):
    report = full_check(graph, batch=8)
    return load_data(spec, graph, report, task=infer_task(graph, report), base_dir=str(tmp_path), **kw)


def _mnist(root: Path, train: np.ndarray, val: np.ndarray) -> str:
    """``mnist:root`` of N x 1 x H x W images."""
    return f"mnist:{mnist_folder(root, train[:, 0], val[:, 0])}"


def test_uint8_inputs_of_a_npz_are_the_pixels_mnist_reads_and_the_start_says_so(tmp_path: Path) -> None:
    np.savez(tmp_path / "d.npz", x=PIXELS.astype(np.uint8), y=(np.arange(16) % 10).astype(np.uint8))
    spec = _mnist(tmp_path / "m", PIXELS, PIXELS[:4])
    g = pixel_classifier()
    ours = _load(g, "d.npz", tmp_path, val_fraction=0.0)
    builtin = _load(g, spec, tmp_path)
    assert torch.equal(ours.train.inputs["x"], builtin.train.inputs["x"])
    assert float(ours.train.inputs["x"].max()) == 1.0
    # labels are never scaled: uint8 class indices stay 0..9
    assert ours.train.targets.dtype == torch.int64 and ours.train.targets.tolist() == list(np.arange(16) % 10)
    assert ours.inputs_note().startswith("inputs: uint8 scaled to [0, 1] (x: k / 255")
    assert builtin.inputs_note() is None  # (mnist: is scaled as it always was)


def test_scale_uint8_false_keeps_raw_bytes_and_says_so(tmp_path: Path) -> None:
    write_uint8_npz(tmp_path / "d.npz", PIXELS, classes=10)
    data = _load(pixel_classifier(), "d.npz", tmp_path, val_fraction=0.0, scale_uint8=False)
    assert data.train.inputs["x"].max() == 255.0
    assert data.inputs_note() == "inputs: uint8 kept raw 0..255 (x; scale_uint8 false)"


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "float32", "float64"])
def test_other_number_types_stay_as_they_are(tmp_path: Path, dtype: str) -> None:
    values = (PIXELS % 100).astype(dtype)
    np.savez(tmp_path / "d.npz", x=values, y=np.arange(16) % 10)
    data = _load(pixel_classifier(), "d.npz", tmp_path, val_fraction=0.0)
    assert data.train.inputs["x"].tolist() == torch.from_numpy(values.astype("float32")).tolist()
    assert data.inputs_note() is None and data.uint8 == []


def test_a_pt_of_uint8_tensors_is_scaled_too(tmp_path: Path) -> None:
    torch.save({"x": torch.from_numpy(PIXELS.astype(np.uint8)), "y": torch.arange(16) % 10}, tmp_path / "d.pt")
    data = _load(pixel_classifier(), "d.pt", tmp_path, val_fraction=0.0)
    assert float(data.train.inputs["x"].max()) == 1.0 and data.uint8 == ["x"]


def test_only_the_uint8_input_of_several_is_scaled(tmp_path: Path) -> None:
    g = Graph("two")
    g.add_node("Input", "img", {"shape": [4]})
    g.add_node("Input", "side", {"shape": [4]})
    g.add_node("Merge", "m", {"mode": "add", "inputs": 2})
    g.add_node("Linear", "fc", {"out_features": 3})
    g.add_node("Output", "y", {})
    for a, b in (("img.out", "m.in0"), ("side.out", "m.in1"), ("m.out", "fc.in"), ("fc.out", "y.in")):
        g.connect(a, b)
    x = np.full((6, 4), 200, dtype=np.uint8)
    np.savez(tmp_path / "d.npz", img=x, side=x.astype(np.int16), y=np.arange(6) % 3)
    data = _load(g, "d.npz", tmp_path, val_fraction=0.0)
    assert data.uint8 == ["img"] and "(img: k / 255" in data.inputs_note()
    assert data.train.inputs["img"].max() == pytest.approx(200 / 255) and data.train.inputs["side"].max() == 200


def _flow_run(graph: Graph, spec: str, tmp_path: Path, **kw) -> tuple[list[float], float]:
    cfg = TrainConfig.from_section({}).replace(data=spec, steps=4, batch_size=8, lr=1e-3, log_every=1, val_every=4,
                                               gradcheck_every=0, memory_every=0, checkpoint_every=0, **kw)
    report = full_check(graph, batch=8)
    data = load_data(cfg.data, graph, report, task=infer_task(graph, report), val_spec=cfg.val_data,
                     seed=cfg.seed, base_dir=str(tmp_path), scale_uint8=cfg.scale_uint8)
    rows = Rows()
    assert train(graph, report, cfg, data, callbacks=[rows]).status == "finished"
    return [r["loss"] for r in rows.kind("step")], rows.kind("val")[-1]["val_loss"]


def test_a_flow_on_uint8_npz_images_is_dequantised_as_on_mnist_with_the_same_bits_per_dim(tmp_path: Path) -> None:
    train_px, val_px = random_pixels(24, 8)
    write_uint8_npz(tmp_path / "t.npz", train_px)
    write_uint8_npz(tmp_path / "v.npz", val_px)
    g = actnorm_flow()
    report = full_check(g, batch=8)
    data = load_data("t.npz", g, report, task=infer_task(g, report), val_spec="v.npz", base_dir=str(tmp_path))
    assert data.levels == 256 and "bits/dim + 8" in data.describe()
    ours = _flow_run(g, "t.npz", tmp_path, val_data="v.npz")
    builtin = _flow_run(actnorm_flow(), _mnist(tmp_path / "m", train_px, val_px), tmp_path)
    assert ours == builtin
    assert all(0 < v < 16 for v in [*ours[0], ours[1]])  # bits of 8-bit data: never below 0


def test_a_flow_on_raw_or_mixed_data_is_modelled_as_given(tmp_path: Path) -> None:
    write_uint8_npz(tmp_path / "t.npz", PIXELS)
    np.savez(tmp_path / "f.npz", x=(PIXELS / 255).astype(np.float32))
    g = actnorm_flow()
    report = full_check(g, batch=8)
    task = infer_task(g, report)
    raw = load_data("t.npz", g, report, task=task, base_dir=str(tmp_path), scale_uint8=False)
    mixed = load_data("t.npz", g, report, task=task, val_spec="f.npz", base_dir=str(tmp_path))
    floats = load_data("f.npz", g, report, task=task, base_dir=str(tmp_path))
    assert raw.levels is None and mixed.levels is None and floats.levels is None


def test_the_setting_is_a_run_setting_of_true_or_false() -> None:
    assert TrainConfig.from_section({}).scale_uint8 is True  # (projects and runs from before: scaled)
    assert TrainConfig.from_section({"scale_uint8": False}).to_section() == {"version": 1, "scale_uint8": False}
    assert "scale_uint8" not in TrainConfig.from_section({}).to_section()
    with pytest.raises(ConfigError, match=r"training.scale_uint8: expected true .* or false .*got 'no'"):
        TrainConfig.from_section({"scale_uint8": "no"})


@pytest.mark.parametrize("dtype", ["int16", "int64", "float32"])
def test_pixels_in_another_number_type_are_left_as_they_are_and_named_at_the_start(tmp_path: Path,
                                                                                    dtype: str) -> None:
    np.savez(tmp_path / "d.npz", x=PIXELS.astype(dtype), y=np.arange(16) % 10)
    data = _load(pixel_classifier(), "d.npz", tmp_path, val_fraction=0.0)
    assert data.train.inputs["x"].max() == 255.0 and data.uint8 == []
    assert data.inputs_note() == (
        f"inputs: 'x' holds whole numbers 0..255 as {dtype}, which stay as they are (only uint8 arrays are scaled "
        "to [0, 1]); if they are 8-bit pixels, save them as uint8 or divide them by 255")


@pytest.mark.parametrize("values", [PIXELS.astype(np.uint8), (PIXELS / 255).astype(np.float32),
                                    (PIXELS - 128).astype(np.int16), (PIXELS % 128).astype(np.int8),
                                    PIXELS.astype(np.float32) + 0.5],
                         ids=["uint8-scaled", "floats-in-0-1", "signed", "int8", "not-whole"])
def test_no_word_on_pixels_for_data_that_are_scaled_or_are_not_pixels(tmp_path: Path, values: np.ndarray) -> None:
    np.savez(tmp_path / "d.npz", x=values, y=np.arange(16) % 10)
    note = _load(pixel_classifier(), "d.npz", tmp_path, val_fraction=0.0).inputs_note()
    assert note is None or ("whole numbers" not in note and note.startswith("inputs: uint8 scaled"))
