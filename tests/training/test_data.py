"""Data sources and task inference: every format, every refusal, checked before any training step."""
from __future__ import annotations

import gzip
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from revstudio.core.check import check  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.training.data import DataError, load_data, peek_data  # noqa: E402
from revstudio.training.task import TaskInfo, infer_task  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "examples"


def classifier(shape: tuple[int, ...] = (1, 6, 5), classes: int = 7, head: str = "fc") -> Graph:
    g = Graph("clf")
    g.add_node("Input", "img", {"shape": list(shape)})
    g.add_node("Linear", head, {"out_features": classes})
    g.add_node("Output", "y")
    g.connect("img.out", f"{head}.in")
    g.connect(f"{head}.out", "y.in")
    return g


def same_size(shape: tuple[int, ...] = (4,), flow: bool = False) -> Graph:
    g = Graph("same")
    g.add_node("Input", "x", {"shape": list(shape)})
    g.add_node("ActNorm" if flow else "Activation", "layer", {} if flow else {"fn": "tanh"})
    g.add_node("Output", "z")
    g.connect("x.out", "layer.in")
    g.connect("layer.out", "z.in")
    return g


def prepared(graph: Graph, spec: str, requested: str = "auto", **kw: Any) -> Any:
    report = check(graph)
    assert report.valid, [str(d) for d in report.errors]
    return load_data(spec, graph, report, task=infer_task(graph, report, requested), **kw)


# ---- task inference --------------------------------------------------------------------------

def test_examples_get_their_task() -> None:
    for name, kind, classes in [("revnet_wired", "classification", 10), ("birnn_sequence", "classification", 5),
                                ("glow_flow", "flow", None), ("digits_revnet", "classification", 10)]:
        graph = load(EXAMPLES / f"{name}.revs")
        task = infer_task(graph, check(graph))
        assert (task.kind, task.num_classes) == (kind, classes), name
        assert task.loss_name() == {"classification": "cross-entropy", "flow": "nll"}[kind]


def test_task_guess_and_refusals_name_the_node() -> None:
    assert infer_task(same_size(), check(same_size())).kind == "regression"
    flow = same_size(flow=True)
    assert infer_task(flow, check(flow)).kind == "flow"
    assert infer_task(flow, check(flow), "regression").kind == "regression"
    g = classifier()
    with pytest.raises(DataError, match="task 'flow' needs a log-determinant: the graph has no AffineCoupling, "
                                        "ActNorm or InvConv1x1"):
        infer_task(g, check(g), "flow")
    one_channel = same_size((1, 8, 8))  # (one score a pixel: no classes to tell apart)
    with pytest.raises(DataError, match="Output 'z' .* reads 1x8x8"):
        infer_task(one_channel, check(one_channel), "classification")
    with pytest.raises(DataError, match="not known"):
        infer_task(g, check(g), "ranking")


def test_a_flow_inside_a_group_body_counts() -> None:
    graph = load(EXAMPLES / "glow_flow.revs")
    from revstudio.training.task import has_logdet

    assert has_logdet(graph) == "actnorm0"
    assert has_logdet(load(EXAMPLES / "revnet_coupling.revs")) is None


def test_several_outputs_the_loss_reads_the_first() -> None:
    g = classifier()
    g.add_node("Output", "extra")
    g.connect("fc.out", "extra.in")
    task = infer_task(g, check(g))
    assert task.output_id == "y" and task.kind == "classification"
    with pytest.raises(DataError, match="2 Outputs: z, z2; the loss reads the first, 'z'"):
        bad = same_size((1, 3, 4))  # (2 x 3 x 4 would be scores of a class per pixel: classification fits)
        bad.add_node("Output", "z2")
        bad.connect("layer.out", "z2.in")
        infer_task(bad, check(bad), "classification")


