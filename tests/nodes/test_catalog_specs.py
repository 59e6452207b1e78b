"""The declarations themselves: metadata, ports, shape rules' errors, parameter validation."""
from __future__ import annotations

import pytest
from catalog_cases import CASES, ERRORS, all_cases, case_id
from catalog_kit import NodeKit

from revstudio.core.params import ParamError, validate_all
from revstudio.core.spec import NodeSpec, ShapeError, registry

CATEGORIES = {"I/O", "Layers", "Recurrent", "Structure", "Invertible", "Couplings", "Groups"}
V1_TYPES = {
    "Input", "Output", "Conv", "BiRNN", "Linear", "Activation", "Norm", "Pool", "Dropout", "Flatten",
    "Reshape", "Split", "Concat", "Merge", "Permute", "InvConv1x1", "ActNorm", "Squeeze",
    "AdditiveCoupling", "AffineCoupling", "Group", "Repeat", "GroupInput", "GroupOutput",
}
INVERTIBLE = {"Flatten", "Reshape", "Split", "Concat", "Permute", "InvConv1x1", "ActNorm", "Squeeze",
              "AdditiveCoupling", "AffineCoupling", "GroupInput", "GroupOutput"}
# the built-in catalog; installed plugins' types are checked by their examples (test_catalog_modules)
SPECS = [s for s in registry if (p := registry.provider(s.type_id)) is None or p.builtin]


def test_the_v1_catalog_is_registered_and_every_type_has_test_cases() -> None:
    assert {s.type_id for s in SPECS} == V1_TYPES
    assert set(CASES) == V1_TYPES, "add examples of the new type to tests/nodes/catalog_cases.py"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.type_id)
def test_declaration_is_complete(spec) -> None:  # type: ignore[no-untyped-def]
    assert spec.category in CATEGORIES
    assert 20 <= len(spec.help) <= 400 and spec.help.endswith("."), spec.help
    assert set(spec.key_params) <= set(spec.params)
    for name, param in spec.params.items():
        assert param.help, f"{spec.type_id}.{name} needs help text"
        if name not in ("f", "net", "group"):  # required group names have no sensible default
            assert param.validate(param.default) == param.default
    assert spec.build is not None and spec.count_params is not None
    assert spec.invertible == (spec.type_id in INVERTIBLE)


def test_types_with_weights_offer_every_init_scheme() -> None:
    from revstudio.nodes._common import INIT_SCHEMES
    from revstudio.nodes.torch_modules.layers import INIT_SCHEMES as TORCH_SCHEMES

    assert INIT_SCHEMES == TORCH_SCHEMES
    for type_id in ("Conv", "BiRNN", "Linear"):
        param = registry.get(type_id).params["init"]
        assert param.options == INIT_SCHEMES and param.default == "default"


def test_variadic_ports_follow_params(kit: NodeKit) -> None:
    split, concat, merge = registry.get("Split"), registry.get("Concat"), registry.get("Merge")
    assert split.output_ports({"sections": 3}) == ("out0", "out1", "out2")
    assert split.output_ports({"sections": [2, 2, 4, 1]}) == ("out0", "out1", "out2", "out3")
    assert concat.input_ports({"inputs": 4}) == ("in0", "in1", "in2", "in3")
    assert merge.input_ports(merge.defaults()) == ("in0", "in1")
    assert split.output_ports({"sections": "junk"}) == ()  # a bad value: no ports, the checker reports it


def test_group_ports_come_from_the_body(kit: NodeKit) -> None:
    group, repeat = registry.get("Group"), registry.get("Repeat")
    assert group.input_ports({"group": "two"}, kit.groups) == ("a", "b")
    assert group.output_ports({"group": "two"}, kit.groups) == ("sum", "prod")
    assert repeat.input_ports({"group": "block"}, kit.groups) == ("in",)
    assert group.input_ports({"group": "missing"}, kit.groups) == ()
    _, outputs = kit.infer("Group", {"group": "two"}, [(2, 3), (2, 3)])
    assert outputs == {"sum": (2, 3), "prod": (2, 3)}


