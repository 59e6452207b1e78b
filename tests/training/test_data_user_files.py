"""A user's own data files that are slightly wrong: each is refused naming the file and what to do,
or read as the user meant it, never an internal error or a wrong reason.

A data file larger than memory was an "internal error: MemoryError"; an array cut short inside a
.npz was said to hold "Python objects (dtype object)".
"""
from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from training_kit import linear_classifier

from revstudio.training import arrays, sources
from revstudio.training.sources import DataError, load_arrays


def _refusal(path: Path) -> str:
    with pytest.raises(DataError) as err:
        load_arrays(str(path))
    return str(err.value)


def _npz_with_header(path: Path, shape: tuple[int, ...], data: bytes) -> None:
    """A .npz whose 'x' header claims ``shape`` (float32) with only ``data`` behind it."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": shape})
    buf.write(data)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("x.npy", buf.getvalue())


def test_an_array_cut_short_inside_a_npz_is_called_corrupt_not_python_objects(tmp_path) -> None:
    path = tmp_path / "d.npz"
    _npz_with_header(path, (1000, 8), b"\0" * 100)
    message = _refusal(path)
    assert message.startswith(f"{path}: array 'x' is cut short or corrupt") and "numpy.savez" in message
    assert "objects" not in message and "pickle" not in message


def test_a_npz_larger_than_memory_is_refused_from_its_headers_naming_the_array(tmp_path, monkeypatch) -> None:
    path = tmp_path / "big.npz"
    np.savez(path, x=np.zeros((64, 1, 8, 8), "float32"), y=np.zeros(64, "int64"))
    monkeypatch.setattr(arrays, "_memory_bytes", lambda: 4096)
    message = _refusal(path)
    assert message.startswith(f"{path}: the arrays hold 0.0 GiB ('x' is 64x1x8x8 float32), more than this "
                              "machine's 0.0 GiB of memory; a run loads its data whole")


def test_a_npz_whose_header_asks_more_than_memory_never_reaches_numpy(tmp_path) -> None:
    path = tmp_path / "huge.npz"
    _npz_with_header(path, (2**40, 64), b"\0" * 100)  # 256 TiB claimed
    assert "more than this machine's" in _refusal(path)


def test_a_pt_file_larger_than_memory_is_refused_before_torch_load(tmp_path, monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "big.pt"
    torch.save({"x": torch.zeros(64, 4), "y": torch.zeros(64, dtype=torch.int64)}, path)
    monkeypatch.setattr(arrays, "_memory_bytes", lambda: 1024)
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load was called"))
    assert "more than this machine's 0.0 GiB of memory" in _refusal(path)


# ---- inputs that do not fit the Input node: say what to change, the node or the data ------------

def _input_refusal(x: np.ndarray, want: tuple[int, ...] = (1, 8, 8)) -> str:
    torch = pytest.importorskip("torch")
    with pytest.raises(DataError) as err:
        sources.check_inputs({"img": torch.from_numpy(x)}, {"img": (want, "float32")}, "d.npz")
    return str(err.value)


def test_other_sizes_say_to_set_the_input_nodes_shape_or_save_the_array_as_the_node_expects() -> None:
    message = _input_refusal(np.zeros((4, 3, 8, 8), "float32"))
    assert message.endswith("Input node 'img' expects 1x8x8 (an N x 1x8x8 array); if the data are right, set "
                            "Input node 'img' to shape 3x8x8; else save 'x' as an N x 1x8x8 array")


def test_flattened_samples_get_the_reshape_that_restores_the_nodes_shape() -> None:
    message = _input_refusal(np.zeros((4, 64), "float32"))
    assert "x.reshape(len(x), 1, 8, 8) gives N x 1x8x8" in message
    assert "or set Input node 'img' to shape 64" in message


def test_revstudio_check_gives_the_same_advice_from_the_headers(tmp_path) -> None:
    from revstudio.training.data import data_problem

    np.savez(tmp_path / "d.npz", x=np.zeros((4, 3, 8, 8), "float32"), y=np.zeros(4, "int64"))
    problem = data_problem("d.npz", {"img": (1, 8, 8)}, str(tmp_path))
    assert problem is not None and problem.endswith("set Input node 'img' to shape 3x8x8; else save 'x' as an "
                                                    "N x 1x8x8 array")


# ---- one-hot labels ----------------------------------------------------------------------------

def _classifier_bundle(y: np.ndarray, tmp_path: Path, requested: str = "auto"):  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    from revstudio.core.check import check
    from revstudio.training.data import load_data
    from revstudio.training.task import infer_task

    g = linear_classifier()
    np.savez(tmp_path / "d.npz", x=np.random.default_rng(0).normal(size=(len(y), 4)).astype("float32"), y=y)
    report = check(g)
    return load_data("d.npz", g, report, task=infer_task(g, report, requested), val_fraction=0.0,
                     base_dir=str(tmp_path))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("requested", ["auto", "classification"])
def test_one_hot_labels_train_a_classifier_on_their_class_indices(tmp_path, dtype, requested) -> None:
    labels = np.array([0, 2, 1, 2, 0, 1])
    bundle = _classifier_bundle(np.eye(3, dtype=dtype)[labels], tmp_path, requested)
    assert bundle.task.kind == "classification" and bundle.task.num_classes == 3
    assert bundle.train.targets is not None and bundle.train.targets.tolist() == labels.tolist()


def test_float_targets_that_are_not_one_hot_stay_regression_under_auto(tmp_path) -> None:
    y = np.eye(3, dtype="float32")[[0, 2, 1, 2]] * 0.9  # soft values: real targets of the Output's shape
    bundle = _classifier_bundle(y, tmp_path)
    assert bundle.task.kind == "regression"


def test_one_hot_targets_stay_regression_when_regression_is_asked_for(tmp_path) -> None:
    bundle = _classifier_bundle(np.eye(3, dtype="float32")[[0, 2, 1, 2]], tmp_path, "regression")
    assert bundle.task.kind == "regression"


# ---- what revstudio check and the run-settings preview read from the headers -------------------

def test_check_and_the_preview_refuse_a_npz_larger_than_memory_before_any_run(tmp_path, monkeypatch) -> None:
    from revstudio.training.data import data_problem

    np.savez(tmp_path / "d.npz", x=np.zeros((64, 1, 8, 8), "float32"), y=np.zeros(64, "int64"))
    monkeypatch.setattr(arrays, "_memory_bytes", lambda: 4096)
    problem = data_problem("d.npz", {"img": (1, 8, 8)}, str(tmp_path))
    assert problem is not None and "more than this machine's 0.0 GiB of memory" in problem


def test_the_preview_counts_the_classes_of_one_hot_labels(tmp_path) -> None:
    from revstudio.training.data import peek_data

    np.savez(tmp_path / "d.npz", x=np.zeros((6, 4), "float32"), y=np.eye(3, dtype="float32")[[0, 1, 2, 0, 1, 2]])
    assert peek_data("d.npz", str(tmp_path))["classes"] == 3


# ---- arrays under other names ------------------------------------------------------------------

def test_inputs_under_another_name_are_refused_with_how_to_save_them(tmp_path) -> None:
    with pytest.raises(DataError) as err:
        _classifier_bundle_arrays(tmp_path, "d.npz", images=np.zeros((6, 4), "float32"), labels=np.zeros(6, "int64"))
    assert str(err.value).endswith("missing array 'x' (the inputs, N first); found images, labels; save the inputs "
                                   "under that name, e.g. numpy.savez(path, x=inputs, y=targets)")


def test_targets_under_another_name_are_refused_naming_them_not_just_missing(tmp_path) -> None:
    with pytest.raises(DataError) as err:
        _classifier_bundle_arrays(tmp_path, "d.pt", x=np.zeros((6, 4), "float32"), labels=np.zeros(6, "int64"))
    assert str(err.value).endswith("missing array 'y' (the targets: int64 class indices or float values), which a "
                                   "classification task needs; found labels, x; save the targets as 'y', e.g. "
                                   "torch.save({'x': inputs, 'y': labels}, path)")


def _classifier_bundle_arrays(tmp_path: Path, name: str, **arrays: np.ndarray):  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    from revstudio.training.sources import load_splits

    if name.endswith(".npz"):
        np.savez(tmp_path / name, **arrays)  # type: ignore[arg-type]
    else:
        torch.save({k: torch.from_numpy(v) for k, v in arrays.items()}, tmp_path / name)
    return load_splits(name, {"img": ((4,), "float32")}, kind="classification", num_classes=3, output_id="y",
                       head_id="fc", out_shape=(3,), base_dir=str(tmp_path))


def test_class_names_as_labels_are_refused_with_how_to_turn_them_into_indices(tmp_path) -> None:
    from revstudio.training.data import peek_data

    path = tmp_path / "d.npz"
    np.savez(path, x=np.zeros((3, 4), "float32"), y=np.array(["cat", "dog", "cat"]))
    fix = "; for class names, numpy.unique(y, return_inverse=True)[1] gives class indices 0..K-1 to save as 'y'"
    assert _refusal(path).endswith("expected numbers (float, int or bool)" + fix)
    with pytest.raises(DataError) as err:  # the run-settings preview says the same
        peek_data(str(path))
    assert str(err.value).endswith(fix)


@pytest.mark.parametrize(("spec", "fix"), [
    ("x.npy", "numpy.savez('d.npz', x=numpy.load('x.npy'), y=numpy.load('y.npy'))"),
    ("table.csv", "numpy.loadtxt(path, delimiter=...)"),
    ("photos", "a folder of image files is not read: load them into one N x C x H x W array"),
])
def test_data_in_a_format_not_read_says_how_to_make_a_npz_of_it(spec, fix) -> None:
    with pytest.raises(DataError) as err:
        sources.parse_spec(spec)
    assert str(err.value).startswith(f"data {spec!r} is not a known source; use synthetic, FILE.npz")
    assert fix in str(err.value)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_among_float_labels_is_named_as_such(tmp_path, bad) -> None:
    y = np.array([0, 1, 2, 1, 0, 2], "float32")
    y[4] = bad
    with pytest.raises(DataError) as err:
        _classifier_bundle(y, tmp_path, "classification")
    assert str(err.value).endswith("array 'y' has NaN or Inf values (1 sample, the first is sample 4); clean or "
                                   "drop them")
