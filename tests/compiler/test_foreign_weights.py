"""rs.load_weights: a state_dict of the same network written in plain PyTorch (MemCNN-style
names) loads into the model rebuilt in revstudio, by rename rules or by order, or loads nothing
and names the keys left on each side."""
from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import revstudio as rs  # noqa: E402
from revstudio.core.examples import example_projects  # noqa: E402

RULES = {r"^blocks\.(\d+)\.Fm\.conv": r"blocks.blocks.\1.coupling.f.f_conv",
         r"^blocks\.(\d+)\.Gm\.conv": r"blocks.blocks.\1.coupling.g.g_conv"}


class Body(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv2(torch.relu(self.conv1(x)))


class Coupling(nn.Module):  # MemCNN's AdditiveCoupling(Fm, Gm), written out
    def __init__(self, c: int) -> None:
        super().__init__()
        self.Fm, self.Gm = Body(c // 2), Body(c // 2)

    def forward(self, x):
        x1, x2 = torch.chunk(x, 2, dim=1)
        y1 = x1 + self.Fm(x2)
        return torch.cat([y1, x2 + self.Gm(y1)], dim=1)


class PlainRevNet(nn.Module):  # the example project revnet_coupling, in plain PyTorch
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.Sequential(Coupling(8), Coupling(8))
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def _pair() -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    plain = PlainRevNet().double()
    return plain, rs.compile(example_projects()["revnet_coupling"], device="cpu", dtype=torch.float64)


def _same_outputs(plain: nn.Module, model: nn.Module) -> bool:
    x = torch.randn(3, 3, 16, 16, dtype=torch.float64)
    return torch.allclose(plain(x), model(x), rtol=0, atol=1e-12)


def test_rename_rules_load_the_plain_weights_and_the_outputs_agree() -> None:
    plain, model = _pair()
    mapping = rs.load_weights(model, plain.state_dict(), rename=RULES)
    assert mapping["blocks.blocks.1.coupling.g.g_conv2.weight"] == "blocks.1.Gm.conv2.weight"
    assert mapping["stem.bias"] == "stem.bias" and len(mapping) == len(model.state_dict())
    assert _same_outputs(plain, model)


def test_a_rename_function_may_drop_keys_and_name_the_rest() -> None:
    plain, model = _pair()
    state = {**plain.state_dict(), "extra.step": torch.zeros(())}

    def rename(key: str) -> str | None:
        if key.startswith("extra."):
            return None
        for pattern, replacement in RULES.items():
            key = re.sub(pattern, replacement, key)
        return key

    rs.load_weights(model, state, rename=rename)
    assert _same_outputs(plain, model)


def test_by_order_pairs_the_layers_declared_in_the_same_order() -> None:
    plain, model = _pair()
    mapping = rs.load_weights(model, plain.state_dict(), by_order=True)
    assert mapping["blocks.blocks.0.coupling.f.f_conv1.weight"] == "blocks.0.Fm.conv1.weight"
    assert _same_outputs(plain, model)


def test_names_that_do_not_fit_load_nothing_and_name_both_sides() -> None:
    plain, model = _pair()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError) as err:
        rs.load_weights(model, plain.state_dict())
    text = str(err.value)
    assert "nothing was loaded" in text
    assert "16 of the model's 20 keys get no value" in text
    assert "'blocks.blocks.0.coupling.f.f_conv1.weight' (4x4x3x3)" in text
    assert "16 given keys name nothing in the model" in text and "'blocks.0.Fm.conv1.weight'" in text
    assert "rename=" in text and "by_order=True" in text
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_a_weight_of_another_shape_is_named_with_both_shapes() -> None:
    plain, model = _pair()
    state = plain.state_dict()
    state["head.weight"] = torch.zeros(12, 8, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"'head.weight' -> 'head.weight': given 12x8, the model has 10x8"):
        rs.load_weights(model, state, rename=RULES)


def test_by_order_refuses_pairs_of_other_shapes_or_counts() -> None:
    plain, model = _pair()
    state = plain.state_dict()
    moved = {k: state[k] for k in state if not k.startswith("head.")}
    with pytest.raises(ValueError, match=r"by_order: 17 given keys match no name but the model has 18"):
        rs.load_weights(model, {"head.w": state["head.weight"], **moved}, by_order=True)
    swapped = dict(state)
    swapped["blocks.0.Fm.conv1.bias"] = torch.zeros(4, 4, 3, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"pair 2 of 16 does not fit: the given 'blocks.0.Fm.conv1.bias' "
                                         r"is 4x4x3x3 but the model's '.*f_conv1.bias' is 4"):
        rs.load_weights(model, swapped, by_order=True)


def test_a_checkpoint_or_two_keys_on_one_weight_are_refused_saying_what_to_pass() -> None:
    plain, model = _pair()
    with pytest.raises(ValueError, match=r"looks like a checkpoint: pass its state_dict, e.g. checkpoint\['model'\]"):
        rs.load_weights(model, {"model": plain.state_dict(), "step": 3})
    with pytest.raises(ValueError, match=r"'blocks.0.Fm.conv1.weight' and 'blocks.0.Gm.conv1.weight' both become"):
        rs.load_weights(model, plain.state_dict(), rename={r"\.(F|G)m\.": ".Xm."})
    with pytest.raises(ValueError, match=r"rename rule '\(' -> 'x' is not a valid regular expression"):
        rs.load_weights(model, plain.state_dict(), rename={"(": "x"})


def test_the_exported_model_takes_the_same_weights() -> None:
    plain, _ = _pair()
    scope: dict = {}
    exec(compile(rs.export(example_projects()["revnet_coupling"]), "exported", "exec"), scope)  # noqa: S102
    model = scope["Model"]().double()
    rs.load_weights(model, plain.state_dict(), rename=RULES)
    assert _same_outputs(plain, model)


def test_load_state_dict_with_another_models_names_says_how_to_map_them() -> None:
    plain, model = _pair()
    with pytest.raises(RuntimeError) as err:
        model.load_state_dict(plain.state_dict())
    text = str(err.value)
    assert 'Missing key(s) in state_dict: "blocks.blocks.0.coupling.f.f_conv1.weight"' in text
    assert "rs.load_weights(model, state_dict, rename={pattern: replacement})" in text
    assert "by_order=True" in text and "docs/porting.md" in text
    model.load_state_dict(model.state_dict())  # its own names still load as torch loads them


def test_a_file_of_weights_or_a_training_scripts_checkpoint_loads_by_its_path(tmp_path) -> None:
    plain, model = _pair()
    torch.save(plain.state_dict(), tmp_path / "plain.pt")
    torch.save({"epoch": 7, "state_dict": plain.state_dict(), "optimizer": {"lr": 0.1}}, tmp_path / "ck.pt")
    for name in ("plain.pt", "ck.pt"):
        fresh = rs.compile(example_projects()["revnet_coupling"], device="cpu", dtype=torch.float64)
        rs.load_weights(fresh, tmp_path / name, rename=RULES)
        assert _same_outputs(plain, fresh), name
    (tmp_path / "bad.pt").write_bytes(b"not torch at all")
    with pytest.raises(ValueError, match=r"bad.pt: not a file of weights torch can read safely"):
        rs.load_weights(model, str(tmp_path / "bad.pt"))
    with pytest.raises(ValueError, match=r"nowhere.pt: no such file"):
        rs.load_weights(model, tmp_path / "nowhere.pt")


def test_a_run_folder_loads_its_last_checkpoints_weights(tmp_path) -> None:
    """`rs.load_weights(model, "runs/NAME")` said "Is a directory", where `train --init` and
    `gradcheck --checkpoint` take a run folder."""
    plain, model = _pair()
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    torch.save({"format": "revstudio-checkpoint", "version": 1, "step": 3, "model": plain.state_dict()},
               tmp_path / "run" / "checkpoints" / "last.pt")
    rs.load_weights(model, tmp_path / "run", rename=RULES)
    assert _same_outputs(plain, model)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"empty: a folder without checkpoints/last.pt; give a run folder"):
        rs.load_weights(model, tmp_path / "empty")


@pytest.mark.parametrize(("model", "rename", "words"), [
    ("graph", None, "model must be a torch module (rs.compile(graph) or an exported Model()), got Graph"),
    ("model", 5, "rename must be {pattern: replacement} or a function of a key, got int"),
    ("model", {"^stem": 5}, "rename rule '^stem' -> 5: both sides must be text"),
])
def test_wrong_types_are_type_errors_naming_the_argument(model: str, rename, words: str) -> None:
    """A Graph for the model was an AttributeError on state_dict; rename=5 one on items, and a rule
    whose replacement is a number re's own TypeError."""
    plain, compiled = _pair()
    given = example_projects()["revnet_coupling"] if model == "graph" else compiled
    with pytest.raises(TypeError) as info:
        rs.load_weights(given, plain.state_dict(), rename=rename)
    assert words in str(info.value), str(info.value)
