"""What to add when a FILE argument names nothing: where the example it names is installed.

The README's commands name the examples by their place in a checkout
(``resources/examples/revnet_wired.revs``); typed after ``pip install .`` in another folder,
that path names nothing, and "check the path" alone does not say where the example went.
"""
from __future__ import annotations

import os
import shlex


def example_hint(path: str) -> str:
    """``"; the example 'NAME' installed with revstudio is PATH (...)"`` when ``path`` names no file
    but its file name is a shipped example's, else ``""``."""
    if not path or os.path.exists(path) or not path.endswith(".revs"):
        return ""
    from revstudio import resources

    found = resources.example(os.path.basename(path))
    if found is None:
        return ""
    return (f"; the example '{found.stem}' installed with revstudio is {found} "
            f"('revstudio examples {shlex.quote(found.stem)}' prints its path from any folder)")
