"""nn.DataParallel over several GPUs copies each module's attributes, and a reversible region is one
attribute holding the original's layers: every replica ran the original's weights inside its
regions (on another GPU: a device error deep in the runtime; the replica's gradients never reached
DataParallel's copies). Replication is refused, naming the way out (DistributedDataParallel);
a model without regions replicates as before. ``replicate`` needs GPUs, so the tests call the hook
it calls on every module, ``_replicate_for_data_parallel``."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.codegen import export  # noqa: E402
from revstudio.compiler import compile as rs_compile  # noqa: E402
from revstudio.core.project import load  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _exported(name: str):
    namespace: dict = {}
    exec(compile(export(load(str(EXAMPLES / f"{name}.revs"))), "exported.py", "exec"), namespace)
    return namespace["Model"]()


@pytest.mark.parametrize("make", [lambda: _exported("revnet_wired"),
                                  lambda: rs_compile(load(str(EXAMPLES / "revnet_wired.revs")), device="cpu")],
                         ids=["exported", "compiled"])
def test_data_parallel_replicas_of_a_model_with_regions_are_refused(make) -> None:
    model = make()
    with pytest.raises(RuntimeError) as info:
        for module in model.modules():  # as torch.nn.parallel.replicate does
            module._replicate_for_data_parallel()
    text = str(info.value)
    assert "DataParallel" in text and "DistributedDataParallel" in text and "reversible region" in text


def test_data_parallel_replicates_a_model_without_regions() -> None:
    model = _exported("two_branch")
    assert all(isinstance(m._replicate_for_data_parallel(), torch.nn.Module) for m in model.modules())


def _two_stream_group():
    from tests.compiler.compiler_graphs import two_stream_group

    return two_stream_group()


def _exported_graph(graph):
    namespace: dict = {}
    exec(compile(export(graph), "exported.py", "exec"), namespace)
    return namespace["Model"]()


@pytest.mark.parametrize("make", [lambda: _exported_graph(_two_stream_group()),
                                  lambda: rs_compile(_two_stream_group(), device="cpu")],
                         ids=["exported", "compiled"])
def test_data_parallel_replicas_of_a_group_with_regions_used_alone_are_refused(make) -> None:
    """A group's layer (its body class) taken out of the model and wrapped on its own: its body's
    region holds the original's layers just as the model's regions do."""
    group = make().grp
    assert any(getattr(m, "_regions", None) or any(k.startswith("_region_") for k in vars(m))
               for m in group.modules()), "the group body holds no region: the test would prove nothing"
    with pytest.raises(RuntimeError) as info:
        for module in group.modules():
            module._replicate_for_data_parallel()
    text = str(info.value)
    assert "DataParallel" in text and "DistributedDataParallel" in text and "reversible region" in text
