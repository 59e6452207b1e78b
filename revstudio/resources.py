"""Where the app's data files are: icons, stylesheets and example projects.

They live in the repository's top-level ``resources/`` folder. A wheel or sdist
carries that folder as the package ``revstudio._resources`` (setup.py maps it at
build time), found here with :mod:`importlib.resources`, so an installed app
finds them in ``site-packages``, in a zip or in a frozen build alike. A source
checkout (``PYTHONPATH=.``, or an editable install) reads ``resources/`` in
place, so files added there show up without reinstalling anything.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from functools import lru_cache
from importlib import resources as importlib_resources
from importlib.abc import Traversable
from pathlib import Path

PACKAGE = "revstudio._resources"
_CHECKOUT = Path(__file__).resolve().parents[1]


def _checkout_folder() -> Path | None:
    """``resources/`` of a source checkout (the folder next to pyproject.toml), if this is one."""
    folder = _CHECKOUT / "resources"
    if (_CHECKOUT / "pyproject.toml").is_file() and (folder / "icons").is_dir():
        return folder
    return None


def files() -> Traversable | None:
    """The resources as a Traversable (a plain folder or a place inside a zip); None if missing."""
    folder = _checkout_folder()
    if folder is not None:
        return folder
    try:
        found: Traversable | None = importlib_resources.files(PACKAGE)
    except (ModuleNotFoundError, TypeError):
        found = None
    if isinstance(found, Path):  # an installed wheel: a real folder in site-packages
        return found
    # A frozen app (PyInstaller, packaging/revstudio.spec) keeps the folder beside the package,
    # where it may import as a namespace package; the plain folder is the simpler answer.
    beside = Path(__file__).resolve().parent / "_resources"
    if beside.is_dir():
        return beside
    return found  # inside a zip: a zipfile.Path, copied out by root()


@lru_cache(maxsize=1)
def root() -> Path:
    """The resources as a real folder (Qt and ``open`` need paths).

    From a zip, the files are copied once into a temporary folder that lives
    as long as the process. A broken install returns a path that does not
    exist: every reader treats a missing file as "no icon / no style".
    """
    found = files()
    if found is None:
        return _CHECKOUT / "resources"
    if isinstance(found, Path):
        return found
    target = Path(tempfile.mkdtemp(prefix="revstudio-resources-"))
    atexit.register(shutil.rmtree, target, True)
    _copy_tree(found, target)
    return target


def _copy_tree(source: Traversable, target: Path) -> None:
    stack = [(source, target)]
    while stack:
        src, dst = stack.pop()
        for child in src.iterdir():
            if child.name in ("__init__.py", "__pycache__"):
                continue
            if child.is_dir():
                (dst / child.name).mkdir()
                stack.append((child, dst / child.name))
            else:
                (dst / child.name).write_bytes(child.read_bytes())


def path(*parts: str) -> Path:
    """``path("icons", "save.svg")``: one resource file or folder."""
    return root().joinpath(*parts)


def examples() -> list[Path]:
    """The example projects shipped with revstudio (``resources/examples/*.revs``)."""
    folder = path("examples")
    return sorted(folder.glob("*.revs")) if folder.is_dir() else []


def example(name: str) -> Path | None:
    """The example project called ``name`` (its file stem, or its file name)."""
    stem = name[:-5] if name.endswith(".revs") else name
    return next((p for p in examples() if p.stem == stem), None)


def missing_example(given: str) -> Path | None:
    """The shipped example that ``given``, a path naming no file, seems to mean: the README's
    commands name them by their place in a checkout (``resources/examples/revnet_wired.revs``),
    which names nothing where revstudio was installed with pip. None where ``given`` exists
    or its file name is no example's."""
    if not given or not given.endswith(".revs") or os.path.exists(given):
        return None
    return example(os.path.basename(given))


def is_shipped(project: str | os.PathLike[str]) -> bool:
    """Whether ``project`` is a file revstudio ships (an example, by the path ``revstudio examples NAME``
    prints): in a checkout's ``resources/`` or the installed package's, not the user's to write beside."""
    try:
        where = Path(project).resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    folders = {(_CHECKOUT / "resources").resolve()}
    found = files()
    if isinstance(found, Path):
        folders.add(found.resolve())
    return any(folder in where.parents for folder in folders)


__all__ = ["PACKAGE", "example", "examples", "files", "is_shipped", "missing_example", "path", "root"]