# ---- synthetic -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.revs")))
def test_synthetic_fits_every_example_and_is_fixed_by_the_seed(name: str) -> None:
    graph = load(EXAMPLES / f"{name}.revs")
    a = prepared(graph, "synthetic", seed=3)
    b = prepared(graph, "synthetic", seed=3)
    c = prepared(graph, "synthetic", seed=4)
    (node, x), = a.train.inputs.items()
    assert torch.equal(x, b.train.inputs[node]) and not torch.equal(x, c.train.inputs[node])
    assert 32 <= len(a.train) + len(a.val) <= 4096 and x.dtype == torch.float32
    assert abs(len(a.val) - 0.1 * (len(a.train) + len(a.val))) <= 1
    if a.task.kind == "classification":
        assert a.train.targets.dtype == torch.int64
        assert set(a.train.targets.tolist()) == set(range(a.task.num_classes))
    model = __import__("revstudio").compile(graph, device="cpu")
    out = model(*[v[:4] for v in a.train.inputs.values()])
    assert (out[0] if isinstance(out, tuple) else out).shape[0] == 4


def test_synthetic_targets_are_learnable_by_design() -> None:
    # class means differ by far more than the noise averaged over a sample
    data = prepared(classifier((3, 8, 8), classes=4), "synthetic")
    x, y = data.train.inputs["img"], data.train.targets
    means = torch.stack([x[y == k].mean(0) for k in range(4)])
    assert (means[0] - means[1]).abs().mean() > 0.3
    reg = prepared(same_size((3, 5, 5)), "synthetic")
    assert reg.task.kind == "regression" and reg.train.targets.shape[1:] == (3, 5, 5)
    assert reg.train.targets.abs().max() <= 1.0  # a tanh teacher


def test_synthetic_flow_on_two_dims_is_two_moons_and_bounded_for_large_inputs() -> None:
    moons = prepared(same_size((2,), flow=True), "synthetic", val_fraction=0.0)
    pts = moons.train.inputs["x"]
    assert moons.task.kind == "flow" and moons.train.targets is None and moons.val is None
    assert pts.shape == (4096, 2) and pts[:, 0].abs().max() < 1.8 and pts[:, 1].abs().max() < 1.0
    big = prepared(classifier((3, 128, 128), classes=3), "synthetic", val_fraction=0.0)
    assert big.train.inputs["img"].numel() * 4 <= 48 << 20


def test_birnn_gets_class_dependent_sequences() -> None:
    graph = load(EXAMPLES / "birnn_sequence.revs")
    data = prepared(graph, "synthetic")
    x, y = data.train.inputs["sequence"], data.train.targets
    spectrum = torch.fft.rfft(x, dim=-1).abs().mean(dim=1)
    peaks = [int(spectrum[y == k].mean(0)[1:].argmax()) + 1 for k in range(5)]
    assert len(set(peaks)) == 5  # each class has its own frequency


# ---- .npz / .pt ------------------------------------------------------------------------------

def save_npz(path: Path, **arrays: Any) -> str:
    np.savez(path, **arrays)
    return str(path)


