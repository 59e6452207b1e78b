"""A fresh venv for the install test, without copying torch and PySide6 each time.

A user's ``pip install dist/revstudio-*.whl`` into a new venv does two things: pip
resolves the wheel's dependencies against the index, and it writes every resolved
distribution into the venv (torch alone is 750 MB: four minutes of the old test on
the loaded 2-core machine). Here the two are done apart:

* ``resolve``: ``pip install --dry-run --ignore-installed --report`` of the same
  requirements for the new venv's interpreter (``pip --python``; the venv is made
  ``--without-pip``, 0.1 s against 8 s with ensurepip, and holds nothing but what
  is installed here): the metadata must resolve against the same index and wheel
  folder, and the report names every distribution, with its version, that pip
  would install.
* ``link_distributions``: each resolved third-party distribution that this test
  process already has installed at exactly that version is hard-linked, file by
  file from its RECORD (dist-info included), into the new venv's site-packages, as
  pip's installer would have written it; its scripts are copied with the new
  venv's interpreter in their first line. Nothing of revstudio and nothing from
  the source tree is linked: the wheels are then installed by the new venv's pip,
  for real, with their dependencies (``pip(venv) install TORCH WHEELS``), so
  anything not linked (a different version, a new dependency) comes from the index.

The result is a venv without system site-packages and without ``.pth`` files into
another environment; ``installed`` reads back what is in it, to compare with the
report.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name

# never taken from the test's environment: the wheels under test must bring these
OWN = {"revstudio", "revstudio-haar"}


def pip(python: Path) -> list[str]:
    """This environment's pip, installing for the interpreter ``python`` (its venv needs no pip of its own)."""
    return [sys.executable, "-m", "pip", "--python", str(python)]


def resolve(python: Path, requirements: list[str], cwd: Path, env: dict[str, str]) -> dict[str, str]:
    """What ``pip install REQUIREMENTS`` into the (empty) venv of ``python`` would install: name -> version."""
    report = cwd / "pip-report.json"
    args = [*pip(python), "install", "--dry-run", "--ignore-installed", "-q", "--report", str(report), *requirements]
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{args}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    items = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"] for i in items}


def installed(python: Path, cwd: Path, env: dict[str, str]) -> dict[str, str]:
    """The distributions the interpreter ``python`` sees: name -> version."""
    code = ("import importlib.metadata as m, json; "
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    out = subprocess.run([str(python), "-I", "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    return {canonicalize_name(k): v for k, v in json.loads(out).items()}


def installed_names(versions: dict[str, str]) -> dict[str, str]:
    """``versions`` with the names as ``installed`` writes them (canonical)."""
    return {canonicalize_name(k): v for k, v in versions.items()}


def _local(name: str, version: str, source_tree: Path) -> metadata.Distribution | None:
    """This process's installed ``name`` when it is exactly ``version`` and lies outside ``source_tree``."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    if dist.version != version or dist.files is None:
        return None
    base = Path(str(dist.locate_file(""))).resolve()
    prefix = Path(sys.prefix).resolve()
    if prefix == source_tree or source_tree in prefix.parents:  # the test env kept in the checkout (make's .venv):
        inside = base != prefix and prefix not in base.parents    # its installed packages are not the sources
    else:
        inside = base == source_tree or source_tree in base.parents
    return None if inside else dist


def _place(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)  # pip unlinks before it writes, so the venv never writes through to the original
    except FileExistsError as clash:
        raise AssertionError(f"{dest} is there already: two distributions own it, or the venv was not empty") from clash
    except OSError:  # another file system, or links not allowed: a copy
        shutil.copy2(src, dest)


def _script(src: Path, dest: Path, old_bin: Path, new_bin: Path) -> None:
    """A console script, its interpreter line naming the new venv's Python (pip writes it so)."""
    data = src.read_bytes()
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data.replace(os.fsencode(f"{old_bin}{os.sep}"), os.fsencode(f"{new_bin}{os.sep}")))
    dest.chmod(src.stat().st_mode)


def link_distributions(venv: Path, resolved: dict[str, str], source_tree: Path) -> list[str]:
    """Hard-link into ``venv`` the resolved distributions this process has at the resolved version.

    Returns the names linked; the rest (revstudio's own, other versions, missing ones) are left to pip.
    """
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-I", "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, timeout=120, check=True).stdout.strip())
    old_bin = Path(sys.prefix) / "bin"
    linked = []
    for name, version in sorted(resolved.items()):
        dist = None if name in OWN else _local(name, version, source_tree.resolve())
        if dist is None:
            continue
        files: dict[Path, tuple[Path, bool]] = {}  # a RECORD may name a file twice
        for entry in dist.files or ():
            src = Path(str(dist.locate_file(entry)))
            if entry.parts[0] == "..":  # a script pip put into the environment's bin/
                if src.resolve().parent == old_bin.resolve() and src.is_file():
                    files[venv / "bin" / src.name] = (src, True)
            elif src.is_file():
                files[site / entry] = (src, False)
        for dest, (src, is_script) in files.items():
            if is_script:
                _script(src, dest, old_bin, venv / "bin")
            else:
                _place(src, dest)
        linked.append(name)
    return linked
