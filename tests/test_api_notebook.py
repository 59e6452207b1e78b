"""The scripting API in a notebook: what a cell shows for the objects it returns, and what a
second run of a cell in the same process finds (DESIGN section 3).

A notebook prints the last value of a cell with ``repr`` (IPython: ``_repr_pretty_``), so the
objects ``rs.check`` returns must print a summary whatever the graph's size, not every node.
"""
from __future__ import annotations

import pytest

import revstudio as rs
from revstudio.core.examples import example_projects
from revstudio.core.generate import large_graph


class _Pretty:
    """What IPython's pretty printer hands ``_repr_pretty_``: it collects the text."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def text(self, s: str) -> None:
        self.out.append(s)


@pytest.fixture(scope="module")
def big_report() -> tuple[rs.Graph, object]:
    g = large_graph(1000)
    return g, rs.check(g)


def test_a_thousand_node_report_prints_a_few_lines_not_every_node(big_report) -> None:
    g, report = big_report
    text = repr(report)
    assert len(g.nodes) >= 1000
    assert text.count("\n") < 10 and len(text) < 1000, text[:2000]
    assert text.startswith(f"<Report valid: {len(report.nodes):,} nodes, {report.parameters:,} parameters")
    assert _pretty(report) == text


def test_the_estimate_and_regions_of_a_big_report_print_short(big_report) -> None:
    g, report = big_report
    assert report.estimate is not None and report.regions
    est = repr(report.estimate)
    assert len(est) < 400 and "\n" not in est, est[:2000]
    assert _pretty(report.estimate) == est
    assert f"batch {report.estimate.batch}" in est and "reversible" in est
    for region in report.regions:
        assert len(repr(region)) < 400 + 40 * (len(region.inputs) + len(region.outputs))
        assert f"{len(region.nodes)} nodes" in repr(region)
    assert repr(g) == f"<Graph {g.name!r}: {len(g.nodes):,} nodes, {len(g.edges):,} edges, {len(g.groups)} groups>"


def test_a_report_with_many_errors_lists_the_first_and_says_how_many_more() -> None:
    g = rs.Graph("broken")
    for i in range(12):
        g.add_node("Conv", f"c{i}", {"out_channels": 4})   # no inputs: an error each
    report = rs.check(g)
    text = repr(report)
    assert text.startswith("<Report INVALID: 12 nodes")
    lines = text.splitlines()
    assert len(lines) == 7 and lines[1].startswith("  error: ")
    assert lines[-1].startswith(f"  ... {len(report.errors) + len(report.warnings) - 5} more in report.errors")


def test_a_thousand_node_model_prints_its_first_and_last_layers_and_how_many_between(big_report) -> None:
    g, report = big_report
    model = rs.compile(g, device="cpu", report=report)
    text = repr(model)
    children = list(model.named_children())
    assert text.count("\n") < 40, text[:3000]
    assert f"... {len(children) - 25} more layers (named_children() lists every one) ..." in text
    assert f"({children[0][0]}): " in text and f"({children[-1][0]}): " in text
    assert text.startswith("CompiledModel(\n  mode='reversible', regions: ") and text.endswith("\n)")
    plan = repr(model.plan)
    assert plan.startswith(f"<Plan {g.name!r}: ") and len(plan) < 300, plan[:2000]


def test_a_small_model_prints_as_torch_prints_it() -> None:
    from torch import nn

    model = rs.compile(example_projects()["revnet_wired"], device="cpu")
    assert repr(model) == nn.Module.__repr__(model)
    assert "(head): Linear(" in repr(model)


def test_a_gradient_report_prints_its_verdict_and_first_failures() -> None:
    from revstudio.diagnostics.gradcheck import GradReport, TensorError

    params = [TensorError(f"n{i}.weight", 1.0, 1e-3 * (i % 2), 1.0) for i in range(1000)]
    report = GradReport("float64", 2, 0, 1e-10, "reversible", 1.0, parameters=params, inversion={"r": 1e-16})
    text = repr(report)
    lines = text.splitlines()
    assert lines[0] == ("<GradReport reversible vs standard, float64, batch 2: 500 FAILED (tolerance 1e-10); "
                        "max error 0.001 over 1000 tensors, max inversion error 1e-16>")
    assert lines[1] == "  n1.weight: error 0.001 > 1e-10"
    assert len(lines) == 7 and lines[-1] == "  ... 495 more in report.failures()"
    assert _pretty(report) == text


def _pretty(shown: object) -> str:
    pretty = _Pretty()
    shown._repr_pretty_(pretty, False)  # type: ignore[attr-defined]
    return "".join(pretty.out)


def test_a_training_result_prints_without_its_whole_model() -> None:
    from revstudio.training.loop import TrainResult

    model = rs.compile(example_projects()["revnet_wired"], device="cpu")
    result = TrainResult("finished", 12, {"loss": 2.3}, model=model)
    assert repr(result) == "TrainResult(status='finished', step=12, metrics={'loss': 2.3}, message=None, rows=0)"
    assert result.model is model


def test_a_model_of_many_regions_names_the_first_five_and_counts_the_rest() -> None:
    from types import SimpleNamespace

    from revstudio.compiler.module_repr import regions_text

    regions = [SimpleNamespace(id=f"region-{i}", nodes=["a", "b"]) for i in range(40)]
    assert regions_text(regions) == ", ".join(f"region-{i} (2 nodes)" for i in range(5)) + " and 35 more (model.regions)"
    assert regions_text([]) == "none"


# the parameters only the editor passes (``help(rs.check)`` may still explain them)
_EDITOR_ONLY = {"incremental", "memo"}


@pytest.mark.parametrize("name", ["load", "save", "check", "compile", "export", "memory.measure_step",
                                  "memory.compare_modes", "gradcheck.compare_modes"])
def test_help_on_each_api_function_names_its_parameters_and_what_it_returns(name: str) -> None:
    import importlib
    import inspect

    module, _, attr = name.rpartition(".")
    func = getattr(importlib.import_module(f"revstudio.diagnostics.{module}") if module else rs, attr)
    doc = inspect.getdoc(func) or ""
    params = [p for p in inspect.signature(func).parameters if p not in _EDITOR_ONLY]
    assert not [p for p in params if f"``{p}``" not in doc], doc
    if inspect.signature(func).return_annotation not in (None, "None"):
        assert "Returns" in doc or "returns" in doc, doc


def test_every_public_graph_method_has_a_docstring() -> None:
    import inspect

    bare = [n for n, f in vars(rs.Graph).items()
            if not n.startswith("_") and inspect.isfunction(f) and not f.__doc__]
    assert not bare, f"help(rs.Graph) says nothing of {bare}"


def test_a_run_prints_as_one_short_line(tmp_path) -> None:
    from revstudio.training.runs import RunInfo

    long_note = "note: not checked whether the run learns: " + "x" * 300
    run = RunInfo(str(tmp_path / "run-1"), "finished", 12, 12, config={f"k{i}": i for i in range(30)},
                  metrics={"loss": 2.27252, "val_accuracy": 0.078, "note": "text"}, message=long_note, label="baseline")
    assert repr(run) == "<RunInfo 'run-1' (baseline): finished, step 12/12, loss 2.273, val_accuracy 0.078>"
    assert repr(RunInfo(str(tmp_path / "run-2"), "running")) == "<RunInfo 'run-2': running, no step yet>"


def test_node_types_from_before_a_reload_are_one_short_line_saying_to_restart(monkeypatch) -> None:
    from revstudio.core import plugins
    from revstudio.core.spec import Registry, registry

    # what importlib.reload(revstudio.core.spec) leaves the catalog holding: instances of a class
    # of the same name that is no longer revstudio.core.spec.NodeSpec
    old = registry.get("Conv")
    stale_class = type("NodeSpec", (), {})
    specs = []
    for type_id in ("Input", "Conv", "Output"):
        spec = stale_class()
        spec.__dict__.update({"type_id": type_id, "help": old.help * 20})
        specs.append(spec)
    monkeypatch.setattr(plugins, "_problems", [])
    provider = plugins.Provider("mine", "my_nodes:SPECS", "my-nodes")
    taken = plugins.load_provider(Registry(), provider, lambda: [*specs, "y" * 5000])
    assert taken == 0
    messages = [p.message for p in plugins.problems()]
    assert len(messages) == 2 and all(len(m) < 400 for m in messages), messages
    assert messages[0].startswith("'yyyyyyyyyyyy") and messages[0].endswith("(str) is not a NodeSpec; skipped")
    assert messages[1] == ("3 node types skipped (['Input', 'Conv', 'Output']): their NodeSpec class is from "
                           "before revstudio.core.spec was reloaded (importlib.reload, IPython's %autoreload); "
                           "restart the Python session (the notebook's kernel)")


@pytest.mark.parametrize("command", ["memory", "train"])
def test_a_command_run_in_the_session_leaves_its_random_numbers_alone(command: str, tmp_path, capsys) -> None:
    import torch

    from revstudio.cli import main

    project = tmp_path / "model.revs"
    rs.save(example_projects()["revnet_wired"], project)
    extra = (["--batch", "2", "--device", "cpu"] if command == "memory" else
             ["--steps", "2", "--data", "synthetic", "--device", "cpu", "--out", str(tmp_path / "run")])
    torch.manual_seed(1234)
    expected = torch.rand(3)
    torch.manual_seed(1234)
    assert main([command, str(project), *extra]) == 0, capsys.readouterr()
    # what the next cell draws is what it drew before the command, not the command's seed's numbers
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(("what", "names"), [
    ("report", ["valid", "errors", "warnings", "diagnostics", "nodes", "parameters", "shape", "for_node",
                "regions", "near_misses", "estimate", "to_json"]),
    ("estimate", ["summary_lines", "peak_bytes", "activation_bytes", "parameter_bytes", "totals", "nodes",
                  "regions", "saved_by_region", "to_json"]),
    ("model", ["forward", "mode", "regions", "inverse", "logdet", "inversion_errors", "memory_budget"]),
])
def test_help_on_what_the_api_returns_names_what_a_user_reads_of_it(what: str, names: list[str]) -> None:
    import inspect

    g = example_projects()["revnet_wired"]
    report = rs.check(g)
    obj = {"report": report, "estimate": report.estimate, "model": rs.compile(g, device="cpu")}[what]
    doc = inspect.getdoc(type(obj)) or ""
    assert not [n for n in names if f"``{n}" not in doc], doc


def test_a_distributed_launch_in_the_session_gives_back_the_signals_and_environment_torchrun_took(
        monkeypatch) -> None:
    import os
    import signal

    from revstudio.training.launch import _LaunchStop

    SIGNALS_ENV = "TORCHELASTIC_SIGNALS_TO_HANDLE"  # noqa: N806 - torch's name for it
    monkeypatch.delenv(SIGNALS_ENV, raising=False)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)}

    def torchrun_handler(signum, frame):  # what torch.distributed.run installs, and never takes back
        raise RuntimeError(signum)

    try:
        with _LaunchStop():
            os.environ[SIGNALS_ENV] = "SIGTERM,SIGINT,SIGHUP,SIGQUIT"
            for sig in before:
                signal.signal(sig, torchrun_handler)
        after = {sig: signal.getsignal(sig) for sig in before}
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    assert after == before
    assert SIGNALS_ENV not in os.environ


def test_the_report_of_another_project_is_refused_as_such_not_as_an_edit() -> None:
    from revstudio.compiler import CompileError

    projects = example_projects()
    flow, wired = projects["glow_flow"], projects["revnet_wired"]   # both name their Input 'image'
    with pytest.raises(CompileError, match=r"^revnet-wired: the report is of another graph \(only 1 of its "
                                           rf"{len(flow.nodes)} nodes are in this one\); pass this graph's own"):
        rs.compile(wired, device="cpu", report=rs.check(flow))
