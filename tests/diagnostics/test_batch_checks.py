"""A batch Norm that a training batch leaves one value per channel is an error of the check,
naming the node, not torch's "Expected more than 1 value per channel" from inside a run."""
from __future__ import annotations

from pathlib import Path

import pytest

from revstudio.core.generate import Builder
from revstudio.core.graph import Graph
from revstudio.diagnostics.check import full_check


def _norm_after(shape: list[int]) -> Graph:
    b = Builder("bn")
    b.node("Input", "x", shape=shape)
    b.chain("x.out", b.node("Norm", "n", kind="batch"), b.node("Output", "y"))
    return b.done()


@pytest.mark.parametrize("shape", [[4], [4, 1], [4, 1, 1]])
def test_a_batch_of_one_with_one_value_per_channel_is_refused_by_name(shape: list[int]) -> None:
    report = full_check(_norm_after(shape), batch=1)
    assert not report.valid
    (err,) = report.errors
    assert err.node == "n"
    assert "batch norm of" in err.message and "training batch of 1" in err.message
    assert "a batch of 2 or more" in err.message and "kind layer or group" in err.message
    assert full_check(_norm_after(shape), batch=2).valid


def test_positions_or_other_kinds_give_the_norm_values_enough() -> None:
    assert full_check(_norm_after([4, 2]), batch=1).valid
    graph = _norm_after([4])
    graph.set_param("n", "kind", "layer")
    assert full_check(graph, batch=1).valid


def test_a_norm_inside_a_coupling_is_reported_at_the_coupling() -> None:
    from revstudio.core.generate import _body

    b = Builder("inside")
    b.node("Input", "x", shape=[4])

    def f(bb: Builder, src: str) -> str:
        bb.node("Linear", "lin", out_features=2)
        bb.node("Norm", "bn", kind="batch")
        return bb.chain(src, "lin", "bn")

    b.graph.groups["f"] = _body("f", f)
    b.chain("x.out", b.node("AdditiveCoupling", "c", f="f"), b.node("Output", "y"))
    report = full_check(b.done(), batch=1)
    (err,) = report.errors
    assert err.node == "c" and err.message.startswith("group 'f' / Norm bn: batch norm of 2")


def test_gradcheck_at_a_batch_of_one_says_which_norm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    from revstudio.cli import main
    from revstudio.core.project import save

    b = Builder("bn")
    b.node("Input", "x", shape=[6])
    b.chain("x.out", b.node("Linear", "l", out_features=4), b.node("Norm", "n", kind="batch"), b.node("Output", "y"))
    path = tmp_path / "bn.revs"
    save(b.done(), path)
    assert main(["gradcheck", str(path), "--batch", "1"]) == 1
    err = capsys.readouterr().err
    assert "Norm n: batch norm of 4" in err and "Expected more than 1 value" not in err
