"""Exported code equals ``rs.compile`` even when ids and group names are built to collide.

Every generated identifier comes from one namespace that knows the inlined
runtime's names; a name bound twice in the file is refused, never silently won.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from faults_projects import colliding_projects  # noqa: E402

import revstudio as rs  # noqa: E402
from revstudio.codegen import CodegenError  # noqa: E402
from revstudio.codegen.emit import check_bindings  # noqa: E402
from revstudio.core.project import loads  # noqa: E402

PROJECTS = colliding_projects()


def _exported_model(source: str):
    namespace: dict[str, object] = {"__name__": "exported"}
    exec(compile(source, "exported.py", "exec"), namespace)  # our own generated code
    return namespace["Model"]()  # type: ignore[operator]


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_colliding_names_export_the_compiled_model(name: str) -> None:
    graph = loads(PROJECTS[name])
    assert rs.check(graph).valid
    torch.manual_seed(0)
    compiled = rs.compile(graph, device="cpu")
    exported = _exported_model(rs.export(graph))
    assert sum(p.numel() for p in exported.parameters()) == sum(p.numel() for p in compiled.parameters())
    assert list(exported.state_dict()) == list(compiled.state_dict())
    exported.load_state_dict(compiled.state_dict(), strict=True)
    x = torch.randn(2, 8, 4, 4)
    for mode in ("reversible", "standard", "checkpoint"):
        compiled.mode = exported.mode = mode
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        a, b = compiled(xa), exported(xb)
        assert torch.equal(a, b), f"{name} {mode}: outputs differ by {(a - b).abs().max()}"
        a.square().sum().backward()
        b.square().sum().backward()
        assert torch.equal(xa.grad, xb.grad), f"{name} {mode}: input gradients differ"


def test_a_name_bound_twice_is_refused() -> None:
    twice = "class GroupX1:\n    pass\n\n\nclass GroupX1:\n    pass\n"
    with pytest.raises(CodegenError, match="GroupX1"):
        check_bindings(twice, {"GroupX1"})
    attrs = "class Model:\n    def __init__(self):\n        self.a = 1\n        self.a = 2\n"
    with pytest.raises(CodegenError, match="self.a"):
        check_bindings(attrs, {"Model"})
