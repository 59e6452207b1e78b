"""A large uncompressed .npz is mapped and read as it is used (``training.mapped``): each test lowers
``MAP_ABOVE`` so a small file takes that path, and compares it with the same file read whole (the
batches, the validation split, the digest a resume compares, the refusals and notes, the preview)."""
from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from revstudio.core.graph import Graph
from revstudio.diagnostics.check import full_check
from revstudio.training import arrays, mapped, sources
from revstudio.training.data import DataError, load_data, peek_data
from revstudio.training.mapped import Mapped
from revstudio.training.task import infer_task


def _classifier(shape: list[int]) -> Graph:
    g = Graph("img")
    g.add_node("Input", "x", {"shape": shape})
    g.add_node("Linear", "fc", {"out_features": 10})
    g.add_node("Output", "y", {})
    g.connect("x.out", "fc.in")
    g.connect("fc.out", "y.in")
    return g


def _load(path: Path, g: Graph, **kw: Any):
    report = full_check(g, batch=8)
    return load_data(str(path), g, report, task=infer_task(g, report, g.training.get("task", "auto")), **kw)


def _both(monkeypatch, path: Path, g: Graph, **kw: Any) -> tuple[Any, Any]:
    """(read whole, mapped) bundles of the same file; the mapped one walks 100 bytes a chunk."""
    whole = _load(path, g, **kw)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)
    monkeypatch.setattr(mapped, "CHUNK_BYTES", 100)
    return whole, _load(path, g, **kw)


def _refusal(monkeypatch, path: Path, g: Graph) -> tuple[str, str]:
    messages = []
    for above in (mapped.MAP_ABOVE, 0):
        monkeypatch.setattr(mapped, "MAP_ABOVE", above)
        monkeypatch.setattr(mapped, "CHUNK_BYTES", 100)
        with pytest.raises(DataError) as err:
            _load(path, g)
        messages.append(str(err.value))
    return messages[0], messages[1]


def test_a_mapped_npz_gives_the_batches_split_and_digest_of_the_file_read_whole(tmp_path, monkeypatch) -> None:
    x = (np.arange(40 * 16) * 7 % 256).astype(np.uint8).reshape(40, 4, 4)  # (N, H, W): a channel axis added
    np.savez(tmp_path / "d.npz", x=x, y=np.arange(40) % 10)
    whole, mapped_ = _both(monkeypatch, tmp_path / "d.npz", _classifier([1, 4, 4]))
    assert isinstance(mapped_.train.inputs["x"], Mapped) and not isinstance(whole.train.inputs["x"], Mapped)
    assert isinstance(mapped_.train.inputs["x"].array, np.memmap)
    assert mapped_.uint8 == whole.uint8 == ["x"] and mapped_.inputs_note() == whole.inputs_note()
    for a, b in ((whole.train, mapped_.train), (whole.val, mapped_.val)):
        assert len(a) == len(b)
        index = torch.randperm(len(a), generator=torch.Generator().manual_seed(1))  # (a shuffled batch)
        (xa, ya), (xb, yb) = a.batch(index), b.batch(index)
        assert xb["x"].dtype == torch.float32 and torch.equal(xa["x"], xb["x"]) and torch.equal(ya, yb)
    splits = [(s.inputs, s.targets) for s in (whole.train, whole.val)]
    assert sources.data_digest(splits) == sources.data_digest([(s.inputs, s.targets)
                                                             for s in (mapped_.train, mapped_.val)])
    assert isinstance(mapped_.train.targets, Mapped) and isinstance(mapped_.val.targets, Mapped)
    assert mapped_.describe() == whole.describe() + ", x, y mapped (read as used)"


