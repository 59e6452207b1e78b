"""Every catalog type declares whether its output is memory of its own (``NodeSpec.fresh_output``).

The memory estimate counts a coupling's backward update by that declaration; the runtime asks
the tensor itself (``runtime_streams.sole``). Here each example (built-in, and each installed
plugin's) is run on inputs made by an op (as F's inner values are) and the two are held equal: True means nothing else holds
the output (no view of an input, nothing its backward saved), None that the output is an input
passed through (the very tensor), False anything else (a view, a result its backward reads).
"""
from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from catalog_cases import all_cases, make_groups  # noqa: E402
from catalog_kit import BOUNDARY, NodeKit  # noqa: E402

from revstudio.compiler.runtime_streams import sole  # noqa: E402
from revstudio.core.spec import registry  # noqa: E402

# group nodes: the estimate looks into their bodies (tests/diagnostics/test_fresh_estimate.py)
BODIES = ("Group", "Repeat")
# declared for the usual (contiguous) layout: on a channels_last tensor these copy, so their
# output is fresh there while they are declared a view
LAYOUT_BOUND = ("Flatten", "Reshape", "Permute")

# every built-in case, and the examples of each installed plugin's types (docs/plugins.md promises
# their fresh_output is held to the module too)
EXAMPLES = [(t, params, shapes) for t, params, shapes in all_cases() if t not in BOUNDARY + BODIES]


def _observed(type_id: str, params: dict[str, Any], shapes: list[tuple[int, ...]], batch: int,
              channels_last: bool) -> bool | None:
    module = NodeKit(make_groups()).build(type_id, params, shapes).module
    module.train()
    leaves = [torch.randn(batch, *s, requires_grad=True) for s in shapes]
    xs = [x * 1.0 for x in leaves]  # made by an op, like the values inside F
    if channels_last:
        xs = [x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x for x in xs]
    outs = list(module(*xs))
    out = outs[0]
    del outs
    if any(out is x for x in xs) and not params.get("inplace"):
        return None  # (written over in place, the output is its input's memory, and what
        # its backward reads: sole says which)
    del xs, leaves  # what is left holding the output is the module's and autograd's
    return sole(out)


@pytest.mark.parametrize("type_id,params,shapes", EXAMPLES, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(EXAMPLES)])
def test_the_declaration_is_what_the_runtime_sees(type_id: str, params: dict[str, Any],
                                                  shapes: list[tuple[int, ...]]) -> None:
    spec = registry.get(type_id)
    declared = spec.output_is_fresh({**spec.defaults(), **params}, shapes)
    if declared is None:
        seen = _observed(type_id, params, shapes, 2, False)
        assert seen is None, _advice(type_id, params, shapes, declared, seen, 2, False)
        return
    layouts = (False,) if type_id in LAYOUT_BOUND else (False, True)
    for batch in (2, 3):
        for channels_last in layouts:
            seen = _observed(type_id, params, shapes, batch, channels_last)
            assert seen is declared, _advice(type_id, params, shapes, declared, seen, batch, channels_last)


MEANS = {True: "memory of its own that its backward does not read",
         False: "a view of its input, or a result its backward reads",
         None: "its input itself, passed through"}


def _advice(type_id: str, params: dict[str, Any], shapes: list[tuple[int, ...]], declared: bool | None,
            seen: bool | None, batch: int, channels_last: bool) -> str:
    """The failure message a plugin author reads on a mismatch: a bare comparison of the two flags
    (True against False) named neither the type nor the fix."""
    layout = ", channels_last" if channels_last else ""
    return (f"{type_id} with params {params} on inputs {shapes} (batch {batch}{layout}): fresh_output is "
            f"{declared!r}, but the built module's first output is {MEANS[seen]}; declare fresh_output={seen!r} "
            "in its NodeSpec (docs/plugins.md, the fresh_output row)")


def test_a_type_that_declares_nothing_is_never_written_over() -> None:
    from revstudio.core.spec import NodeSpec

    spec = NodeSpec(type_id="Plugged", category="Test", help="", params={}, inputs=("in",), outputs=("out",),
                    infer=lambda ctx: {"out": ctx.input("in")})
    assert spec.output_is_fresh({}, [(3,)]) is False


def test_a_mismatch_says_what_to_declare() -> None:
    """The failure message a plugin author reads (above): the type, its inputs and the fix."""
    text = _advice("Haar", {"k": 2}, [(4, 8, 8)], True, False, 3, True)
    assert text.startswith("Haar with params {'k': 2} on inputs [(4, 8, 8)] (batch 3, channels_last): ")
    assert "fresh_output is True, but the built module's first output is a view of its input" in text
    assert text.endswith("declare fresh_output=False in its NodeSpec (docs/plugins.md, the fresh_output row)")
