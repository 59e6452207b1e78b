"""Exported code is the compiled module: bit-identical outputs and gradients in every mode.

Each graph is exported, run in a subprocess in which revstudio cannot be
imported, loaded with the compiled module's ``state_dict`` and compared with
``revstudio.compile`` on the same batch, seed and loss: outputs, input
gradients, parameter gradients and buffers must be equal bit for bit on CPU.
"""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from conftest import assert_identical  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.compiler import compile as rs_compile  # noqa: E402
from revstudio.core import generate  # noqa: E402
from revstudio.core.project import load  # noqa: E402

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "resources" / "examples").glob("*.revs"))
MODES = ["reversible", "standard", "checkpoint"]


def make_io(model, batch: int = 2, seed: int = 0, train: bool = True) -> dict:
    g = torch.Generator().manual_seed(seed)
    dtypes = {"float32": torch.float32, "float64": torch.float64}
    inputs = [torch.randn(batch, *op.shape, generator=g, dtype=dtypes.get(op.dtype, torch.float32))
              for op in sorted(model.plan.inputs, key=lambda o: o.index)]
    with torch.no_grad():
        probe = model(*[x.clone() for x in inputs])
    outs = probe if isinstance(probe, tuple) else (probe,)
    weights = [torch.randn(o.shape, generator=g, dtype=o.dtype) for o in outs]
    return {"state_dict": model.state_dict(), "inputs": inputs, "weights": weights, "modes": MODES,
            "seed": seed, "train": train}


def check_graph(graph, harness, seed: int = 0, train: bool = True) -> None:
    torch.manual_seed(seed)
    model = rs_compile(graph, device="cpu")
    io = make_io(model, seed=seed, train=train)
    source = export(graph)
    got = harness.standalone(source, io)
    # a fresh compiled copy with the same weights, so both sides start from the same state
    model = rs_compile(graph, device="cpu")
    model.load_state_dict(io["state_dict"])
    ref = harness.reference(model, io)
    meta = got.pop("__meta__")
    assert not meta["revstudio_imported"]
    assert meta["state_keys"] == list(model.state_dict().keys())
    assert_identical(ref, got)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_run_identically(path: Path, harness) -> None:
    check_graph(load(path), harness)


@pytest.mark.parametrize("wired", [True, False], ids=["wired", "coupling"])
def test_revnet_chains_run_identically(wired: bool, harness) -> None:
    check_graph(generate.revnet_chain(2, channels=8, size=6, wired=wired), harness)


@pytest.mark.parametrize("seed", range(6))
def test_random_graphs_run_identically(seed: int, harness) -> None:
    check_graph(generate.random_graph(seed, max_nodes=14), harness, seed=seed, train=seed % 2 == 0)
