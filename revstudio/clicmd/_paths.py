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
    """Why ``path``, a folder, is not a project: a run directory's project is inside it."""
    import os

    if not path or not os.path.isdir(path):
        return None
    from revstudio.training.runs import is_run_dir

    if is_run_dir(path):
        inside = os.path.join(path, "project.revs")
        return (f"{path}: is a folder (a run directory); the project it trained is {inside}"
                if os.path.isfile(inside) else f"{path}: is a folder (a run directory), not a project file")
    return f"{path}: is a folder, not a project file; give the .revs file"