@pytest.mark.parametrize("case", all_cases(), ids=case_id)
def test_count_params_is_consistent_with_infer(kit: NodeKit, case) -> None:  # type: ignore[no-untyped-def]
    type_id, params, shapes = case
    ctx, outputs = kit.infer(type_id, params, shapes)
    spec = registry.get(type_id)
    assert set(outputs) == set(spec.output_ports(ctx.params, kit.groups)) or type_id in ("Output", "GroupOutput")
    assert spec.count_params(ctx) >= 0


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: f"{e[0]}-{e[3][0][:24]}")
def test_shape_errors_say_what_is_wrong(kit: NodeKit, error) -> None:  # type: ignore[no-untyped-def]
    type_id, params, shapes, words, port = error
    with pytest.raises(ShapeError) as info:
        kit.infer(type_id, params, shapes)
    message = info.value.message
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    assert info.value.port == port
    assert message.startswith(f"{type_id} n:") or "connect it" in message


def test_unconnected_input_names_the_port(kit: NodeKit) -> None:
    with pytest.raises(ShapeError) as info:
        kit.infer("Merge", {}, [(2, 3)])  # in1 missing
    assert info.value.port == "in1" and "connect it" in info.value.message


def test_group_input_without_a_feed_explains_itself(kit: NodeKit) -> None:
    spec = registry.get("GroupInput")
    ctx = kit.context("gi", {"port": "in"}, {})
    with pytest.raises(ShapeError, match="outside a Group"):
        spec.infer(ctx)


@pytest.mark.parametrize(
    ("type_id", "name", "value", "words"),
    [
        ("Conv", "padding", "valid", "'valid' is not allowed; use an integer >= 0 or 'same'"),
        ("Conv", "kernel_size", 0, "too small"),
        ("Conv", "init", "he", "is not one of default, zeros"),
        ("Split", "sections", [], "between 1 and 64"),
        ("Merge", "mode", "avg", "is not one of add, sub"),
        ("Merge", "inputs", 1, "too small"),
        ("Dropout", "p", 1.5, "too large"),
        ("BiRNN", "cell", "transformer", "rnn_tanh, rnn_relu, lstm, gru"),
        ("Input", "shape", [3, 0], "too small"),
        ("Activation", "fn", "swish", "relu, tanh"),
        ("AdditiveCoupling", "f", "", "choose a group"),
        ("Repeat", "times", 0, "too small"),
    ],
)
def test_bad_param_values_are_rejected_by_name(type_id: str, name: str, value: object, words: str) -> None:
    spec = registry.get(type_id)
    with pytest.raises(ParamError, match=words.replace("(", r"\(")):
        spec.params[name].validate(value)
    _, errors = validate_all(dict(spec.params), {name: value})
    assert set(errors) == {name}


def test_optional_g_accepts_empty() -> None:
    assert registry.get("AdditiveCoupling").params["g"].validate("") == ""


def _plugin_specs() -> list[NodeSpec]:
    found = []
    for spec in registry:
        provider = registry.provider(spec.type_id)
        if provider is not None and not provider.builtin:
            found.append(spec)
    return found


@pytest.mark.parametrize("spec", _plugin_specs(), ids=lambda s: s.type_id)
def test_an_installed_plugin_types_examples_are_well_formed(spec: NodeSpec) -> None:
    """A malformed example is left out of the other catalog tests: here it fails, with the reason
    (docs/plugins.md, section 6, runs these with ``-k TYPE``). Empty without plugins."""
    from revstudio.core.plugins import bad_examples

    assert spec.examples, f"{spec.type_id} declares no examples, so revstudio's catalog tests do not test it"
    assert bad_examples(spec) is None, f"{spec.type_id}: {bad_examples(spec)}"
