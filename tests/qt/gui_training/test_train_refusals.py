"""Train refuses a graph it cannot train before any run starts, naming what is wrong.

A refusal costs nothing: no run folder, no child process, a dialog that names
the node and port (as the CLI's message would) instead of a count, and what to do.
"""
from __future__ import annotations

from pathlib import Path

from revstudio.core import commands


def _runs(project: str) -> list[Path]:
    root = Path(project).parent / "runs"
    return list(root.iterdir()) if root.is_dir() else []


def test_graph_errors_are_named_in_the_refusal(qtbot, train_window, dialogs):
    window = train_window()
    graph = window.document.graph
    edge = next(e for e in graph.edges if graph.node(e.dst.node).type == "Output")
    window.document.push(commands.Disconnect(graph, edge))
    reason = window.training.train()  # F5 at once: the edit's pending check is done first
    assert reason is not None and not window.training.controller.running
    title, text = dialogs.errors[-1]
    assert title == "Cannot train"
    assert f"{edge.dst.node}.{edge.dst.port}:" in text and "not connected" in text, text
    assert "Problems tab" in text and not _runs(window.document.path)


def test_a_graph_without_an_output_node_is_refused_before_a_run_starts(qtbot, train_window, dialogs):
    """It started a worker that failed seconds later, naming its snapshot's path in the run folder."""
    window = train_window()
    graph = window.document.graph
    output = next(n.id for n in graph.nodes.values() if n.type == "Output")
    window.document.push(commands.RemoveNode(graph, output))
    reason = window.training.train()
    assert reason is not None and not window.training.controller.running
    title, text = dialogs.errors[-1]
    assert title == "Cannot train" and "no Output node" in text and "add an Output" in text, text
    assert "project.revs" not in text and not _runs(window.document.path)


def test_gradient_check_and_memory_of_a_broken_graph_name_its_errors(qtbot, train_window, dialogs):
    """Run > Gradient Check on a graph with errors showed the child's refusal, naming a temporary
    snapshot (/tmp/revstudio-diag-.../project.revs, already deleted) and a command to run on it."""
    window = train_window()
    graph = window.document.graph
    edge = next(e for e in graph.edges if graph.node(e.dst.node).type == "Output")
    window.document.push(commands.Disconnect(graph, edge))
    for action, title in ((window.training.gradcheck_project, "Cannot check the gradients"),
                          (window.training.memory_project, "Cannot measure memory")):
        assert action() is None  # no child started
        said_title, text = dialogs.errors[-1]
        assert said_title == title and f"{edge.dst.node}.{edge.dst.port}:" in text, text
        assert "revstudio-diag" not in text and "project.revs" not in text
