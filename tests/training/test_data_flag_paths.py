"""A relative --data / --val-data starts at the project's folder; typed from another folder, where
the file is, the refusal says so and gives the path to use.

From a shell in the data's folder, ``revstudio train ../proj/net.revs --data mine.npz`` ended in
"../proj/mine.npz: no such file", a path the user never typed, with no word on why.
"""
from __future__ import annotations

import numpy as np
import pytest
from training_kit import linear_classifier

from revstudio import cli
from revstudio.core.project import save


@pytest.mark.parametrize("flag", ["--data", "--val-data"])
def test_a_relative_data_flag_found_only_in_the_current_folder_is_refused_with_the_path_to_give(
        tmp_path, monkeypatch, capsys, flag) -> None:
    g = linear_classifier()
    (tmp_path / "proj").mkdir()
    (tmp_path / "my data").mkdir()
    save(g, tmp_path / "proj" / "net.revs")
    np.savez(tmp_path / "my data" / "mine.npz", x=np.zeros((8, 4), "float32"), y=np.zeros(8, "int64"))
    monkeypatch.chdir(tmp_path / "my data")
    code = cli.main(["train", "../proj/net.revs", flag, "mine.npz", "--steps", "1", "--out", str(tmp_path / "r")])
    assert code == 2
    here = tmp_path / "my data" / "mine.npz"
    assert (f"{flag} mine.npz: a relative data path starts at the project's folder ({tmp_path / 'proj'}), where "
            f"there is no mine.npz; the one in the current folder is {here}: give {flag} '{here}'"
            in capsys.readouterr().err)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("command", ["train", "gradcheck"])
def test_a_project_copied_without_its_data_says_where_its_relative_path_starts(tmp_path, capsys,
                                                                                command) -> None:
    # a project saved into another folder (rs.save of a loaded example) keeps its '../data/digits.npz':
    # the refusal was "/…/copy/../data/digits.npz: no such file", with no word on why or what to do
    g = linear_classifier()
    g.set_training({**g.training, "data": "../data/mine.npz"})
    (tmp_path / "copy").mkdir()
    save(g, tmp_path / "copy" / "net.revs")
    extra = ["--steps", "1", "--out", str(tmp_path / "r")] if command == "train" else ["--data", "../data/mine.npz"]
    code = cli.main([command, str(tmp_path / "copy" / "net.revs"), *extra])
    assert code == 2
    err = capsys.readouterr().err
    if command == "train":  # (the project's training.data holds the path: the key is named)
        assert (f"no such file; the path is {tmp_path / 'copy' / 'net.revs'}'s training.data, and a relative one "
                f"starts from the project's folder ({tmp_path / 'copy'}): put the data where it points, correct the "
                "path in the project (the app's Run > Run Settings), or give --data PATH") in err, err
    else:  # (typed on the command line)
        assert (f"no such file; a relative data path starts from the project's folder ({tmp_path / 'copy'}), and "
                "../data/mine.npz names nothing there: put the data where it points, or give --data with the "
                "data's own path (in the app: Run > Run Settings)") in err, err