def test_npz_and_pt_load_with_a_channel_axis_added_and_the_split_fixed(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.random((50, 6, 5)).astype(np.float32), rng.integers(0, 7, 50)
    save_npz(tmp_path / "d.npz", x=x, y=y)
    torch.save({"x": torch.from_numpy(x), "y": torch.from_numpy(y)}, tmp_path / "d.pt")
    a = prepared(classifier(), "d.npz", base_dir=str(tmp_path), seed=1)
    b = prepared(classifier(), str(tmp_path / "d.pt"), seed=1)
    assert a.train.inputs["img"].shape == (45, 1, 6, 5) and len(a.val) == 5
    assert torch.equal(a.train.inputs["img"], b.train.inputs["img"]) and torch.equal(a.val.targets, b.val.targets)
    assert a.describe() == "d.npz: 45 train / 5 val, x 1x6x5, 7 classes"
    c = prepared(classifier(), "d.npz", base_dir=str(tmp_path), seed=2)
    assert not torch.equal(a.val.targets, c.val.targets) or not torch.equal(a.val.inputs["img"],
                                                                              c.val.inputs["img"])
    idx = torch.tensor([0, 2])
    xs, ys = a.train.batch(idx)
    assert xs["img"].shape == (2, 1, 6, 5) and ys.tolist() == a.train.targets[idx].tolist()


def test_val_data_and_several_inputs_by_node_id(tmp_path: Path) -> None:
    g = Graph("two")
    g.add_node("Input", "a", {"shape": [3]})
    g.add_node("Input", "b", {"shape": [2]})
    g.add_node("Merge", "m", {"mode": "concat"})
    g.add_node("Linear", "fc", {"out_features": 2})
    g.add_node("Output", "y")
    for s, d in [("a.out", "m.in0"), ("b.out", "m.in1"), ("m.out", "fc.in"), ("fc.out", "y.in")]:
        g.connect(s, d)
    save_npz(tmp_path / "t.npz", a=np.ones((8, 3)), b=np.zeros((8, 2)), y=np.arange(8) % 2)
    save_npz(tmp_path / "v.npz", a=np.ones((3, 3)), b=np.zeros((3, 2)), y=np.zeros(3, dtype=np.int64))
    data = prepared(g, str(tmp_path / "t.npz"), val_spec=str(tmp_path / "v.npz"))
    assert len(data.train) == 8 and len(data.val) == 3 and set(data.train.inputs) == {"a", "b"}
    save_npz(tmp_path / "x.npz", x=np.ones((8, 3)), y=np.arange(8) % 2)
    with pytest.raises(DataError, match="missing array 'a' .*found x, y"):
        prepared(g, str(tmp_path / "x.npz"))


def test_float_targets_make_an_automatic_guess_regression(tmp_path: Path) -> None:
    save_npz(tmp_path / "r.npz", x=np.zeros((10, 1, 6, 5), np.float32), y=np.random.rand(10, 7))
    data = prepared(classifier(), str(tmp_path / "r.npz"))
    assert data.task.kind == "regression" and data.train.targets.dtype == torch.float32
    with pytest.raises(DataError, match="classification needs one int64 class index"):
        prepared(classifier(), str(tmp_path / "r.npz"), requested="classification")
    # one real number per sample for a 7-class head: said as such (it read "of shape a scalar")
    save_npz(tmp_path / "s.npz", x=np.zeros((10, 1, 6, 5), np.float32), y=np.random.rand(10))
    with pytest.raises(DataError, match=r"holds one real value per sample; .* output's shape 7\)$"):
        prepared(classifier(), str(tmp_path / "s.npz"))


@pytest.mark.parametrize("arrays, message", [
    ({"y": np.zeros(4, np.int64)}, "missing array 'x'"),
    ({"x": np.zeros((4, 1, 6, 5))}, "missing array 'y'"),
    ({"x": np.zeros((4, 1, 5, 6)), "y": np.zeros(4, np.int64)},
     "samples of shape 1x5x6 .*Input node 'img' expects 1x6x5"),
    ({"x": np.zeros((4, 1, 6, 5)), "y": np.array([0, 1, 2, 9])}, "10 classes in the labels, 7 outputs in head 'fc'"),
    ({"x": np.zeros((4, 1, 6, 5)), "y": np.arange(4) - 1}, "label -1"),
    ({"x": np.full((4, 1, 6, 5), np.nan), "y": np.zeros(4, np.int64)}, r"NaN or Inf values \(4 samples, "),
    ({"x": np.concatenate([np.zeros((3, 1, 6, 5)), np.full((1, 1, 6, 5), np.inf)]), "y": np.zeros(4, np.int64)},
     r"NaN or Inf values \(1 sample, the first is sample 3\)"),
    ({"x": np.zeros((4, 1, 6, 5)), "y": np.zeros(5, np.int64)}, "'y' has 5 samples, the inputs have 4"),
    ({"x": np.array(["a", "b"]), "y": np.zeros(2, np.int64)}, "dtype <U1 .*expected numbers"),
])
def test_npz_refusals(tmp_path: Path, arrays: dict[str, Any], message: str) -> None:
    path = save_npz(tmp_path / "bad.npz", **arrays)
    with pytest.raises(DataError, match=message) as info:
        prepared(classifier(), path)
    assert "bad.npz" in str(info.value) or "head 'fc'" in str(info.value)


def test_uint64_labels_beyond_int64_are_reported_as_they_are(tmp_path: Path) -> None:
    """A label of 2**63 or more was reported as a negative number ("has the label -9223...",
    "class indices start at 0"): it wrapped round when cast to int64 before the check."""
    y = np.array([0, 1, 2**63 + 5, 3], np.uint64)
    path = save_npz(tmp_path / "u64.npz", x=np.zeros((4, 1, 6, 5), np.float32), y=y)
    with pytest.raises(DataError, match=r"labels 0\.\.9223372036854775813,"):
        prepared(classifier(), path)
    y[2] = 2**64 - 1
    path = save_npz(tmp_path / "u64.npz", x=np.zeros((4, 1, 6, 5), np.float32), y=y)
    with pytest.raises(DataError, match=r"labels 0\.\.18446744073709551615,"):
        prepared(classifier(), path)


def test_unpickling_is_refused(tmp_path: Path) -> None:
    np.savez(tmp_path / "obj.npz", x=np.array([{"a": 1}, None], dtype=object), y=np.zeros(2, np.int64))
    with pytest.raises(DataError, match="Python objects"):
        prepared(classifier(), str(tmp_path / "obj.npz"))
    torch.save({"x": torch.zeros(2, 1, 6, 5), "y": Path("/etc")}, tmp_path / "obj.pt")
    with pytest.raises(DataError, match="weights_only=True"):
        prepared(classifier(), str(tmp_path / "obj.pt"))
    torch.save([torch.zeros(2)], tmp_path / "list.pt")
    with pytest.raises(DataError, match="expected a dict of tensors"):
        prepared(classifier(), str(tmp_path / "list.pt"))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(DataError, match="not a .npz archive"):
        prepared(classifier(), str(tmp_path / "junk.npz"))
    with pytest.raises(DataError, match="no such file"):
        prepared(classifier(), str(tmp_path / "missing.npz"))
    with pytest.raises(DataError, match="not a known source"):
        prepared(classifier(), "data.csv")


# ---- MNIST (IDX) and CIFAR-10 (binary) ----------------------------------------------------------

def idx(path: Path, array: np.ndarray, gz: bool = False, magic: bytes | None = None) -> None:
    head = (magic or bytes([0, 0, 8, array.ndim])) + struct.pack(">" + "I" * array.ndim, *array.shape)
    data = head + array.astype(np.uint8).tobytes()
    if gz:
        with gzip.open(str(path) + ".gz", "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)


def mnist_dir(root: Path, n: int = 20, h: int = 6, w: int = 5, gz: bool = False, test: bool = True) -> Path:
    root.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    idx(root / "train-images-idx3-ubyte", rng.integers(0, 256, (n, h, w)), gz)
    idx(root / "train-labels-idx1-ubyte", np.arange(n) % 7, gz)
    if test:
        idx(root / "t10k-images-idx3-ubyte", np.full((4, h, w), 255), gz)
        idx(root / "t10k-labels-idx1-ubyte", np.arange(4), gz)
    return root


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_any_size_plain_or_gzipped_t10k_is_validation(tmp_path: Path, gz: bool) -> None:
    mnist_dir(tmp_path / "m", gz=gz)
    data = prepared(classifier(), "mnist:m", base_dir=str(tmp_path))
    assert data.train.inputs["img"].shape == (20, 1, 6, 5) and len(data.val) == 4
    assert float(data.val.inputs["img"].max()) == 1.0 and float(data.train.inputs["img"].min()) >= 0.0
    assert data.train.targets.tolist() == [i % 7 for i in range(20)]
    peek = peek_data("mnist:m", base_dir=str(tmp_path))
    assert peek["arrays"]["x"] == [20, 1, 6, 5] and peek["classes"] == 7 and peek["samples"] == 20


def test_mnist_without_t10k_holds_out_a_fraction(tmp_path: Path) -> None:
    mnist_dir(tmp_path / "m", test=False)
    data = prepared(classifier(), f"mnist:{tmp_path / 'm'}")
    assert (len(data.train), len(data.val)) == (18, 2)


def test_mnist_refusals(tmp_path: Path) -> None:
    root = mnist_dir(tmp_path / "m")
    with pytest.raises(DataError, match="Input node 'img' expects 1x8x8"):
        prepared(classifier((1, 8, 8)), f"mnist:{root}")
    idx(root / "train-images-idx3-ubyte", np.zeros((20, 6, 5)), magic=b"\x00\x00\x0d\x03")
    with pytest.raises(DataError, match="bad magic number 00000d03"):
        prepared(classifier(), f"mnist:{root}")
    data = bytes([0, 0, 8, 3]) + struct.pack(">III", 20, 6, 5) + bytes(100)
    (root / "train-images-idx3-ubyte").write_bytes(data)
    with pytest.raises(DataError, match="truncated: the header gives 20x6x5 = 600 bytes of data, the file has 100"):
        prepared(classifier(), f"mnist:{root}")
    idx(root / "train-images-idx3-ubyte", np.zeros((19, 6, 5)))
    with pytest.raises(DataError, match="19 images but .* 20 labels"):
        prepared(classifier(), f"mnist:{root}")
    (root / "train-images-idx3-ubyte").unlink()
    (root / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(bytes(range(256)) * 40)[:200])
    with pytest.raises(DataError, match="gzip"):
        prepared(classifier(), f"mnist:{root}")
    (root / "train-images-idx3-ubyte.gz").unlink()
    with pytest.raises(DataError, match="train-images-idx3-ubyte .* is missing"):
        prepared(classifier(), f"mnist:{root}")
    with pytest.raises(DataError, match="no such folder"):
        prepared(classifier(), f"mnist:{tmp_path / 'nowhere'}")


def cifar_batch(path: Path, labels: list[int]) -> None:
    rng = np.random.default_rng(len(labels))
    recs = [bytes([lab]) + rng.integers(0, 256, 3072).astype(np.uint8).tobytes() for lab in labels]
    path.write_bytes(b"".join(recs))


def test_cifar10_batches_and_test_batch(tmp_path: Path) -> None:
    root = tmp_path / "c" / "cifar-10-batches-bin"
    root.mkdir(parents=True)
    cifar_batch(root / "data_batch_1.bin", [0, 1, 2])
    cifar_batch(root / "data_batch_2.bin", [9, 3])
    cifar_batch(root / "test_batch.bin", [4])
    g = classifier((3, 32, 32), classes=10)
    data = prepared(g, f"cifar10:{tmp_path / 'c'}")
    assert data.train.inputs["img"].shape == (5, 3, 32, 32) and data.train.targets.tolist() == [0, 1, 2, 9, 3]
    assert len(data.val) == 1 and 0 <= float(data.train.inputs["img"].min()) <= float(
        data.train.inputs["img"].max()) <= 1
    raw = (root / "data_batch_1.bin").read_bytes()
    assert abs(float(data.train.inputs["img"][0, 0, 0, 0]) - raw[1] / 255) < 1e-7
    assert peek_data(f"cifar10:{tmp_path / 'c'}")["arrays"] == {
        "x": [5, 3, 32, 32], "y": [5], "val x": [1, 3, 32, 32], "val y": [1]}
    with pytest.raises(DataError, match="10 classes in the labels, 7 outputs in head 'fc'"):
        prepared(classifier((3, 32, 32)), f"cifar10:{tmp_path / 'c'}")
    (root / "data_batch_2.bin").write_bytes(raw[:3073 + 100])
    with pytest.raises(DataError, match="truncated or corrupt: 3173 bytes"):
        prepared(g, f"cifar10:{tmp_path / 'c'}")
    (root / "data_batch_2.bin").write_bytes(bytes([200]) + raw[1:3073])
    with pytest.raises(DataError, match="label byte 200"):
        prepared(g, f"cifar10:{tmp_path / 'c'}")
    for p in root.glob("data_batch_*"):
        p.unlink()
    with pytest.raises(DataError, match="no data_batch_1.bin"):
        prepared(g, f"cifar10:{tmp_path / 'c'}")


# ---- the preview of the run-settings dialog ------------------------------------------------------

def test_peek_imports_no_torch(tmp_path: Path) -> None:
    save_npz(tmp_path / "d.npz", x=np.zeros((9, 1, 6, 5), np.float32), y=np.arange(9) % 3)
    mnist_dir(tmp_path / "m", gz=True)
    code = (
        "import sys, json\n"
        "from revstudio.training.data import peek_data\n"
        f"a = peek_data('d.npz', base_dir={str(tmp_path)!r})\n"
        f"b = peek_data('mnist:m', base_dir={str(tmp_path)!r})\n"
        "print(json.dumps([a, b, 'torch' in sys.modules]))\n")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    import json

    a, b, imported = json.loads(out.stdout)
    assert a == {"arrays": {"x": [9, 1, 6, 5], "y": [9]}, "classes": 3, "samples": 9, "kind": "npz",
                 "uint8": [], "y_dtype": "int64"}  # (y's number type: what task auto makes of the labels)
    assert b["arrays"]["val x"] == [4, 1, 6, 5] and imported is False
    assert peek_data("synthetic")["samples"] == 0


def test_task_info_is_the_contract() -> None:
    t = TaskInfo("classification", 10, "y")
    assert t.loss_name() == "cross-entropy" and TaskInfo("flow", None, "z").loss_name() == "nll"


def test_absolute_spec_makes_relative_and_home_paths_absolute(tmp_path: Path, monkeypatch) -> None:
    from revstudio.training.data import absolute_spec

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    base = str(tmp_path / "proj")
    assert absolute_spec("d.npz", base) == str(tmp_path / "proj" / "d.npz")
    assert absolute_spec("../data/d.pt", base) == str(tmp_path / "data" / "d.pt")
    assert absolute_spec("mnist:mn", base) == f"mnist:{tmp_path / 'proj' / 'mn'}"
    # "~" is the user's home, as the data loader reads it, not a folder named "~" in the project
    assert absolute_spec("~/d.npz", base) == str(tmp_path / "home" / "d.npz")
    assert absolute_spec("cifar10:~/c", base) == f"cifar10:{tmp_path / 'home' / 'c'}"
    for unchanged in ("synthetic", str(tmp_path / "abs.npz"), "mnist:/abs/mn", "data.csv", None, 3):
        assert absolute_spec(unchanged, base) == unchanged


@pytest.mark.parametrize("layout, order", [
    ((0, 2, 1), r"numpy.transpose\(x, \(0, 2, 1\)\)"),  # N x steps x features
    ((2, 0, 1), r"axis 1 holds the samples; .*numpy.transpose\(x, \(1, 2, 0\)\)"),  # time-major
])
def test_a_sequence_in_another_axis_order_is_refused_naming_the_transpose(tmp_path, layout, order) -> None:
    graph = load(EXAMPLES / "birnn_sequence.revs")  # Input 'sequence' is 12 features x 32 steps
    x = np.random.default_rng(0).standard_normal((20, 12, 32)).astype(np.float32)
    np.savez(tmp_path / "seq.npz", x=x.transpose(layout), y=np.zeros(20, np.int64))
    with pytest.raises(DataError, match="Input node 'sequence' expects 12x32.*" + order) as err:
        prepared(graph, str(tmp_path / "seq.npz"))
    fixed = eval("np." + str(err.value).split("numpy.")[1].split(" gives")[0], {"np": np, "x": x.transpose(layout)})
    assert np.array_equal(fixed, x)  # the suggested call really restores N x features x steps