def test_raw_uint8_and_a_float64_model_convert_each_batch_as_read_whole(tmp_path, monkeypatch) -> None:
    np.savez(tmp_path / "d.npz", x=(np.arange(24 * 16) % 256).astype(np.uint8).reshape(24, 1, 4, 4),
             y=np.arange(24) % 10)
    whole, mapped_ = _both(monkeypatch, tmp_path / "d.npz", _classifier([1, 4, 4]), scale_uint8=False,
                           val_fraction=0.0)
    index = torch.tensor([5, 0, 23])
    assert torch.equal(whole.train.batch(index)[0]["x"], mapped_.train.batch(index)[0]["x"])
    assert float(mapped_.train.batch(index)[0]["x"].max()) > 1  # (raw 0..255)


def test_nan_in_a_mapped_array_is_refused_as_read_whole(tmp_path, monkeypatch) -> None:
    x = np.zeros((30, 1, 2, 2), "float32")
    x[7, 0, 1, 1], x[19, 0, 0, 0], x[20, 0, 0, 1] = np.nan, np.inf, -np.inf  # (in three chunks of 100 bytes)
    np.savez(tmp_path / "d.npz", x=x, y=np.arange(30) % 10)
    whole, mapped_ = _refusal(monkeypatch, tmp_path / "d.npz", _classifier([1, 2, 2]))
    assert whole == mapped_ and "has NaN or Inf values (3 samples, the first is sample 7)" in mapped_


def test_float64_values_too_large_for_float32_are_refused_as_read_whole(tmp_path, monkeypatch) -> None:
    x = np.zeros((30, 4), "float64")
    x[12, 2] = 1e300  # (Inf once converted to the model's float32)
    np.savez(tmp_path / "d.npz", x=x, y=np.arange(30) % 10)
    whole, mapped_ = _refusal(monkeypatch, tmp_path / "d.npz", _classifier([4]))
    assert whole == mapped_ and "the first is sample 12" in mapped_


@pytest.mark.parametrize("dtype, high, fraction, named", [("int16", 255, False, True), ("float32", 200, False, True),
                                                           ("float32", 200, True, False), ("int16", 300, False, False)])
def test_the_pixel_like_note_reads_a_mapped_array_a_chunk_at_a_time(tmp_path, monkeypatch, dtype, high, fraction,
                                                                    named) -> None:
    x = (np.arange(40 * 4) % 100).astype(dtype).reshape(40, 4)
    x[30, 0] = high  # (the largest value, in a later chunk than the first)
    if fraction:
        x[37, 1] = 0.5  # (a value that is no whole number, in the last chunk)
    np.savez(tmp_path / "d.npz", x=x, y=np.arange(40) % 10)
    whole, mapped_ = _both(monkeypatch, tmp_path / "d.npz", _classifier([4]))
    assert mapped_.pixels == whole.pixels and bool(mapped_.pixels) is named


def test_a_large_uncompressed_npz_is_mapped_not_refused_for_memory(tmp_path, monkeypatch) -> None:
    np.savez(tmp_path / "d.npz", x=np.ones((64, 1, 8, 8), "float32"), y=np.arange(64) % 10)
    monkeypatch.setattr(arrays, "_memory_bytes", lambda: 4096)  # (x: 16 KiB; y, read whole: 512 bytes)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 1024)
    bundle = _load(tmp_path / "d.npz", _classifier([1, 8, 8]))
    assert isinstance(bundle.train.inputs["x"], Mapped) and len(bundle.train) + len(bundle.val) == 64


def test_a_compressed_npz_larger_than_memory_is_refused_naming_numpy_savez(tmp_path, monkeypatch) -> None:
    np.savez_compressed(tmp_path / "d.npz", x=np.zeros((64, 1, 8, 8), "float32"), y=np.zeros(64, "int64"))
    monkeypatch.setattr(arrays, "_memory_bytes", lambda: 4096)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)
    with pytest.raises(DataError) as err:
        sources.load_arrays(str(tmp_path / "d.npz"))
    assert "more than this machine's 0.0 GiB of memory" in str(err.value)
    assert "save it with numpy.savez (uncompressed) to train it without reading it whole" in str(err.value)


