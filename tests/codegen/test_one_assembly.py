"""Lower once, emit twice: exported regions are built by the compiler's own ``assembly`` code.

The exporter writes a region as plain data and calls the inlined
``assembly.build_region``; it must never write runtime steps by itself (the
hand-written port that could drift from the compiler is gone).
"""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.codegen import export  # noqa: E402
from revstudio.codegen.regions import literal  # noqa: E402
from revstudio.compiler import assembly  # noqa: E402
from revstudio.core import generate  # noqa: E402

CODEGEN = Path(assembly.__file__).resolve().parents[1] / "codegen"
RUNTIME_STEPS = {"Step", "Coupling", "Invertible", "Slice", "Cat", "Rename", "Region"}


def test_exported_regions_are_built_by_the_inlined_assembly() -> None:
    source = export(generate.revnet_chain(2, channels=4, size=4, wired=True))
    for fn in (assembly.build_region, assembly._add_steps, assembly.LayerChain, assembly.recompute_in_backward,
               assembly.stream_dtype):
        assert inspect.getsource(fn) in source, f"{fn.__name__} is not inlined verbatim"
    tree = ast.parse(source)
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    init = next(n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    built = [n for n in ast.walk(init) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "build_region"]
    assert built, "Model.__init__ builds no region through build_region"
    for call in built:
        # the region is data the exporter read from the plan: nothing but literals
        data = ast.literal_eval(call.args[1])
        assert {"id", "steps", "inputs", "outputs", "side", "free"} <= data.keys()
    # no runtime step is constructed anywhere outside the inlined runtime and assembly
    calls = {n.func.id for n in ast.walk(model) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not calls & RUNTIME_STEPS


def test_the_exporter_has_no_region_building_of_its_own() -> None:
    for path in sorted(CODEGEN.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert not (names | strings) & RUNTIME_STEPS, f"{path.name} refers to runtime steps itself"


@pytest.mark.parametrize("text", ["x'\"\\", '"""f"""', "é日本💥", "\n\r\u2028", "a'''b\"\"\"c", "__import__('os')"])
def test_region_literals_round_trip_hostile_text_as_plain_ascii(text: str) -> None:
    data = {"id": text, "steps": [{"kind": "node", "type": "Split", "module": "m", "inputs": [text] * 6,
                                   "outputs": [f"{text}{i}" for i in range(6)]}] * 3,
            "inputs": [text], "outputs": [], "side": [], "free": [], "body": {"inputs": {text: 0}}, "sign": -1}
    written = literal(data, 8)
    assert written.isascii()
    assert ast.literal_eval(written) == data
    lines = written.split("\n")
    assert len(lines) > 1  # too long for one line: broken up ...
    steps = [line for line in lines if "'kind': 'node'" in line]
    assert len(steps) == 3  # ... but each step stays one line


def test_short_literals_stay_on_one_line() -> None:
    assert literal({"a": [1, 2], "b": {"c": "d"}}, 8) == "{'a': [1, 2], 'b': {'c': 'd'}}"
    with pytest.raises(TypeError, match="float"):
        literal({"a": 1.5}, 8)
