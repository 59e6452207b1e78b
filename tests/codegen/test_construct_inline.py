"""Recording constructor calls and inlining torch-only source verbatim."""
from __future__ import annotations

import ast
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from revstudio.codegen.construct import ConstructionError, call_source, recording, value_source  # noqa: E402
from revstudio.codegen.inline import ImportFact, InlineError, Inliner, import_block  # noqa: E402


def _source(module: nn.Module, record) -> str:
    def write(m: nn.Module) -> str:
        c = record.of(m)
        assert c is not None, f"{type(m).__name__} was not recorded"
        return call_source(c, f"nn.{type(m).__name__}", write, "test")

    return write(module)


def test_recorded_calls_rebuild_identical_modules_under_the_same_seed() -> None:
    torch.manual_seed(3)
    with recording() as record:
        built = nn.Sequential(nn.Conv2d(3, 4, 3, padding="same", bias=False), nn.LeakyReLU(0.2),
                              nn.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True))
    text = _source(built, record)
    assert text.startswith("nn.Sequential(nn.Conv2d(3, 4, 3, padding='same', bias=False)")
    torch.manual_seed(3)
    rebuilt = eval(text, {"nn": nn, "torch": torch})  # our own generated text, not project data
    assert list(rebuilt.state_dict()) == list(built.state_dict())
    for (k, a), b in zip(built.state_dict().items(), rebuilt.state_dict().values()):
        assert torch.equal(a, b), k


def test_recording_restores_the_previous_profiler() -> None:
    def mine(*_args: object) -> None:
        return None

    sys.setprofile(mine)
    try:
        with recording():
            nn.Linear(2, 2)
        assert sys.getprofile() is mine
    finally:
        sys.setprofile(None)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("a'\"\n\\", repr("a'\"\n\\")),
        ((1,), "(1,)"),
        (float("inf"), "math.inf"),
        (torch.float64, "torch.float64"),
        ({"k": [1, 2.5, None]}, "{'k': [1, 2.5, None]}"),
    ],
)
def test_values_are_written_through_repr(value: object, expected: str) -> None:
    assert value_source(value, lambda m: "", "test") == expected


def test_unwritable_argument_is_a_named_error() -> None:
    with pytest.raises(ConstructionError, match="node x"):
        value_source(object(), lambda m: "", "node x")


def test_inliner_takes_definitions_and_dependencies_verbatim() -> None:
    from revstudio.nodes.torch_modules import composite, layers

    inliner = Inliner()
    assert inliner.require(layers.Conv2d) == "Conv2d"
    inliner.require(composite.Repeat)
    names = inliner.names
    assert {"Conv2d", "TupleOut", "init_parameters", "INIT_SCHEMES", "Repeat"} <= names
    assert "BiRNN" not in names  # only what is needed
    body = "\n\n".join(inliner.chunks)
    assert body.index("class TupleOut") < body.index("class Conv2d")  # bases first
    header = import_block(list(inliner.imports.values()), inliner.future_annotations)
    ast.parse(header + body)
    assert "revstudio" not in header + body


def test_inliner_refuses_modules_that_are_not_torch_only() -> None:
    from revstudio.core.graph import Graph

    with pytest.raises(InlineError, match="not a torch-only module"):
        Inliner().require(Graph)


def test_import_block_is_isort_clean(tmp_path) -> None:
    facts = [ImportFact("torch", "torch"), ImportFact("nn", "torch", "nn"), ImportFact("math", "math"),
             ImportFact("F", "torch.nn.functional"), ImportFact("Tuple", "typing", "Tuple")]
    text = import_block(facts, future_annotations=True)
    use = "\nprint(torch, nn, math, F, Tuple)\n"
    path = tmp_path / "x.py"
    path.write_text(text + use)
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--select", "I,F", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
