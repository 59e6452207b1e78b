"""Runs an exported file where revstudio cannot be imported and compares it with ``revstudio.compile``.

``standalone`` (a fixture) writes the export, loads the compiled module's
``state_dict`` into the exported ``Model`` in a ``python -I`` subprocess whose
import system refuses ``revstudio``, runs every mode, and returns outputs and
gradients; ``reference`` does the same in-process with the compiled module,
through the very same step function, so the two can be compared bit for bit.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

# One step per mode: same seed, same loss, gradients of inputs and parameters.
# The text runs both in the child (standalone) and here (reference).
STEP = r'''
import torch


def run_modes(model, inputs, weights, modes, seed, train):
    results = {}
    model.train(train)
    for mode in modes:
        model.mode = mode
        model.zero_grad(set_to_none=True)
        xs = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
        torch.manual_seed(seed)
        out = model(*xs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        loss = sum((o * w).sum() for o, w in zip(outs, weights))
        loss.backward()
        results[mode] = {
            "outputs": [o.detach().clone() for o in outs],
            "input_grads": [None if x.grad is None else x.grad.clone() for x in xs],
            "param_grads": {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None},
            "buffers": {n: b.clone() for n, b in model.named_buffers()},
        }
    return results
'''

DRIVER = STEP + r'''
import importlib.abc
import importlib.util
import sys


class _NoRevstudio(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "revstudio" or name.startswith("revstudio."):
            raise ImportError(f"revstudio must not be imported by an export (tried {name})")
        return None


sys.meta_path.insert(0, _NoRevstudio())
export_path, io_path, out_path = sys.argv[1:4]
torch.set_num_threads(1)
spec = importlib.util.spec_from_file_location("exported_model", export_path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
io = torch.load(io_path, weights_only=True)
model = module.Model()
missing = model.load_state_dict(io["state_dict"], strict=True)
results = run_modes(model, io["inputs"], io["weights"], io["modes"], io["seed"], io["train"])
results["__meta__"] = {
    "revstudio_imported": any(m == "revstudio" or m.startswith("revstudio.") for m in sys.modules),
    "modes": list(getattr(module, "MODES", ())),
    "state_keys": list(model.state_dict().keys()),
}
torch.save(results, out_path)
'''


def _step() -> Callable[..., dict[str, Any]]:
    namespace: dict[str, Any] = {}
    exec(compile(STEP, "<step>", "exec"), namespace)
    return namespace["run_modes"]


class Harness:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp

    def reference(self, model: Any, io: dict[str, Any]) -> dict[str, Any]:
        import torch

        # the child runs on one thread: reductions split over threads would round differently
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return _step()(model, io["inputs"], io["weights"], io["modes"], io["seed"], io["train"])
        finally:
            torch.set_num_threads(threads)

    def standalone(self, source: str, io: dict[str, Any], name: str = "exported.py") -> dict[str, Any]:
        import torch

        export = self.tmp / name
        export.write_text(source, encoding="utf-8")
        io_path, out_path, driver = self.tmp / "io.pt", self.tmp / "out.pt", self.tmp / "driver.py"
        torch.save(io, io_path)
        driver.write_text(DRIVER, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["OMP_NUM_THREADS"] = "1"
        proc = subprocess.run(
            [sys.executable, "-I", str(driver), str(export), str(io_path), str(out_path)],
            capture_output=True, text=True, cwd=self.tmp, env=env, timeout=300,
        )
        assert proc.returncode == 0, f"the exported file failed standalone:\n{proc.stderr[-4000:]}"
        return torch.load(out_path, weights_only=True)


def assert_identical(ref: dict[str, Any], got: dict[str, Any]) -> None:
    """Bit-identical outputs, input gradients, parameter gradients and buffers in every mode."""
    import torch

    for mode, expected in ref.items():
        actual = got[mode]
        for kind in ("outputs", "input_grads"):
            assert len(expected[kind]) == len(actual[kind]), (mode, kind)
            for i, (a, b) in enumerate(zip(expected[kind], actual[kind])):
                assert (a is None) == (b is None), (mode, kind, i)
                if a is not None:
                    assert a.dtype == b.dtype and a.shape == b.shape, (mode, kind, i)
                    assert torch.equal(a, b), f"{mode}: {kind}[{i}] differs by {(a - b).abs().max()}"
        for kind in ("param_grads", "buffers"):
            assert expected[kind].keys() == actual[kind].keys(), (mode, kind)
            for key, a in expected[kind].items():
                assert torch.equal(a, actual[kind][key]), f"{mode}: {kind} {key} differs"


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path)
