"""Project files as a team keeping them in git meets them: an unfinished merge, a file cut short,
a file a newer revstudio wrote. Each is refused with a message saying what happened and what to do."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from revstudio.core.graph import Graph
from revstudio.core.project import ProjectError, dumps, load, loads
from revstudio.core.project_format import MADE_BY


def _project(*extra: str) -> Graph:
    g = Graph("shared")
    g.add_node("Input", "x", {"shape": [4, 8, 8]})
    for node_id in extra:
        g.add_node("Activation", node_id, {"fn": "relu"})
    g.add_node("Output", "y")
    g.connect("x.out", "y.in")
    return g


def _conflicted() -> tuple[str, int]:
    """What `git merge` leaves where both branches appended a node at the end of the same list."""
    ours = dumps(_project("act_alice")).splitlines()
    theirs = dumps(_project("act_bob")).splitlines()
    at = next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)
    lines = ours[:at] + ["<<<<<<< HEAD", ours[at], "=======", theirs[at], ">>>>>>> bob"] + ours[at + 1:]
    return "\n".join(lines) + "\n", at + 1


def test_a_file_with_merge_conflict_markers_says_the_merge_is_unfinished(tmp_path: Path) -> None:
    text, line = _conflicted()
    path = tmp_path / "team model.revs"
    path.write_text(text)
    with pytest.raises(ProjectError) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(f"{path}: line {line}: the file holds git's merge conflict markers")
    assert "delete the marker lines" in message and f"git checkout --ours '{path}'" in message
    assert info.value.where == f"line {line}"


def test_marker_like_text_in_a_valid_project_is_no_conflict() -> None:
    g = _project()
    g.name = "<<<<<<< HEAD\n=======\n>>>>>>> bob"  # escaped in JSON: never a line of its own
    assert loads(dumps(g)).name == g.name
    broken = dumps(_project()).replace('"edges"', '"edges",', 1) + "\n<<<<<<< only a start\n"
    with pytest.raises(ProjectError, match="Expecting") as info:
        loads(broken)
    assert "conflict" not in str(info.value)


def test_a_file_cut_short_inside_a_text_says_it_ends_too_early() -> None:
    text = dumps(_project())
    cut = text[: text.index('"Output"') + 4]  # in the middle of a string
    with pytest.raises(ProjectError) as info:
        loads(cut)
    assert "Unterminated string; the file ends too early (truncated?)" in str(info.value)
    assert "starting at;" not in str(info.value)


def test_a_file_that_is_no_json_at_all_is_not_called_cut_short() -> None:
    """A text file, or an export saved as model.txt, was "Extra data; the file ends too early (truncated?)"."""
    from revstudio.core.pyfile import embed

    with pytest.raises(ProjectError) as info:
        loads("hello\n")
    assert "this is not a revstudio project (one is JSON, starting with '{')" in str(info.value)
    assert "truncated" not in str(info.value)
    with pytest.raises(ProjectError) as info:
        loads('"""model: exported from revstudio."""\nimport torch\n\n' + embed(dumps(_project())))
    assert "it is Python code 'revstudio export' wrote: name it with .py at the end" in str(info.value)


@pytest.mark.parametrize("where", ["top", "node"])
def test_an_unknown_field_of_a_newer_revstudio_asks_to_upgrade_not_to_delete_it(where: str) -> None:
    doc = json.loads(dumps(_project()))
    doc["made_by"] = "revstudio 99.2.0"
    (doc if where == "top" else doc["nodes"][0])["tags"] = ["baseline"]
    with pytest.raises(ProjectError) as info:
        loads(json.dumps(doc))
    message = str(info.value)
    assert "unknown field 'tags': the file was made by 'revstudio 99.2.0', newer than this" in message
    assert "upgrade revstudio" in message and "remove it" not in message


@pytest.mark.parametrize("made_by", [MADE_BY, "revstudio 0.0.1", "someone's fork", ""])
def test_an_unknown_field_from_this_or_an_older_version_is_to_be_removed(made_by: str) -> None:
    doc = json.loads(dumps(_project()))
    doc["made_by"] = made_by
    doc["colour"] = "red"
    with pytest.raises(ProjectError, match=r"top level: unknown field 'colour' \(allowed: .*\); remove it$"):
        loads(json.dumps(doc))


def test_node_types_and_params_of_a_newer_revstudio_are_said_to_be_its_not_typos() -> None:
    """A teammate on a newer revstudio adds a node of a type new there: the check's errors said to
    delete the node, which would lose their work."""
    from revstudio.core.check import check

    doc = json.loads(dumps(_project("act")))
    doc["made_by"] = "revstudio 99.0.0"
    doc["nodes"][1]["type"] = "FancyActivation"
    doc["nodes"][0]["params"]["layout"] = "nhwc"
    graph = loads(json.dumps(doc))
    notes = [d for d in check(graph).diagnostics if "newer than this" in d.message]
    assert len(notes) == 1 and notes[0].severity == "warning" and set(notes[0].nodes) == {"x", "act"}
    assert notes[0].message.startswith(f"the file was made by revstudio 99.0.0, newer than this {MADE_BY}")
    assert "upgrade revstudio rather than delete them" in notes[0].message
    again = loads(dumps(graph))  # a Save keeps what this version does not know
    assert again.node("act").type == "FancyActivation" and again.node("x").params["layout"] == "nhwc"
    assert graph.copy().made_by == "revstudio 99.0.0"
    doc["made_by"] = MADE_BY  # the same version: a typo, and its errors say what to do alone
    assert not [d for d in check(loads(json.dumps(doc))).diagnostics if "newer than this" in d.message]
