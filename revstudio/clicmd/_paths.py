"""What to add when a FILE argument names nothing: where the example it names is installed.

The README's commands name the examples by their place in a checkout
(``resources/examples/revnet_wired.revs``); typed after ``pip install .`` in another folder,
that path names nothing, and "check the path" alone does not say where the example went.
"""
from __future__ import annotations

import shlex


def example_hint(path: str) -> str:
    """``"; the example 'NAME' installed with revstudio is PATH (...)"`` when ``path`` names no file
    but its file name is a shipped example's, else ``""``."""
    from revstudio.resources import missing_example

    found = missing_example(path)
    if found is None:
        return ""
    return (f"; the example '{found.stem}' installed with revstudio is {found} "
            f"('revstudio examples {shlex.quote(found.stem)}' prints its path from any folder)")


def folder_problem(path: str) -> str | None:
    """Why ``path``, a folder or a checkpoint, is not a project: a run directory's project is inside
    it, and beside a run's checkpoints folder."""
    import os

    if path and os.path.isfile(path):
        return _checkpoint_problem(path)
    if not path or not os.path.isdir(path):
        return None
    from revstudio.core.project import folder_words
    from revstudio.training.runs import is_run_dir

    return folder_words(path, is_run_dir(path))


def _checkpoint_problem(path: str) -> str | None:
    """A ``torch.save`` file (a zip; a run's ``checkpoints/last.pt``) given as the project: it was
    refused as "not UTF-8 text (byte 64)", which said nothing of what it is or where its project is."""
    import os

    try:
        with open(path, "rb") as f:
            if f.read(4) != b"PK\x03\x04":
                return None
    except OSError:
        return None
    from revstudio.training.runs import SNAPSHOT, is_run_dir

    load = f'Model().load_state_dict(torch.load({path!r}, map_location="cpu", weights_only=True)["model"])'
    run = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    if os.path.basename(os.path.dirname(os.path.abspath(path))) == "checkpoints" and is_run_dir(run):
        inside = os.path.join(os.path.dirname(os.path.dirname(path)) or ".", SNAPSHOT)
        if os.path.isfile(inside):
            return (f"{path}: is a run's checkpoint (its trained weights), not a project; the project it "
                    f"trained is {inside}, and the run's model.py is its code: the weights load with {load}")
    return (f"{path}: is a zip file (a torch.save checkpoint?), not a revstudio project; give the .revs file. "
            f"A revstudio checkpoint's weights load into the exported code with {load}")
