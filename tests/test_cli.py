"""The dispatcher itself: every subcommand's --help, missing parts, and a closed output pipe.

Piping into ``head`` must behave as it does for cat or grep: no message, no
traceback, exit status 141 (128 + SIGPIPE), never "internal error".
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from revstudio import cli
from revstudio.cli import PIPE_CLOSED, SUBCOMMANDS, main
from revstudio.core.generate import revnet_chain
from revstudio.core.project import save

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_every_subcommand_help_exits_0_or_says_it_is_missing(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([name, "--help"])
    out, err = capsys.readouterr()
    if cli._available(name):
        assert code == 0, err
        assert out.startswith(f"usage: revstudio {name}") and SUBCOMMANDS[name] in out
    else:  # a part not built yet is a clear usage error, not an internal error
        assert code == 2 and f"'revstudio {name}' is not available" in err and "internal error" not in err


def test_top_level_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in SUBCOMMANDS)


def test_the_help_names_both_things_export_writes(capsys: pytest.CaptureFixture[str]) -> None:
    """export writes ONNX too (-o OUT.onnx), but `revstudio --help` named the Python code only."""
    assert main(["--help"]) == 0
    line = next(t for t in capsys.readouterr().out.splitlines() if t.startswith("  export "))
    assert "PyTorch code" in line and "ONNX" in line


def test_a_listed_command_without_its_module_is_a_usage_error(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(SUBCOMMANDS, "teleport", "not a real command")
    assert main(["teleport", "x.revs"]) == 2
    err = capsys.readouterr().err
    assert "'revstudio teleport' is not available" in err and "revstudio.clicmd.teleport" in err
    assert "Traceback" not in err and "internal error" not in err
    assert main(["--help"]) == 0
    assert "teleport   not a real command (not in this build)" in capsys.readouterr().out


class _ClosedPipe(io.StringIO):
    """A stdout whose reader has gone away."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.fixture
def example_file(tmp_path: Path) -> str:
    path = tmp_path / "chain.revs"
    save(revnet_chain(2), path)
    return str(path)


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_a_closed_stdout_exits_quietly_in_process(example_file: str, extra: list[str],
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["check", example_file, *extra]) == PIPE_CLOSED
    monkeypatch.undo()
    assert capsys.readouterr().err == ""


def test_a_closed_stdout_while_reporting_a_json_error_exits_quietly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["check", str(tmp_path / "missing.revs"), "--json"]) == PIPE_CLOSED
    monkeypatch.undo()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("args", [["check"], ["check", "--json"], ["--help"]])
def test_piping_into_a_reader_that_closes_early(example_file: str, args: list[str]) -> None:
    """A real pipe whose read end is closed before the child writes (what ``| head -0`` does)."""
    argv = [sys.executable, "-m", "revstudio", *args] + ([example_file] if args[0] == "check" else [])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # nobody will ever read: the child's first write fails with EPIPE
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert err == "" and code == PIPE_CLOSED


