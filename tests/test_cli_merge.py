"""`revstudio merge` as git's merge driver: a team's two branches that each added a node merge
(git alone conflicted on every such pair), and a real conflict is named and left marked."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from revstudio.cli import main
from revstudio.core.graph import Graph
from revstudio.core.project import dumps, load, save

ROOT = Path(__file__).resolve().parents[1]
needs_git = pytest.mark.usefixtures("git")  # (the suite runs from a clone: git is there, or these fail saying so)


def _project() -> Graph:
    g = Graph("shared")
    g.add_node("Input", "x", {"shape": [4, 8, 8]}, (0, 0))
    g.add_node("Conv", "conv", {"out_channels": 8, "kernel_size": 3, "padding": "same"}, (240, 0))
    g.add_node("Output", "y", {}, (480, 0))
    g.connect("x.out", "conv.in")
    g.connect("conv.out", "y.in")
    return g


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org",
           "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.org", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, timeout=120)


def _repo(tmp_path: Path, driver: bool) -> Path:
    repo = tmp_path / "team repo"
    repo.mkdir(parents=True)
    assert _git(repo, "init", "-q", "-b", "main").returncode == 0
    if driver:  # docs/cli.md's two lines, with this interpreter for `revstudio`
        command = f"{shlex.quote(sys.executable)} -m revstudio merge %A %O %B --name %P"
        _git(repo, "config", "merge.revstudio.driver", command)
        (repo / ".gitattributes").write_text("*.revs merge=revstudio\n")
    save(_project(), repo / "model.revs")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    return repo


def _branch(repo: Path, name: str, change) -> None:
    _git(repo, "checkout", "-q", "-b", name, "main")
    graph = load(repo / "model.revs")
    change(graph)
    save(graph, repo / "model.revs")
    assert _git(repo, "commit", "-qam", name).returncode == 0


def _add(node_id: str):
    """A node put on the wire into the Output: one branch's addition."""
    def change(g: Graph) -> None:
        g.remove_edge(g.edges_into("y")[0])
        g.add_node("Activation", node_id, {"fn": "relu"}, (360, 120))
        g.connect("conv.out", f"{node_id}.in")
        g.connect(f"{node_id}.out", "y.in")
    return change


def _add_side(node_id: str):
    """A node hanging off conv (its own output unused): a second branch's addition."""
    def change(g: Graph) -> None:
        g.add_node("Activation", node_id, {"fn": "tanh"}, (360, -120))
        g.connect("conv.out", f"{node_id}.in")
    return change


@needs_git
def test_git_merges_two_branches_that_each_added_a_node(tmp_path) -> None:
    for driver in (False, True):
        repo = _repo(tmp_path / str(driver), driver)
        _branch(repo, "alice", _add("act_alice"))
        _branch(repo, "bob", _add_side("act_bob"))
        merge = _git(repo, "merge", "-m", "merge", "alice")
        if not driver:  # what the team met: git's line merge always conflicts on such a pair
            assert merge.returncode != 0 and "<<<<<<<" in (repo / "model.revs").read_text()
            continue
        assert merge.returncode == 0, merge.stdout + merge.stderr
        merged = load(repo / "model.revs")
        assert {"act_alice", "act_bob"} <= set(merged.nodes)
        assert {(str(e.src), str(e.dst)) for e in merged.edges} >= {("conv.out", "act_bob.in"),
                                                                     ("act_alice.out", "y.in")}
        assert (repo / "model.revs").read_text() == dumps(merged)  # as a Save writes it


@needs_git
def test_a_real_conflict_is_named_and_left_with_git_s_markers(tmp_path) -> None:
    repo = _repo(tmp_path, True)
    _branch(repo, "alice", lambda g: g.set_param("conv", "out_channels", 16))
    _branch(repo, "bob", lambda g: g.set_param("conv", "out_channels", 32))
    merge = _git(repo, "merge", "-m", "merge", "alice")
    assert merge.returncode != 0
    assert "node 'conv' param 'out_channels': 32 here, 16 in the other branch (was 8)" in merge.stderr
    text = (repo / "model.revs").read_text()
    assert "<<<<<<< model.revs (this branch)" in text and ">>>>>>> model.revs (other branch)" in text


def test_the_driver_rewrites_current_and_says_so_in_json(tmp_path, capsys) -> None:
    base, current, other = (tmp_path / n for n in ("base.revs", "current.revs", "other.revs"))
    for path, extra in ((base, None), (current, "a"), (other, "b")):
        g = _project()
        if extra:
            _add_side(extra)(g)
        save(g, path)
    assert main(["merge", str(current), str(base), str(other), "--json"]) == 0
    # (both added their node at one place: the other branch's is set below it)
    assert json.loads(capsys.readouterr().out) == {"merged": True, "file": str(current), "conflicts": [], "notes": [
        "node 'b' was added where this branch put another node: placed below, at 360, 220"]}
    assert {"a", "b"} <= set(load(current).nodes)
    other.write_text("")
    assert main(["merge", str(current), str(base), str(other), "--name", "model.revs"]) == 2
    assert "model.revs (other branch): the file is empty" in capsys.readouterr().err


@needs_git
def test_setup_sets_the_driver_once_and_adds_the_attribute_line_once(tmp_path, capsys, monkeypatch) -> None:
    repo = _repo(tmp_path, False)
    (repo / ".gitattributes").write_text("*.npz binary")  # the team's own line, without a newline
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    sub = repo / "projects"
    sub.mkdir()
    assert main(["merge", "--setup", str(sub)]) == 0
    out = capsys.readouterr().out
    assert "merges .revs files with:" in out and "added '*.revs merge=revstudio' (commit it" in out
    assert (repo / ".gitattributes").read_text() == "*.npz binary\n*.revs merge=revstudio\n"
    driver = _git(repo, "config", "merge.revstudio.driver").stdout.strip()
    assert driver.endswith(" merge %A %O %B --name %P")
    assert main(["merge", "--setup", str(repo), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["added"] is False
    assert (repo / ".gitattributes").read_text().count("merge=revstudio") == 1


def test_setup_outside_a_repository_and_a_merge_without_files_say_what_to_give(tmp_path, capsys, git) -> None:
    assert main(["merge", "--setup", str(tmp_path)]) == 2
    assert "not inside a git repository" in capsys.readouterr().err
    assert main(["merge"]) == 2
    assert "give CURRENT BASE OTHER (git's %A %O %B), or --setup" in capsys.readouterr().err


def test_a_version_that_cannot_be_read_says_to_check_the_path(tmp_path, capsys) -> None:
    """Run by hand with a mistyped name, the driver named the file and the OS error but not what to do."""
    save(Graph(name="m"), tmp_path / "a.revs")
    assert main(["merge", str(tmp_path / "a.revs"), str(tmp_path / "gone.revs"), str(tmp_path / "a.revs")]) == 2
    err = capsys.readouterr().err
    assert "gone.revs: cannot read the file (No such file or directory); check the path" in err
