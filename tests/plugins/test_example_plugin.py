"""The example plugin (examples/plugin) works wherever a built-in node type does.

It is installed as pip would (a dist-info on PYTHONPATH, see plugin_site.py) and
driven through the CLI in child processes, so the registry loads it from its
entry point: check, gradcheck (reversible regions through its invertible nodes),
export (one layer imported from the plugin, one inlined), training steps, the
catalog's own per-type tests, and the editor's palette and inspector.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from plugin_site import EXAMPLE_PLUGIN, ROOT, add_distribution, env_with, haar_env, python, revstudio

PROJECT = EXAMPLE_PLUGIN / "haar_flow.revs"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return haar_env(tmp_path_factory.mktemp("site"))


def test_the_plugin_is_listed_with_its_package(env: dict[str, str]) -> None:
    result = revstudio(env, "plugins", "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    haar = [p for p in info["plugins"] if p["distribution"] == "revstudio-haar"]
    assert haar and haar[0]["types"] == ["HaarDownsample", "InvertibleLeakyReLU"]
    assert haar[0]["version"] == "0.1.0" and not info["problems"]
    assert info["plugins"][0]["builtin"]  # the built-in catalog is loaded first


def test_check_infers_shapes_and_finds_the_reversible_region(env: dict[str, str]) -> None:
    result = revstudio(env, "check", str(PROJECT), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["nodes"]["haar"]["outputs"] == {"out": [12, 8, 8]}
    assert report["nodes"]["leaky"]["outputs"] == {"out": [12, 8, 8]}
    (region,) = report["regions"]
    assert {"haar", "leaky"} <= set(region["nodes"])


def test_gradcheck_agrees_through_the_plugin_nodes(env: dict[str, str]) -> None:
    result = revstudio(env, "gradcheck", str(PROJECT))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "inversion error" in result.stdout


EXPORT_CHECK = """
import importlib.util, sys, torch
import revstudio as rs
spec = importlib.util.spec_from_file_location("haar_model", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
g = rs.load(sys.argv[2])
model = rs.compile(g, mode="reversible", device="cpu")
exported = mod.Model()
exported.load_state_dict(model.state_dict())
x = torch.randn(4, 3, 16, 16, generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    a, b = model(x), exported(x)
    back = exported.inverse(b)
assert torch.allclose(a, b, atol=1e-6), (a - b).abs().max()
assert torch.allclose(model.logdet, exported.logdet, atol=1e-5)
assert torch.allclose(back, x, atol=1e-4), (back - x).abs().max()
print("ok")
"""


def test_export_imports_one_layer_and_inlines_the_other(env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "haar_model.py"
    result = revstudio(env, "export", str(PROJECT), "-o", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    text = out.read_text()
    assert "from revstudio_haar.haar import HaarDownsample" in text  # the plugin's own module
    assert "class InvertibleLeakyReLU(nn.Module):" in text          # __revstudio_inline__ = True
    assert "revstudio_haar.leaky" not in text
    assert "needs only PyTorch and the plugin revstudio-haar" in text
    # leaky.py brings `from __future__ import annotations`: revstudio's own inlined runtime must
    # then not keep its quoted annotations (UP037), with this project's ruff settings or ruff's own
    assert text.startswith('"""') and "\nfrom __future__ import annotations\n" in text
    for config in (["--config", str(ROOT / "pyproject.toml")], ["--isolated"]):
        lint = subprocess.run([sys.executable, "-m", "ruff", "check", *config, str(out)],
                              capture_output=True, text=True, timeout=120)
        assert lint.returncode == 0, lint.stdout[-3000:]
    script = tmp_path / "check_export.py"
    script.write_text(EXPORT_CHECK)
    run = subprocess.run([sys.executable, "-P", str(script), str(out), str(PROJECT)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.stdout.strip() == "ok", run.stderr


TRAIN = """
import torch
import revstudio as rs
g = rs.load(%r)
torch.manual_seed(0)
model = rs.compile(g, mode="reversible", device="cpu")
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
x = torch.randn(16, 3, 16, 16)
losses = []
for step in range(15):
    z = model(x)
    nll = (0.5 * z.pow(2).flatten(1).sum(1) - model.logdet).mean()
    opt.zero_grad(); nll.backward(); opt.step()
    losses.append(nll.item())
assert losses[-1] < losses[0], losses
print("ok")
"""


def test_a_flow_with_plugin_nodes_trains(env: dict[str, str]) -> None:
    result = python(env, TRAIN % str(PROJECT))
    assert result.stdout.strip() == "ok", result.stderr


def test_a_training_run_records_the_plugin_it_trained_with(env: dict[str, str], tmp_path: Path) -> None:
    """environment.json named torch's version but not the plugin packages the project ran."""
    out = tmp_path / "run"
    result = revstudio(env, "train", str(PROJECT), "--steps", "2", "--data", "synthetic", "--batch-size", "4",
                       "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    environment = json.loads((out / "environment.json").read_text())
    assert environment["plugins"] == {"revstudio-haar": "0.1.0"}


def test_the_catalog_tests_check_the_plugin_types(env: dict[str, str]) -> None:
    """tests/nodes runs its shape, count, inverse, float64 gradcheck, saved-for-backward and
    fresh-output tests on NodeSpec.examples."""
    result = subprocess.run(
        [sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/nodes/test_catalog_modules.py",
         "tests/nodes/test_saved_for_backward.py", "tests/nodes/test_fresh_output.py",
         "-k", "HaarDownsample or InvertibleLeakyReLU"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    passed = int(result.stdout.strip().splitlines()[-1].split()[0])
    # 4 examples x (shapes, count, gradcheck, under CPU bf16 autocast, what backward keeps,
    # fresh output) + 4 inverse checks
    assert passed == 28, result.stdout[-2000:]


def test_the_memory_estimate_counts_the_plugin_nodes_as_declared(env: dict[str, str]) -> None:
    """The types declare what their backward keeps (``saved_for_backward``), and the reversible
    runtime runs the leaky ReLU, which computes, as it runs any computing flow layer: the
    estimate matches the measured peak in every mode, no node approximate (undeclared, the
    standard mode was 5 % over, and reversible 8 %, the runtime then running it on each half
    of a compensated pair apart)."""
    result = revstudio(env, "memory", str(PROJECT), "--json", "--batch", "8", "--repeat", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    for mode, measured in report["modes"].items():
        estimated = report["estimate"]["modes"][mode]["peak_bytes"]
        assert abs(estimated - measured["peak_bytes"]) <= 0.005 * measured["peak_bytes"], (mode, estimated, measured)
    assert not any(node.get("approximate") for node in report["estimate"]["nodes"].values())


GUI = """
import sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from revstudio.qt.main_window import MainWindow
w = MainWindow()
assert {"HaarDownsample", "InvertibleLeakyReLU"} <= set(w.node_palette.visible_type_ids())
assert w.files.load_path(sys.argv[1])
graph = w.document.graph
scene = w.tabs.current_view().scene()
assert scene.node_items["haar"].display.known_type
w.inspector.set_selection(graph, ["leaky"])
assert "slope" in w.inspector.editors
w.inspector.editors["slope"].committed.emit(0.25)   # an edit through the inspector: one undo step
assert graph.nodes["leaky"].params["slope"] == 0.25
w.document.undo_stack.undo()
assert graph.nodes["leaky"].params["slope"] == 0.5
print("ok")
"""


def test_the_editor_offers_and_edits_plugin_nodes(env: dict[str, str]) -> None:
    result = subprocess.run([sys.executable, "-P", "-c", GUI, str(PROJECT)], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.stdout.strip().splitlines()[-1:] == ["ok"], result.stdout + result.stderr


FRESH = textwrap.dedent('''
    from revstudio.core.spec import NodeSpec


    def build(ctx):
        from torch import nn

        class Swish(nn.Module):
            def forward(self, x):
                return (x * x.sigmoid(),)   # a product: memory of its own that its backward does not read

        return Swish()


    SPECS = [NodeSpec(type_id="SwishNotFresh", category="Tests", help="fresh_output left False", params={},
                      inputs=("in",), outputs=("out",), infer=lambda ctx: {"out": ctx.input("in")},
                      count_params=lambda ctx: 0, build=build, examples=(({}, ((3, 4),)),))]
''')


def test_the_catalog_tests_hold_a_plugin_s_fresh_output_to_its_module(tmp_path: Path) -> None:
    """docs/plugins.md says tests/nodes/test_fresh_output.py compares a plugin's fresh_output with its
    built module; it ran the built-in cases only, so no plugin type was ever checked."""
    site = add_distribution(tmp_path, "revstudio-fresh", "0.1", {"fresh": "fresh_nodes:SPECS"},
                            {"fresh_nodes.py": FRESH})
    result = subprocess.run(
        [sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/nodes/test_fresh_output.py",
         "-k", "SwishNotFresh"], env=env_with(site), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 failed" in result.stdout.strip().splitlines()[-1], result.stdout[-2000:]
    assert "SwishNotFresh" in result.stdout
