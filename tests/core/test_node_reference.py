"""The node reference (``core.node_reference``): docs/nodes.md, ``revstudio nodes`` and the app's
help are rendered from each type's one declaration, and docs/nodes.md is kept up to date."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from revstudio.core import node_reference as ref
from revstudio.core.params import GroupRef, Int
from revstudio.core.plugins import Provider
from revstudio.core.spec import NodeSpec, Registry, SavedTensors, registry

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "nodes.md"


def test_docs_nodes_md_is_what_the_declarations_render() -> None:
    """REVSTUDIO_UPDATE_DOCS=1 rewrites it (whole, or not at all) instead of failing."""
    want = ref.markdown(registry)
    if os.environ.get("REVSTUDIO_UPDATE_DOCS") == "1":
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=DOC.parent, delete=False, suffix=".tmp") as f:
            f.write(want)
        os.replace(f.name, DOC)
    have = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    assert have == want, ("docs/nodes.md is out of date with the node declarations: run "
                          "REVSTUDIO_UPDATE_DOCS=1 pytest tests/core/test_node_reference.py")


def test_the_readme_links_the_node_reference() -> None:
    assert "(docs/nodes.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("spec", list(registry), ids=lambda s: s.type_id)
def test_every_built_in_type_says_its_shapes_memory_and_an_example(spec: NodeSpec) -> None:
    assert spec.shape_rule, f"{spec.type_id}: declare shape_rule (the shape rule in words)"
    assert spec.memory_note, f"{spec.type_id}: declare memory_note (what its backward keeps)"
    for name, param in spec.params.items():
        assert param.help, f"{spec.type_id}.{name} has no help text"
    if spec.type_id in ("GroupInput", "GroupOutput"):  # (only inside a body: no example of their own)
        return
    found = ref.example(spec)
    assert found is not None, f"{spec.type_id}: declare an example"
    if not any(isinstance(p, GroupRef) for p in spec.params.values()):
        assert found["outputs"] is not None, f"{spec.type_id}: its example fails its own infer"


def test_birnn_says_which_axis_is_time_and_its_example_runs_its_infer() -> None:
    text = ref.text(registry.get("BiRNN"), registry)
    assert "reads (features, time): time is the last axis" in text
    assert 'Example: BiRNN(hidden_size=32, cell="lstm") on 8x64 gives out 64x64' in text
    assert "hidden_size (int, default 32; use an integer >= 1" in text
    assert "one of rnn_tanh, rnn_relu, lstm, gru" in text
    assert "Invertible: no" in text
    assert ref.entry(registry.get("BiRNN"), registry)["example"] == {
        "params": {"hidden_size": "32", "cell": '"lstm"'}, "inputs": [[8, 64]], "outputs": {"out": [64, 64]}}
    assert registry.get("BiRNN").reads((8, 64)) == "64 steps of 8 features (time is the last axis)"
    assert registry.get("Conv").reads((8, 64)) is None


def test_a_coupling_names_its_f_and_g_and_is_invertible() -> None:
    text = ref.text(registry.get("AdditiveCoupling"), registry)
    assert "F reads x2's shape and must give x1's, G reads x1's and must give x2's" in text
    assert "Invertible: yes" in text
    assert "f (group" in text and "g (group" in text


def test_a_summary_is_the_first_sentence_not_cut_at_an_abbreviation() -> None:
    assert ref.summary(registry.get("Flatten")) == "Turns each sample into one long vector, e.g. 8x4x4 into 128."
    assert ref.summary(registry.get("Linear")) == "A fully connected layer."


def test_a_mistyped_type_names_the_closest() -> None:
    ids = [s.type_id for s in registry]
    assert ref.closest("BiRNM", ids)[0] == "BiRNN"
    assert ref.closest("affinecoupling", ids)[0] == "AffineCoupling"
    assert ref.closest("zzzzzzzz", ids) == []


def _plugin_registry(saved: object) -> tuple[Registry, NodeSpec]:
    fresh = Registry()
    list(fresh)  # the built-in catalog first, as on any machine
    spec = NodeSpec(type_id="Haar", category="Wavelets", help="A Haar step; keeps it simple. More words.",
                    params={"levels": Int(default=1, min=1, max=4, help="How many levels.")},
                    inputs=("in",), outputs=("out",), infer=lambda ctx: {"out": ctx.input("in")},
                    saved_for_backward=saved, examples=(({"levels": 2}, ((4, 8),)),))  # type: ignore[arg-type]
    fresh.register(spec, Provider("haar", "rsp_haar:SPECS", "revstudio-haar", "1.0"))
    return fresh, spec


def test_a_plugin_type_is_marked_and_its_memory_said_from_its_declaration() -> None:
    fresh, spec = _plugin_registry(("in",))
    row = ref.overview_row(spec, fresh)
    assert (row["builtin"], row["plugin"], row["summary"]) == (False, "revstudio-haar", "A Haar step.")
    assert ref.memory_text(spec) == "keeps its input 'in' for backward."
    assert ref.text(spec, fresh).startswith("Haar (Wavelets, plugin revstudio-haar)\n")
    assert "Example: Haar(levels=2) on 4x8 gives out 4x8" in ref.text(spec, fresh)
    assert "## Haar" not in ref.markdown(fresh)  # docs/nodes.md is the built-in catalog's alone
    assert ref.overview_row(fresh.get("Conv"), fresh)["builtin"] is True
    undeclared = _plugin_registry(None)[1]
    assert ref.memory_text(undeclared).startswith("not declared: the memory estimate assumes it keeps every input")
    own = _plugin_registry(SavedTensors(ports=("out",), values=3))[1]
    assert ref.memory_text(own) == "keeps its output 'out' and tensors of its own for backward."


def test_a_plugin_reading_rule_that_fails_says_nothing_rather_than_stop_a_report() -> None:
    def broken(shape: object) -> str:
        raise ZeroDivisionError("plugin bug")

    spec = NodeSpec(type_id="Odd", category="X", help="Odd.", params={}, inputs=("in",), outputs=("out",),
                    infer=lambda ctx: {"out": ctx.input("in")}, reading=broken)
    assert spec.reads((4, 8)) is None
    words = NodeSpec(type_id="Seq", category="X", help="Seq.", params={}, inputs=("in",), outputs=("out",),
                     infer=lambda ctx: {"out": ctx.input("in")}, reading=lambda shape: f"{shape[-1]} steps")
    assert words.reads((4, 8)) == "8 steps"
