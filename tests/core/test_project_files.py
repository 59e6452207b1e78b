"""Project files on disk: atomic saves, and projects embedded in exported ``.py`` files."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from revstudio.core.graph import Graph
from revstudio.core.project import ProjectError, dumps, load, loads, save
from revstudio.core.pyfile import embed, read_embedded

DESIGN_EXAMPLE = """{
  "format": "revstudio", "version": 1, "name": "revnet-tiny",
  "nodes": [
    {"id": "x", "type": "Input", "params": {"shape": [8, 16, 16]}, "pos": [0, 0]},
    {"id": "s", "type": "Split", "params": {"sections": 2}},
    {"id": "y", "type": "Output", "params": {}}
  ],
  "edges": [["x.out", "s.in"], ["s.out0", "y.in"]],
  "groups": {}, "training": {}, "view": {}
}"""


def full_graph() -> Graph:
    """A project with a group, training and view, and a name that needs escaping."""
    g = loads(DESIGN_EXAMPLE)
    g.name = 'quotes " and \\ and \u2603 and \'\'\' and """'
    body = Graph("blk")
    body.add_node("GroupInput", "i", {"port": "in"})
    body.add_node("GroupOutput", "o", {"port": "out"})
    body.connect("i.out", "o.in")
    g.set_group("blk", body)
    g.add_node("Group", "g1", {"group": "blk"}, pos=(0.5, -2))
    g.training = {"steps": 100, "optimizer": {"name": "adam", "lr": 0.001}}
    g.view = {"zoom": 1.5}
    return g


# ---- exported .py files ---------------------------------------------------------------------

def test_load_reads_the_project_embedded_in_an_export(tmp_path: Path) -> None:
    g = full_graph()
    marker = tmp_path / "executed"
    source = (
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        "class Model:\n    pass\n\n" + embed(dumps(g))
    )
    path = tmp_path / "model.py"
    path.write_text(source)
    assert dumps(load(path)) == dumps(g)
    assert not marker.exists()  # never executed


def test_embedded_text_survives_any_character() -> None:
    text = '{"a": "\\"\'\\n\\\\ \u2603 \\u0000 """ \'\'\'"}\n' * 3
    assert read_embedded("x = 1\n" + embed(text)) == text
    assert read_embedded("REVSTUDIO_PROJECT: str = 'a'\nREVSTUDIO_PROJECT = 'b'\n") == "b"


@pytest.mark.parametrize(("source", "message"), [
    ("x = 1\n", r"model.py is not a revstudio export \(no REVSTUDIO_PROJECT constant\); open a .revs project, "
                r"or a .py file that revstudio export wrote"),
    ("REVSTUDIO_PROJECT = open('x').read()\n", "must be a plain string literal"),
    ("REVSTUDIO_PROJECT = b'{}'\n", "must be a plain string literal"),
    ("def f(:\n", "line 1: not valid Python"),
    ("x = 1\0\n", "not"),
    ("x = " + "(" * 300 + ")" * 300 + "\n", "not"),
    ("REVSTUDIO_PROJECT = '{\"format\": \"revstudio\", \"version\": 9}'\n",
     r"model.py \(embedded project\): made by a newer revstudio"),
])
def test_bad_exports(tmp_path: Path, source: str, message: str) -> None:
    path = tmp_path / "model.py"
    path.write_text(source)
    with pytest.raises(ProjectError, match=message):
        load(path)


# ---- atomic saves ---------------------------------------------------------------------------

@pytest.fixture()
def saved(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "model.revs"
    path.write_text(DESIGN_EXAMPLE)
    return path, path.read_bytes()


def leftovers(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_a_failed_save_leaves_the_original_untouched(
    saved: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    path, original = saved
    real_fdopen = os.fdopen

    class HalfWriter:
        """Writes half the data, then the disk is full."""

        def __init__(self, f: Any) -> None:
            self.f = f

        def __enter__(self) -> HalfWriter:
            return self

        def __exit__(self, *exc: Any) -> None:
            self.f.close()

        def write(self, data: bytes) -> None:
            self.f.write(data[: len(data) // 2])
            self.f.flush()
            raise OSError(28, "No space left on device")

    def boom(*args: Any) -> None:
        raise OSError(5, "Input/output error")

    if where == "write":
        monkeypatch.setattr(os, "fdopen", lambda fd, mode: HalfWriter(real_fdopen(fd, mode)))
    else:
        monkeypatch.setattr(os, where, boom)
    with pytest.raises(ProjectError, match=f"{path.name}: cannot save .*the file on disk is unchanged"):
        save(full_graph(), path)
    assert path.read_bytes() == original
    assert leftovers(path) == []


def test_an_interrupted_save_leaves_the_original_untouched(
    saved: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, original = saved

    def interrupt(*args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        save(full_graph(), path)
    assert path.read_bytes() == original and leftovers(path) == []


def test_a_value_that_cannot_be_saved_touches_nothing(saved: tuple[Path, bytes]) -> None:
    path, original = saved
    g = full_graph()
    g.training["bad"] = object()
    with pytest.raises(ProjectError, match="training"):
        save(g, path)
    assert path.read_bytes() == original and leftovers(path) == []


def test_save_into_a_missing_folder_names_the_path(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "model.revs"
    with pytest.raises(ProjectError, match=f"{target}: cannot save"):
        save(full_graph(), target)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs POSIX permissions as non-root")
def test_save_into_a_read_only_folder_names_the_path(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(ProjectError, match="cannot save"):
            save(full_graph(), folder / "model.revs")
    finally:
        folder.chmod(0o700)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes and links")
def test_save_keeps_the_file_mode_and_writes_through_links(saved: tuple[Path, bytes]) -> None:
    path, _ = saved
    path.chmod(0o640)
    link = path.parent / "link.revs"
    link.symlink_to(path.name)
    save(full_graph(), link)
    assert link.is_symlink() and (path.stat().st_mode & 0o777) == 0o640
    assert path.read_text() == dumps(full_graph())
    umask = os.umask(0o022)
    os.umask(umask)
    fresh = path.parent / "fresh.revs"
    save(full_graph(), fresh)
    assert (fresh.stat().st_mode & 0o777) == 0o666 & ~umask  # the umask, not mkstemp's 0600