@pytest.mark.parametrize("flag", ["--json", "--jso", "--js"])
def test_an_abbreviated_json_flag_gets_errors_as_json_too(flag: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # argparse takes --js for --json, so the output is JSON; an error must then be JSON as well
    empty = tmp_path / "empty.revs"
    empty.write_text("", encoding="utf-8")
    assert main(["check", str(empty), flag]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"error": f"{empty}: the file is empty; it is not a revstudio project",
                                        "exit_code": 2}
    assert captured.err == ""


def test_version_with_json_is_one_object(capsys: pytest.CaptureFixture[str]) -> None:
    from revstudio import __version__

    assert main(["--version", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"version": __version__}
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"{__version__}\n"


def test_top_level_help_names_version(capsys: pytest.CaptureFixture[str]) -> None:
    # docs/cli.md lists `revstudio --version [--json]`; the top-level help did not
    assert main(["--help"]) == 0
    assert "revstudio --version [--json]" in capsys.readouterr().out


@pytest.fixture
def fake_gui(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The editor's module swapped for one that records the paths it is asked to open (on Linux), so the
    tests see whether ``revstudio FILE`` got as far as opening it."""
    import types

    opened: list[object] = []
    fake = types.ModuleType("fake_gui")
    fake.run_app = lambda path: opened.append(path) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_gui", fake)
    monkeypatch.setattr(cli, "GUI_MODULE", "fake_gui")
    monkeypatch.setattr(sys, "platform", "linux")
    return opened


def test_the_editor_without_a_display_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, fake_gui: list[object],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # `revstudio FILE` on a server: Qt aborted (exit 134, a core dump) with its plugin messages
    opened = fake_gui
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    assert main(["model.revs"]) == 2
    assert opened == []
    err = capsys.readouterr().err
    assert "needs a display" in err and "DISPLAY" in err and "revstudio --help" in err
    monkeypatch.setattr(cli, "_x_server_gone", lambda display: False)  # (a running X server)
    monkeypatch.setenv("DISPLAY", ":0")
    assert main(["model.revs"]) == 0 and opened == ["model.revs"]


def test_a_display_with_no_x_server_is_said_not_aborted_in_qt(monkeypatch: pytest.MonkeyPatch, fake_gui: list[object],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """DISPLAY left from an ended session (a stopped Xvfb, a closed desktop): Qt aborted, exit 134, with
    "could not connect to display" under advice to install xcb-cursor0 and reinstall the application."""
    opened = fake_gui
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    number = next(n for n in range(4242, 4342) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    for platform in ("", "xcb"):
        monkeypatch.setenv("QT_QPA_PLATFORM", platform)
        monkeypatch.setenv("DISPLAY", f":{number}")
        assert main(["model.revs"]) == 2 and opened == []
        err = capsys.readouterr().err
        assert f"DISPLAY=:{number} names no running X server" in err and "revstudio --help" in err
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")  # (no X server asked for)
    assert main(["model.revs"]) == 0 and opened == ["model.revs"]
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    monkeypatch.setenv("DISPLAY", "remote.example:10.0")  # (ssh -X: left to Qt)
    assert main(["model.revs"]) == 0


def _strict(text: str) -> object:
    """``json.loads`` as jq and strict parsers read: NaN and Infinity are not JSON."""
    def refuse(token: str) -> object:
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_runs_json_stays_json_when_a_runs_files_hold_nan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "a"
    run.mkdir()  # (an older revstudio, or a hand edit, wrote Python's NaN tokens into its files)
    (run / "status.json").write_text('{"status": "finished", "step": 3, "total_steps": 3, '
                                     '"metrics": {"loss": NaN, "val_loss": Infinity}}')
    (run / "config.json").write_text('{"lr": NaN}')
    assert main(["runs", str(tmp_path), "--json"]) == 0
    listed = _strict(capsys.readouterr().out)["runs"][0]  # type: ignore[index]
    assert listed["metrics"] == {"loss": None, "val_loss": None} and listed["config"] == {"lr": None}


def test_a_terminal_that_cannot_show_a_name_gets_escapes_not_an_internal_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """PYTHONIOENCODING=ascii, a latin-1 locale or a Windows console: a node id it cannot
    encode was an 'internal error: UnicodeEncodeError', exit 1, with no report at all."""
    graph = revnet_chain(blocks=1)
    graph.name = "névé-模型"
    path = tmp_path / "uni.revs"
    save(graph, str(path))
    raw = io.BytesIO()
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(raw, encoding="ascii"))
    code = main(["check", str(path)])
    sys.stdout.flush()
    assert code == 0, capsys.readouterr().err
    text = raw.getvalue().decode("ascii")
    assert "n\\xe9v\\xe9-\\u6a21\\u578b" in text and text.rstrip().endswith("valid")


def test_a_project_with_an_option_is_not_called_an_unknown_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`revstudio model.revs --json` said "unknown command 'model.revs'" and printed the usage."""
    path = tmp_path / "model.revs"
    save(revnet_chain(blocks=1), str(path))
    assert main([str(path), "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert "unknown command" not in error and f"revstudio check {path} --json" in error


def test_runs_lists_a_run_whose_status_has_values_of_the_wrong_type(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A damaged status.json (a step of "abc", a start time of 5) was an internal error."""
    for name, started in (("a", 5), ("b", "2026-01-01T00:00:00+00:00")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "status.json").write_text(json.dumps(
            {"status": "finished", "step": "abc", "total_steps": True, "started": started, "message": 3}))
    assert main(["runs", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["runs"]
    assert [(r["name"], r["step"], r["total_steps"], r["message"]) for r in listed] == [
        ("a", None, None, None), ("b", None, None, None)]
    assert main(["runs", str(tmp_path)]) == 0


def test_runs_says_why_a_run_is_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose status.json is damaged was listed as "unknown -/-" without a word of why."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "status.json").write_text("{cut short")
    assert main(["runs", str(tmp_path)]) == 0
    assert "a: status.json is unreadable (damaged or cut short); it has no rows either" in capsys.readouterr().out


def test_runs_of_a_project_file_lists_that_projects_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Projects in one folder share its runs/: `revstudio runs a.revs` listed b.revs's runs too, where
    the app's Runs tab for a.revs lists a's alone (and folders named with --out, for every project)."""
    for name in ("a-20260101-000000", "a-20260101-000000-2", "b-20260101-000000", "custom"):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "status.json").write_text('{"status": "finished"}')
    (tmp_path / "a.revs").write_text("{}")
    assert main(["runs", str(tmp_path / "a.revs"), "--json"]) == 0
    names = sorted(r["name"] for r in json.loads(capsys.readouterr().out)["runs"])
    assert names == ["a-20260101-000000", "a-20260101-000000-2", "custom"]
    assert main(["runs", str(tmp_path), "--json"]) == 0  # the folder: every project's
    assert len(json.loads(capsys.readouterr().out)["runs"]) == 4


def test_ctrl_c_is_not_reported_as_a_failed_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 1 means "the graph or check failed" (docs/cli.md); Ctrl+C during a check exited 1 too."""
    from revstudio.clicmd import check

    def interrupted(_args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(check, "run", interrupted)
    assert main(["check", "x.revs", "--json"]) == 130  # (128 + SIGINT, cli.INTERRUPTED)
    assert json.loads(capsys.readouterr().out) == {"error": "interrupted", "exit_code": 130}


@pytest.mark.parametrize("args", [["check", "x.revs", "--bogus"], ["export", "x.revs"], ["train"]])
def test_a_usage_error_names_revstudio_once_and_the_help_to_read(args: list[str],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """"revstudio: revstudio check: unrecognized arguments": the prefix was printed twice."""
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("revstudio") == 2 and err.startswith("revstudio: ") and f"'revstudio {args[0]} --help'" in err


@pytest.mark.parametrize("args, hint", [(["chek"], "'check'"), (["exmaples"], "'examples'"),
                                        (["chek", "model.revs"], "'check'")])
def test_a_mistyped_command_is_named_with_the_command_meant(args: list[str], hint: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`revstudio chek` was taken for a project to open: "the editor needs a display" on a server,
    "chek does not exist" in a message box on a desktop."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")  # were it taken for a file, the editor would open
    monkeypatch.setattr(cli, "GUI_MODULE", "revstudio.no_such_editor_module")
    assert main(args) == 2
    error = capsys.readouterr().err
    assert f"unknown command {args[0]!r}" in error and f"did you mean {hint}" in error


def test_an_option_of_another_command_is_named_with_the_one_meant(capsys: pytest.CaptureFixture[str]) -> None:
    """train says --batch-size, check/gradcheck/memory --batch: the one typed for the other was just unrecognized."""
    path = str(ROOT / "resources" / "examples" / "revnet_wired.revs")
    assert main(["memory", path, "--batch-size", "4"]) == 2
    error = capsys.readouterr().err
    assert "unrecognized arguments: --batch-size 4" in error and "did you mean --batch?" in error


@pytest.mark.parametrize("command, typed, meant", [
    ("train", "--run-dir", "--out"), ("train", "--output-dir", "--out"), ("train", "--logdir", "--out"),
    ("train", "--learning-rate", "--lr"), ("train", "--learning_rate=0.1", "--lr"), ("train", "--num_epochs", "--epochs"),
    ("train", "--batch_size", "--batch-size"), ("check", "--batch_size", "--batch"), ("gradcheck", "--batch-size", "--batch"),
    ("export", "--out-dir", "--output"), ("runs", "--run-dir", "'revstudio runs DIR'"),
])
def test_an_option_named_as_other_tools_name_it_is_named_with_the_one_meant(
        command: str, typed: str, meant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`train FILE --run-dir DIR` was only "unrecognized" (--output-dir was taken for --optimizer,
    --logdir for --lr): the names other tools use point at revstudio's, for every subcommand."""
    path = str(ROOT / "resources" / "examples" / "revnet_wired.revs")
    extra = ["-o", str(tmp_path / "m.py")] if command == "export" else []
    assert main([command, path, *extra, typed, *([] if "=" in typed else ["4"])]) == 2
    error = capsys.readouterr().err
    assert f"unrecognized arguments: {typed}" in error and f"(did you mean {meant}?)" in error, error
    assert not (tmp_path / "m.py").exists()


def test_options_spelt_as_revstudio_spells_them_pass_without_a_hint() -> None:
    """--epoch is argparse's abbreviation of --epochs; a device with an index is train's --device."""
    parser, _ = cli._build_parser("train")
    ns = parser.parse_args(["model.revs", "--epoch", "2", "--device", "cuda:0", "--out", "run"])
    assert (ns.epochs, ns.device, ns.out) == (2, "cuda:0", "run")
