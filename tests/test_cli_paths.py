"""What a FILE, DIR or NAME argument may be: an empty one, ``-``, ``/dev/stdin`` (docs/cli.md, "FILE").

A scripting probe found ``check ""`` saying ": cannot read the file" of nothing, and
``examples ""`` printing the whole list where a script's ``"$NAME"`` expected one path.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from revstudio import cli
from revstudio.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "resources" / "examples" / "revnet_wired.revs"


@pytest.mark.parametrize("argv", [["check", ""], ["gradcheck", ""], ["memory", ""], ["export", "", "-o", "x.py"],
                                  ["train", ""], ["runs", ""]])
def test_an_empty_path_is_named_as_empty(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # (runs: a ./runs there must not be what "" means)
    (tmp_path / "runs").mkdir()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "path is empty" in err and "cannot read" not in err and not err.startswith("revstudio: :")


def test_an_empty_path_with_json_is_the_error_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "", "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["exit_code"] == 2 and "path is empty" in data["error"]


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_an_empty_example_name_is_refused_not_the_whole_list(flag: list[str],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples", "", *flag]) == 2
    out, err = capsys.readouterr()
    message = json.loads(out)["error"] if flag else err
    assert "NAME is empty" in message and "revnet_wired" in message
    assert "examples" not in (json.loads(out) if flag else {})


@pytest.mark.parametrize("command", ["check", "train"])
def test_a_dash_says_it_is_a_file_name_not_standard_input(command: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([command, "-"]) == 2
    err = capsys.readouterr().err
    assert "not as standard input" in err
    assert ("/dev/stdin" in err) if command == "check" else ("save the project to a .revs file" in err)


def test_a_file_named_dash_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "-").write_bytes(EXAMPLE.read_bytes())
    monkeypatch.chdir(tmp_path)
    assert main(["check", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["valid"] is True


@pytest.mark.skipif(not os.path.exists("/dev/stdin"), reason="no /dev/stdin on this system")
def test_check_reads_a_pipe_as_dev_stdin_and_train_refuses_it(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "OMP_NUM_THREADS": "1"}
    text = EXAMPLE.read_text(encoding="utf-8")
    check = subprocess.run([sys.executable, "-m", "revstudio", "check", "/dev/stdin", "--json"], input=text,
                           env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert check.returncode == 0 and json.loads(check.stdout)["valid"] is True, check.stderr
    train = subprocess.run([sys.executable, "-m", "revstudio", "train", "/dev/stdin", "--steps", "1",
                            "--out", str(tmp_path / "run")], input=text, env=env, capture_output=True,
                           text=True, timeout=120, cwd=tmp_path)
    assert train.returncode == 2 and "not a regular file (a pipe or a device)" in train.stderr
    assert "Traceback" not in train.stderr and not (tmp_path / "run").exists()


def test_gradcheck_seed_help_names_all_it_seeds() -> None:
    parser, _ = cli._build_parser("gradcheck")
    seed_help = next(a.help for a in parser._actions if a.dest == "seed") or ""
    for what in ("fresh weights", "batch", "loss projection", "random streams"):  # compare_modes seeds each
        assert what in seed_help, what


def test_runs_of_a_project_folder_are_those_in_its_runs_folder(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # the app trains into runs/ beside the project: "revstudio runs PROJECT_FOLDER" said "no runs"
    run = tmp_path / "runs" / "two-20261206-120000"
    run.mkdir(parents=True)
    (run / "status.json").write_text(json.dumps({"status": "finished", "step": 3, "total_steps": 3}))
    (run / "metrics.jsonl").write_text(json.dumps({"event": "finished", "step": 3, "loss": 0.5}) + "\n")
    assert main(["runs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "two-20261206-120000" in out and "no runs" not in out, out
    assert main(["runs", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["dir"] == str(tmp_path / "runs") and [r["name"] for r in data["runs"]] == ["two-20261206-120000"]


# A new user who installed revstudio (pip install .) types the README's commands, which name the examples by
# their place in a checkout, in a folder without one: they were told only "check the path".
@pytest.mark.parametrize("argv", [["check"], ["gradcheck"], ["memory"], ["export", "-o", "x.py"], ["train"],
                                  ["runs"], ["check", "--json"]])
def test_a_missing_path_to_a_shipped_example_says_where_it_is_installed(
        argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    given = "resources/examples/revnet_wired.revs"
    assert main([argv[0], given, *argv[1:]]) == 2
    out, err = capsys.readouterr()
    message = json.loads(out)["error"] if "--json" in argv else err
    words = f"{given}: cannot read the file (No such file or directory); check the path; "  # (train said "no such file")
    assert message.startswith(f"revstudio: {words}" if not out else words)
    assert f"the example 'revnet_wired' installed with revstudio is {EXAMPLE}" in message
    assert "revstudio examples revnet_wired" in message
    assert not (tmp_path / "x.py").exists()


def test_a_missing_path_that_is_no_example_gets_no_example_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["check", "mine.revs"]) == 2
    err = capsys.readouterr().err
    assert "mine.revs" in err and "check the path" in err and "example" not in err


@pytest.mark.parametrize("argv", [["check"], ["gradcheck"], ["memory"], ["export", "-o", "x.py"], ["train"]])
def test_a_missing_project_file_is_refused_in_one_wording_by_every_command(
        argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # train said "mine.revs: no such file" where check said "cannot read the file (No such file or directory)"
    monkeypatch.chdir(tmp_path)
    assert main([argv[0], "mine.revs", *argv[1:]]) == 2
    assert capsys.readouterr().err == \
        "revstudio: mine.revs: cannot read the file (No such file or directory); check the path\n"


# (export takes a run folder, its code and trained weights: tests/codegen/test_cli_export_weights.py)
@pytest.mark.parametrize("argv", [["check"], ["gradcheck"], ["memory"]])
def test_a_run_folder_given_as_file_points_at_its_project(argv: list[str], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`revstudio check runs/glow` said "cannot read the file (Is a directory); check the path"."""
    run = tmp_path / "runs" / "glow"
    run.mkdir(parents=True)
    (run / "status.json").write_text('{"status": "finished"}', encoding="utf-8")
    (run / "project.revs").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main([argv[0], "runs/glow", *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert "runs/glow: is a folder (a run directory); the project it trained is runs/glow/project.revs" in err
    assert main([argv[0], "runs", *argv[1:]]) == 2
    assert "runs: is a folder, not a project file; give the .revs file" in capsys.readouterr().err