def test_a_mapped_member_cut_short_is_called_corrupt(tmp_path, monkeypatch) -> None:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": (1000, 8)})
    buf.write(b"\0" * 100)
    with zipfile.ZipFile(tmp_path / "d.npz", "w") as zf:
        zf.writestr("x.npy", buf.getvalue())
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)
    with pytest.raises(DataError) as err:
        sources.load_arrays(str(tmp_path / "d.npz"))
    assert str(err.value).startswith(f"{tmp_path / 'd.npz'}: array 'x' is cut short or corrupt (the header gives "
                                     "32000 bytes of data, the member holds 100)")


def test_a_fortran_order_array_is_mapped_in_its_order(tmp_path, monkeypatch) -> None:
    x = np.asfortranarray(np.arange(20 * 3, dtype="float32").reshape(20, 3))
    np.savez(tmp_path / "d.npz", x=x, y=np.arange(20) % 10)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)
    arrays = sources.load_arrays(str(tmp_path / "d.npz"))
    assert isinstance(arrays["x"], Mapped) and torch.equal(arrays["x"][[4, 2]], torch.from_numpy(x[[4, 2]]))


def test_the_preview_says_mapped_and_counts_labels_a_chunk_at_a_time(tmp_path, monkeypatch) -> None:
    y = np.eye(7, dtype="int64")[np.arange(50) % 7]  # one-hot rows
    np.savez(tmp_path / "d.npz", x=np.zeros((50, 4), "float32"), y=y)
    np.savez(tmp_path / "i.npz", x=np.zeros((50, 4), "float32"), y=np.arange(50) % 9)
    before = peek_data("d.npz", str(tmp_path)), peek_data("i.npz", str(tmp_path))
    assert "reading" not in before[0]  # (a small file: nothing to say)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)
    monkeypatch.setattr(mapped, "CHUNK_BYTES", 64)
    after = peek_data("d.npz", str(tmp_path)), peek_data("i.npz", str(tmp_path))
    assert [a["classes"] for a in after] == [b["classes"] for b in before] == [7, 9]
    assert after[0]["reading"] == "x, y mapped (read as used)"


def test_the_preview_and_the_start_say_read_whole_for_a_large_compressed_npz(tmp_path, monkeypatch) -> None:
    np.savez_compressed(tmp_path / "d.npz", x=np.random.default_rng(0).random((40, 4), "float32"),
                        y=np.arange(40) % 10)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 100)
    assert peek_data("d.npz", str(tmp_path))["reading"] == "read whole"
    assert _load(tmp_path / "d.npz", _classifier([4])).describe().endswith(", read whole")


def test_a_big_endian_array_is_read_in_this_machines_order_mapped_or_whole(tmp_path, monkeypatch) -> None:
    x = np.arange(30 * 4, dtype=">f4").reshape(30, 4)  # (numpy.savez keeps the byte order)
    np.savez(tmp_path / "d.npz", x=x, y=np.arange(30) % 10)
    whole, mapped_ = _both(monkeypatch, tmp_path / "d.npz", _classifier([4]), val_fraction=0.0)
    index = torch.tensor([29, 3])
    expected = torch.tensor(x[[29, 3]].astype("<f4"))
    assert torch.equal(whole.train.batch(index)[0]["x"], expected)
    assert torch.equal(mapped_.train.batch(index)[0]["x"], expected)


def _regressor(shape: list[int], out: int) -> Graph:
    g = Graph("reg")
    g.training = {"task": "regression"}
    g.add_node("Input", "x", {"shape": shape})
    g.add_node("Linear", "fc", {"out_features": out})
    g.add_node("Output", "y", {})
    g.connect("x.out", "fc.in")
    g.connect("fc.out", "y.in")
    return g


