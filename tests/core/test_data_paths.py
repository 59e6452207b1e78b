"""Data paths that keep naming their data when a project is saved into another folder (docs/data.md).

Two probes found ``rs.save(graph, other_folder)`` writing a loaded example's ``../data/digits.npz``
unchanged, so it named nothing next to the new file and Train refused it; the app's Save As
re-pointed it. ``Graph.source`` is the file a graph was read from; ``save`` re-expresses from there.
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

import revstudio as rs
from revstudio.core import data_paths
from revstudio.core.project import dumps, load, save

ROOT = Path(__file__).resolve().parents[2]
DIGITS = ROOT / "resources" / "examples" / "digits_revnet.revs"
DATA = ROOT / "resources" / "data" / "digits.npz"


def _written(path: Path) -> dict[str, object]:
    return dict(json.loads(path.read_text())["training"])


def test_load_records_the_file_and_copy_carries_it() -> None:
    graph = load(DIGITS)
    assert graph.source == str(DIGITS)
    assert graph.copy().source == str(DIGITS)
    assert rs.Graph("built").source is None


def test_saving_a_loaded_example_elsewhere_repoints_its_data(tmp_path: Path) -> None:
    graph = load(DIGITS)
    target = tmp_path / "deep" / "er" / "mine.revs"
    target.parent.mkdir(parents=True)
    rs.save(graph, target)
    spec = str(_written(target)["data"])
    assert os.path.normpath(os.path.join(target.parent, spec)) == str(DATA)
    assert graph.training["data"] == "../data/digits.npz"  # (the graph in memory is left as it was)


def test_saving_beside_the_data_writes_a_relative_path(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.npz").write_bytes(b"")
    first = tmp_path / "models" / "a.revs"
    first.parent.mkdir()
    graph = rs.Graph("g")
    graph.set_training({"data": "../data/x.npz", "val_data": "mnist:../data"})
    save(graph, first)
    moved = load(first)
    save(moved, tmp_path / "b.revs")
    assert _written(tmp_path / "b.revs") == {"data": "data/x.npz", "val_data": "mnist:data"}


def test_a_graph_built_in_code_keeps_its_paths_as_written(tmp_path: Path) -> None:
    graph = rs.Graph("built")
    graph.set_training({"data": "../data/x.npz"})
    save(graph, tmp_path / "p.revs")
    assert _written(tmp_path / "p.revs")["data"] == "../data/x.npz"


def test_saving_in_the_same_folder_keeps_the_paths_as_typed(tmp_path: Path) -> None:
    graph = rs.Graph("g")
    graph.set_training({"data": "../../x.npz"})
    save(graph, tmp_path / "a.revs")
    save(load(tmp_path / "a.revs"), tmp_path / "b.revs")
    assert _written(tmp_path / "b.revs")["data"] == "../../x.npz"


def test_a_home_folder_path_is_warned_of_at_save(tmp_path: Path) -> None:
    graph = rs.Graph("g")
    graph.set_training({"data": "/home/ada/projects/x.npz", "val_data": "/srv/shared/y.npz"})
    with pytest.warns(UserWarning, match=r"training.data is written as /home/ada/projects/x.npz, a path in a home "
                                         r"folder: a teammate's checkout .* will not find it; put the data inside"):
        save(graph, tmp_path / "p.revs")


def test_a_shared_or_relative_path_is_not_warned_of(tmp_path: Path) -> None:
    graph = rs.Graph("g")
    graph.set_training({"data": "/srv/shared/y.npz", "val_data": "data/x.npz"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        save(graph, tmp_path / "p.revs")
    assert data_paths.personal_paths({"data": "C:\\Users\\ada\\x.npz"}) == [("data", "C:\\Users\\ada\\x.npz")]
    assert data_paths.personal_paths({"data": "synthetic", "val_data": "cifar10:/home/b/c"}) == [
        ("val_data", "/home/b/c")]


def _home_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A home folder holding ``data/x.npz`` and the folder ``proj`` (one level below it)."""
    home = tmp_path / "ada"
    (home / "data").mkdir(parents=True)
    (home / "data" / "x.npz").write_bytes(b"")
    (home / "proj").mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home, home / "proj"


# rs.save kept a home-folder path typed absolute (and warned that saving again would write it relative,
# which it never did), while the app's Save As wrote the same path relative: each save writes it relative.
@pytest.mark.parametrize("loaded", [False, True])
def test_a_home_folder_path_near_the_file_is_saved_relative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            loaded: bool) -> None:
    home, proj = _home_project(tmp_path, monkeypatch)
    graph = rs.Graph("g")
    graph.set_training({"data": str(home / "data" / "x.npz"), "val_data": f"mnist:{home / 'data'}"})
    if loaded:  # (read from a file in that folder: the same folder's save)
        (proj / "old.revs").write_text(dumps(graph))
        graph = load(proj / "old.revs")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        save(graph, proj / "net.revs")
    assert _written(proj / "net.revs") == {"data": "../data/x.npz", "val_data": "mnist:../data"}
    assert graph.training["data"] == str(home / "data" / "x.npz")  # (the graph in memory is left as it was)
    assert data_paths.personal_paths(load(proj / "net.revs").training) == []


def test_a_home_folder_path_far_from_the_file_stays_absolute_and_warned(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    home, proj = _home_project(tmp_path, monkeypatch)
    deep = proj / "a" / "b"
    deep.mkdir(parents=True)
    graph = rs.Graph("g")
    graph.set_training({"data": str(home / "data" / "x.npz")})
    with pytest.warns(UserWarning, match="put the data inside the project's folder"):
        save(graph, deep / "net.revs")
    assert _written(deep / "net.revs")["data"] == str(home / "data" / "x.npz")


def test_a_shared_absolute_path_near_the_file_stays_as_typed(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "proj").mkdir()
    graph = rs.Graph("g")
    graph.set_training({"data": str(tmp_path / "data" / "x.npz")})
    save(graph, tmp_path / "proj" / "net.revs")
    assert _written(tmp_path / "proj" / "net.revs")["data"] == str(tmp_path / "data" / "x.npz")
