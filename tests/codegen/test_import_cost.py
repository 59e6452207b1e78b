"""Importing an exported file, building its Model and training a step costs ``import torch``,
not torch.compile's machinery: ``torch._dynamo`` loads only when something compiles."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from revstudio.codegen import export  # noqa: E402
from revstudio.core.project import load  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"

# reversible and standard mode run a step (checkpoint mode is left out: torch.utils.checkpoint
# itself imports torch._dynamo on its first call, torch's cost, not the export's)
USE = r'''
import sys
import torch
import exported

model = exported.Model()
x = [torch.randn(2, *shape, dtype=dtype) for shape, dtype in exported.INPUTS.values()]
for mode in ("reversible", "standard"):
    model.mode = mode
    out = model(*x)
    (out if isinstance(out, tuple) else (out,))[0].sum().backward()
loaded = sorted(m for m in sys.modules if m.startswith("torch._dynamo"))
print("dynamo" if loaded else "no dynamo", loaded[:3])
'''


@pytest.mark.parametrize("name", ["revnet_wired", "glow_flow"])
def test_importing_and_running_an_export_does_not_load_dynamo(tmp_path, name: str) -> None:
    (tmp_path / "exported.py").write_text(export(load(str(EXAMPLES / f"{name}.revs"))), encoding="utf-8")
    done = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n" + USE],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no dynamo"), done.stdout


@pytest.mark.slow
def test_torch_compile_still_runs_a_reversible_region_outside_its_graph(tmp_path) -> None:
    """The laziness keeps what the decorator did: a trace skips the region's Function (a graph
    break), and the compiled model's gradients are the eager ones."""
    import torch
    import torch._dynamo

    namespace: dict = {}
    exec(compile(export(load(str(EXAMPLES / "revnet_wired.revs"))), "exported.py", "exec"), namespace)
    torch.manual_seed(0)
    model = namespace["Model"]()
    x = torch.randn(2, 3, 16, 16)

    def grads(net) -> list:
        model.zero_grad(set_to_none=True)
        net(x).square().sum().backward()
        return [p.grad.clone() for p in model.parameters()]

    eager = grads(model)
    torch._dynamo.reset()
    traced = grads(torch.compile(model, backend="aot_eager"))
    assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(traced, eager))
    explained = torch._dynamo.explain(model)(x)
    # (inside forward's try, which names an input the layers refuse, dynamo records the break
    # without its reason: one break, two graphs either way)
    reasons = [r.reason for r in explained.break_reasons]
    assert explained.graph_break_count == 1 and explained.graph_count == 2, explained
    assert all("torch.compiler.disable" in r for r in reasons), reasons


@pytest.mark.slow
def test_torch_compile_runs_an_exported_models_initialisation_eagerly() -> None:
    """ActNorm's data-dependent init is run once, outside the compiled graph (DESIGN section 5), as
    the compiled module's ``initialize`` is: the exported one was traced, dynamo broke its graph on
    ``Tensor.item`` and printed a warning about it on a model's first compiled call."""
    import torch
    from torch._dynamo.utils import counters

    namespace: dict = {}
    exec(compile(export(load(str(EXAMPLES / "glow_flow.revs"))), "exported.py", "exec"), namespace)
    x = torch.randn(4, 3, 16, 16)
    torch.manual_seed(0)
    eager, traced = namespace["Model"](), namespace["Model"]()
    traced.load_state_dict(eager.state_dict())
    torch._dynamo.reset()
    counters.clear()
    got = torch.compile(traced, backend="eager")(x)
    assert torch.allclose(got, eager(x), rtol=1e-5, atol=1e-6)  # initialised as eagerly
    breaks = list(counters["graph_break"])
    assert not [b for b in breaks if "item" in b], breaks