N = 30
LABELS = {  # name: (y, the graph's task: "auto" classifier of 10 scores or a regressor of 3 / 10 values)
    "int64": (np.arange(N) % 10, "auto"),
    "uint8 N x 1": ((np.arange(N) % 10).astype(np.uint8).reshape(N, 1), "auto"),
    "whole floats": ((np.arange(N) % 10).astype(np.float32), "auto"),
    "one-hot": (np.eye(10, dtype=np.int64)[np.arange(N) % 10], "auto"),
    "auto regression floats": (np.linspace(0, 1, N * 10).astype(np.float32).reshape(N, 10), "auto"),
    "regression N x 3": (np.linspace(-1, 1, N * 3).reshape(N, 3), "regression3"),
    "regression 3 values flat": (np.linspace(-1, 1, N * 3).reshape(N, 3, 1), "regression3"),
    "uint64 labels": ((np.arange(N) % 10).astype(np.uint64), "auto"),
}


def _graph(task: str) -> Graph:
    return _regressor([4], 3) if task == "regression3" else _classifier([4])


@pytest.mark.parametrize("name", list(LABELS))
def test_mapped_labels_give_the_task_batches_and_digest_of_the_labels_read_whole(tmp_path, monkeypatch,
                                                                                 name) -> None:
    y, task = LABELS[name]
    np.savez(tmp_path / "d.npz", x=np.random.default_rng(0).random((N, 4), "float32"), y=y)
    whole, mapped_ = _both(monkeypatch, tmp_path / "d.npz", _graph(task))
    assert mapped_.task == whole.task
    # (one-hot rows become their class indices, N int64s in memory: read a chunk at a time, not kept mapped)
    assert mapped_.describe() == whole.describe() + (", x mapped" if name == "one-hot" else ", x, y mapped") + \
        " (read as used)"
    for a, b in ((whole.train, mapped_.train), (whole.val, mapped_.val)):
        index = torch.randperm(len(a), generator=torch.Generator().manual_seed(2))
        ya, yb = a.batch(index)[1], b.batch(index)[1]
        assert ya.dtype == yb.dtype and torch.equal(ya, yb)
    assert sources.data_digest([(s.inputs, s.targets) for s in (whole.train, whole.val)]) == \
        sources.data_digest([(s.inputs, s.targets) for s in (mapped_.train, mapped_.val)])


BAD_LABELS = {  # name: (y, task, words the refusal has)
    "a label past the head": (np.arange(N) % 12, "auto", "12 classes in the labels, 10 outputs in head 'fc'"),
    "a negative label": (np.where(np.arange(N) == 17, -1, np.arange(N) % 10), "auto", "has the label -1"),
    "NaN among float labels": (np.where(np.arange(N) % 7 == 3, np.nan, np.arange(N) % 10), "classification",
                               "has NaN or Inf values (4 samples, the first is sample 3)"),
    "real values for a classifier": (np.linspace(0, 1, N), "classification", "holds one real value per sample"),
    "bool labels": (np.arange(N) % 2 == 0, "classification", "has dtype bool;"),
    "N x 2 labels": (np.zeros((N, 2), np.int64), "classification", "has targets of shape 2"),
    "NaN in regression targets": (np.where(np.arange(N * 3).reshape(N, 3) == 64, np.nan, 0.5), "regression3",
                                  "NaN or Inf values (the first at sample 21)"),
    "float64 too large for float32": (np.where(np.arange(N * 3).reshape(N, 3) == 40, 1e300, 0.5), "regression3",
                                      "the first at sample 13"),
    "regression targets of another shape": (np.zeros((N, 4)), "regression3", "has targets of shape 4"),
}


@pytest.mark.parametrize("name", list(BAD_LABELS))
def test_mapped_labels_are_refused_as_the_labels_read_whole(tmp_path, monkeypatch, name) -> None:
    y, task, words = BAD_LABELS[name]
    np.savez(tmp_path / "d.npz", x=np.zeros((N, 4), "float32"), y=y)
    g = _graph(task)
    if task == "classification":
        g.training = {"task": "classification"}
    whole, mapped_ = _refusal(monkeypatch, tmp_path / "d.npz", g)
    assert whole == mapped_ and words in mapped_


