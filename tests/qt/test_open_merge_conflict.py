"""Opening a project that a git merge left with conflict markers: the editor says what happened and
what to do, and keeps the project that was open (it said "Expecting value; not valid JSON")."""
from __future__ import annotations

from revstudio.core.graph import Graph
from revstudio.core.project import dumps


def _conflicted(tmp_path):
    g = Graph("shared")
    g.add_node("Input", "x", {"shape": [4]}, (0, 0))
    g.add_node("Output", "y", {}, (240, 0))
    g.connect("x.out", "y.in")
    lines = dumps(g).splitlines()
    at = next(i for i, line in enumerate(lines) if '"id": "y"' in line)
    lines[at:at + 1] = ["<<<<<<< HEAD", lines[at] + ",", '    {"id": "a", "type": "Dropout"}', "=======",
                        lines[at] + ",", '    {"id": "b", "type": "Dropout"}', ">>>>>>> bob"]
    path = tmp_path / "shared.revs"
    path.write_text("\n".join(lines) + "\n")
    return path, at + 1


def test_opening_a_file_with_conflict_markers_names_them_and_keeps_the_open_project(make_window, dialogs,
                                                                                    tmp_path) -> None:
    window = make_window(Graph("mine"))
    path, line = _conflicted(tmp_path)
    assert not window.files.load_path(str(path))
    title, text = dialogs.errors[-1]
    assert title == "Cannot open project"
    assert text.startswith(f"{path}: line {line}: the file holds git's merge conflict markers")
    assert "git checkout --ours" in text and "Expecting" not in text
    assert window.document.graph.name == "mine"
