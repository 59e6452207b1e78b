"""A Save As that fails changes nothing: the data paths still name the data from the project's folder.

Save As re-expresses relative data paths for the new folder before writing; when the
write failed (a folder deleted meanwhile, a full disk) they stayed re-expressed for a
file that does not exist, and the next Save wrote paths pointing at the wrong place.
"""
from __future__ import annotations

import json

from revstudio.core.commands import SetTraining
from revstudio.core.project import load, save


def test_a_failed_save_as_leaves_the_data_paths_as_they_were(make_window, revnet, dialogs, tmp_path):
    (tmp_path / "data.npz").write_bytes(b"")
    revnet.training = {"data": "data.npz", "steps": 2}
    revnet.name = "doc"  # named after its file
    path = tmp_path / "doc.revs"
    save(revnet, str(path))
    window = make_window(load(str(path)), str(path))
    graph = window.document.graph
    window.document.push(SetTraining(graph, {**graph.training, "steps": 3}))  # an undoable settings edit
    dialogs.save_paths.append(str(tmp_path / "gone" / "wide.revs"))  # its folder was deleted meanwhile
    assert not window.files.save_as()
    assert graph.training["data"] == "data.npz" and window.document.path == str(path)
    assert graph.name == "doc"  # not named after a file that was never written
    assert window.files.save()
    assert json.loads(path.read_text())["training"]["data"] == "data.npz"
    window.document.undo_stack.undo()
    assert graph.training == {"data": "data.npz", "steps": 2}
