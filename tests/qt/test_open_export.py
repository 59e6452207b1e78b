"""Opening an exported ``.py`` file reads its embedded project; saving must never write JSON over the code.

The export is the user's PyTorch code (maybe with an edited training script): Save on
the opened project wrote the project's JSON into it and the 2,900 lines of code were gone.
"""
from __future__ import annotations

from revstudio.core.project import dumps, load


def _export_like(revnet, tmp_path):
    path = tmp_path / "model.py"
    code = "import torch\n\n\nclass Model(torch.nn.Module):\n    pass  # my own edits\n\n\n"
    path.write_text(code + f"REVSTUDIO_PROJECT = {dumps(revnet)!r}\n")
    return path, path.read_text()


def test_save_after_opening_an_export_asks_for_a_project_file_and_keeps_the_code(make_window, revnet,
                                                                                  dialogs, tmp_path):
    path, code = _export_like(revnet, tmp_path)
    window = make_window()
    assert window.files.load_path(str(path))
    assert window.document.graph.node("f").params == revnet.node("f").params
    window.document.graph.add_node("Activation", "mine", {}, (0, 0))
    window.document.mark_dirty()
    target = str(tmp_path / "model.revs")
    dialogs.save_paths.append(target)
    assert window.files.save()
    assert "save_as" in dialogs.asked
    assert path.read_text() == code  # the export is untouched
    assert "mine" in load(target).nodes and window.document.path == target


def test_a_recovery_of_an_opened_export_restores_as_an_untitled_copy(make_window, revnet, dialogs, tmp_path):
    import json

    from revstudio.qt.autosave import RecoveryStore

    path, code = _export_like(revnet, tmp_path)
    store = RecoveryStore(tmp_path / "recovery")  # left by a session before this fix, path and all
    store.write("k-1", dumps(revnet), str(path), revnet.name)
    meta = store.folder / "k-1.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "pid": 0, "proc": None}))
    window = make_window()
    dialogs.restore.append("restore")
    assert window.offer_recovery()
    assert window.document.path is None and window.document.is_dirty()
    dialogs.save_paths.append(None)  # Save asks where (and is cancelled): never the code
    assert not window.files.save() and path.read_text() == code