def _zip(path: Path, arrays: dict[str, np.ndarray], deflated: tuple[str, ...] = ()) -> None:
    """A .npz of ``arrays`` with the members in ``deflated`` compressed (numpy.savez_compressed's), the rest stored."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, array in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, array)
            zf.writestr(name + ".npy", buf.getvalue(),
                        zipfile.ZIP_DEFLATED if name in deflated else zipfile.ZIP_STORED)


def test_large_stored_labels_are_mapped_not_refused_for_memory(tmp_path, monkeypatch) -> None:
    _zip(tmp_path / "d.npz", {"x": np.ones((512, 4), "float32"), "y": np.arange(512) % 10})  # (y: 4 KiB)
    monkeypatch.setattr(arrays, "_memory_bytes", lambda: 3000)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 1024)
    bundle = _load(tmp_path / "d.npz", _classifier([4]))
    assert isinstance(bundle.train.targets, Mapped) and bundle.task.num_classes == 10


def test_large_compressed_labels_are_still_refused_naming_numpy_savez(tmp_path, monkeypatch) -> None:
    _zip(tmp_path / "d.npz", {"x": np.ones((512, 4), "float32"), "y": np.arange(512) % 10}, deflated=("y",))
    monkeypatch.setattr(arrays, "_memory_bytes", lambda: 3000)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 1024)  # (x is mapped; y, compressed, would be read whole)
    with pytest.raises(DataError) as err:
        _load(tmp_path / "d.npz", _classifier([4]))
    assert "the arrays hold 0.0 GiB ('y' is 512 int64)" in str(err.value)
    assert "is compressed (numpy.savez_compressed), which is read whole: save it with numpy.savez" in str(err.value)


def test_a_mapped_float_array_is_read_once_for_the_nan_check_the_pixel_note_and_the_digest(tmp_path,
                                                                                            monkeypatch) -> None:
    from revstudio.training import checkpoint

    x = (np.arange(60 * 4) % 200).astype(np.float32).reshape(60, 4)  # (whole numbers 0..199: pixel-like)
    np.savez(tmp_path / "d.npz", x=x, y=np.arange(60) % 10)
    whole, _ = _both(monkeypatch, tmp_path / "d.npz", _classifier([4]))
    read: list[int] = []
    chunks = Mapped.raw_chunks

    def counted(self):
        for start, rows in chunks(self):
            if self.array.ndim == 2:  # (x; the labels y are 1-D)
                read.append(len(rows))
            yield start, rows

    monkeypatch.setattr(Mapped, "raw_chunks", counted)
    bundle = _load(tmp_path / "d.npz", _classifier([4]))
    record = checkpoint.data_record(bundle)  # (what a run's start keeps: the digest)
    assert sum(read) == 60  # each sample once, in chunks of 100 bytes
    assert bundle.pixels == whole.pixels == [("x", "float32")]
    assert record["digest"] == checkpoint.data_record(whole)["digest"]


@pytest.mark.parametrize("name", ["uint64 labels", "regression N x 3"])
def test_mapped_targets_are_read_once_for_their_checks_and_the_digest(tmp_path, monkeypatch, name) -> None:
    """Integer labels' range and regression targets' NaN/Inf check each read y a scan of their own before
    the digest read it again."""
    y, task = LABELS[name]
    np.savez(tmp_path / "d.npz", x=np.random.default_rng(0).random((N, 4), "float32"), y=y)
    whole, _ = _both(monkeypatch, tmp_path / "d.npz", _graph(task))
    read: list[int] = []
    chunks = Mapped.raw_chunks

    def counted(self):
        for start, rows in chunks(self):
            if self.array.dtype == y.dtype and self.array.shape == y.shape:  # (y; x is N x 4 float32)
                read.append(len(rows))
            yield start, rows

    monkeypatch.setattr(Mapped, "raw_chunks", counted)
    bundle = _load(tmp_path / "d.npz", _graph(task))
    assert sum(read) == N and isinstance(bundle.train.targets, Mapped)
    from revstudio.training import checkpoint

    assert bundle.task == whole.task
    assert checkpoint.data_record(bundle)["digest"] == checkpoint.data_record(whole)["digest"]


# ---- a large .pt: torch.load(..., mmap=True) maps its tensors, read as used like a .npz's ----------

def test_a_large_pt_is_mapped_and_gives_the_batches_digest_and_preview_of_the_file_read_whole(tmp_path,
                                                                                               monkeypatch) -> None:
    x = torch.arange(40 * 16, dtype=torch.float32).reshape(40, 4, 4) % 97  # (N, H, W): a channel axis added
    torch.save({"x": x, "y": torch.arange(40) % 10}, tmp_path / "d.pt")
    whole, mapped_ = _both(monkeypatch, tmp_path / "d.pt", _classifier([1, 4, 4]))
    assert isinstance(mapped_.train.inputs["x"], Mapped) and isinstance(mapped_.train.targets, Mapped)
    for a, b in ((whole.train, mapped_.train), (whole.val, mapped_.val)):
        index = torch.randperm(len(a), generator=torch.Generator().manual_seed(3))
        (xa, ya), (xb, yb) = a.batch(index), b.batch(index)
        assert torch.equal(xa["x"], xb["x"]) and torch.equal(ya, yb)
    assert sources.data_digest([(s.inputs, s.targets) for s in (whole.train, whole.val)]) == mapped_.digest
    assert mapped_.describe() == whole.describe() + ", x, y mapped (read as used)"
    preview = peek_data("d.pt", str(tmp_path))
    assert preview["reading"] == "x, y mapped (read as used)" and preview["classes"] == 10


def test_a_large_pt_with_nan_is_refused_as_read_whole(tmp_path, monkeypatch) -> None:
    x = torch.zeros(30, 4)
    x[9, 1], x[25, 3] = float("nan"), float("inf")
    torch.save({"x": x, "y": torch.arange(30) % 10}, tmp_path / "d.pt")
    whole, mapped_ = _refusal(monkeypatch, tmp_path / "d.pt", _classifier([4]))
    assert whole == mapped_ and "(2 samples, the first is sample 9)" in mapped_


def test_a_large_pt_is_mapped_not_refused_for_memory_and_a_legacy_one_is_refused_naming_the_fix(tmp_path,
                                                                                                monkeypatch) -> None:
    data = {"x": torch.ones(256, 4), "y": torch.arange(256) % 10}
    torch.save(data, tmp_path / "d.pt")
    torch.save(data, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    monkeypatch.setattr(arrays, "_memory_bytes", lambda: 3000)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 1024)
    assert isinstance(sources.load_arrays(str(tmp_path / "d.pt"))["x"], Mapped)
    with pytest.raises(DataError) as err:
        sources.load_arrays(str(tmp_path / "old.pt"))
    assert "more than this machine's 0.0 GiB of memory; a .pt saved in the legacy format" in str(err.value)
    assert "save it again with torch.save's default format to train it without reading it whole" in str(err.value)


def test_a_large_legacy_pt_that_fits_is_read_whole_and_says_so(tmp_path, monkeypatch) -> None:
    torch.save({"x": torch.ones(64, 4), "y": torch.arange(64) % 10}, tmp_path / "d.pt",
               _use_new_zipfile_serialization=False)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 100)
    bundle = _load(tmp_path / "d.pt", _classifier([4]))
    assert not isinstance(bundle.train.inputs["x"], Mapped) and bundle.describe().endswith(", read whole")


def test_a_large_pt_tensor_saved_with_requires_grad_is_mapped(tmp_path, monkeypatch) -> None:
    x = torch.linspace(0, 1, 40).reshape(10, 4).requires_grad_()
    torch.save({"x": x, "y": torch.arange(10)}, tmp_path / "d.pt")
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)
    got = sources.load_arrays(str(tmp_path / "d.pt"))["x"]
    assert isinstance(got, Mapped) and torch.equal(got[[3, 1]], x.detach()[[3, 1]])
