"""``revstudio export``: exit codes 0/1/2, atomic output, JSON mode, reopening the result."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

pytest.importorskip("torch")

from revstudio.cli import main  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.core.project import dumps, load  # noqa: E402


def _project(tmp_path: Path, broken: bool = False) -> Path:
    g = Graph("cli")
    g.add_node("Input", "x", {"shape": [4, 6]})
    g.add_node("Linear", "fc", {"out_features": 0 if broken else 3})
    g.add_node("Output", "y", {})
    g.connect("x.out", "fc.in")
    g.connect("fc.out", "y.in")
    path = tmp_path / "p.revs"
    path.write_text(dumps(g), encoding="utf-8")
    return path


def test_export_writes_a_file_that_reopens(tmp_path, capsys) -> None:
    src = _project(tmp_path)
    out = tmp_path / "model.py"
    assert main(["export", str(src), "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert dumps(load(str(out))) == dumps(load(str(src)))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".revstudio-export-")]


def test_with_training_and_json(tmp_path, capsys) -> None:
    src = _project(tmp_path)
    out = tmp_path / "train_me.py"
    assert main(["export", str(src), "-o", str(out), "--with-training", "--json"]) == 0
    reply = json.loads(capsys.readouterr().out)
    assert reply["ok"] and reply["with_training"] and reply["output"] == str(out)
    text = out.read_text(encoding="utf-8")
    assert "def train(" in text and 'if __name__ == "__main__":' in text


def test_graph_errors_exit_1_and_write_nothing(tmp_path, capsys) -> None:
    src = _project(tmp_path, broken=True)
    out = tmp_path / "model.py"
    assert main(["export", str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "fc" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    "argv_tail, needle",
    [
        (["missing.revs", "-o", "x.py"], "missing.revs"),
        (["p.revs"], "-o"),
        (["p.revs", "-o", "no/such/folder/x.py"], "cannot write"),
        (["p.revs", "-o", "p.revs"], "overwrite"),
        (["p.revs", "-o", ""], "empty"),
    ],
)
def test_bad_usage_or_unreadable_file_exits_2(tmp_path, capsys, monkeypatch, argv_tail, needle) -> None:
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["export", *argv_tail]) == 2
    captured = capsys.readouterr()
    assert needle in captured.err + captured.out
    assert "Traceback" not in captured.err


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_an_output_that_links_to_the_input_is_refused_and_the_project_kept(tmp_path, capsys) -> None:
    src = _project(tmp_path)
    before = src.read_bytes()
    (tmp_path / "model.py").symlink_to(src.name)
    assert main(["export", str(src), "-o", str(tmp_path / "model.py"), "--json"]) == 2
    reply = json.loads(capsys.readouterr().out)
    assert "overwrite the input" in reply["error"] and reply["exit_code"] == 2
    assert src.read_bytes() == before


def test_garbage_project_exits_2(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.revs"
    bad.write_text("{ not json", encoding="utf-8")
    assert main(["export", str(bad), "-o", str(tmp_path / "x.py")]) == 2
    assert "bad.revs" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX named pipes")
def test_export_into_a_pipe_or_device_writes_into_it_and_keeps_it(tmp_path, capsys) -> None:
    # `-o /dev/null` (or a pipe): renaming the temp file over it would turn the device into a
    # plain file (as root, /dev/null itself); it is written into instead, as cp does
    src = _project(tmp_path)
    (tmp_path / "sub").mkdir()
    graph = load(str(src))
    graph.training = {"data": "d.npz"}
    src = tmp_path / "sub" / "p.revs"
    src.write_text(dumps(graph), encoding="utf-8")
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the export can open it
    try:
        assert main(["export", str(src), "-o", str(fifo)]) == 0
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
        received = b""
        while chunk := os.read(reader, 1 << 16):
            received += chunk
    finally:
        os.close(reader)
    assert b"class Model(nn.Module)" in received
    # the pipe's folder is not where the text lands: relative data paths stay as the project has them
    from revstudio.core.pyfile import read_embedded

    assert json.loads(read_embedded(received.decode("utf-8")))["training"]["data"] == "d.npz"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".revstudio-export-")]
    capsys.readouterr()
    assert main(["export", str(src), "-o", os.devnull]) == 0
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    # nothing follows the source on stdout (`-o /dev/stdout | python`), and no import hint for a device
    out, err = capsys.readouterr()
    assert out == "" and "lines to" in err and "import Model" not in err


@pytest.mark.parametrize("with_training", [False, True])
def test_relative_data_paths_start_from_the_exports_folder(tmp_path, capsys, with_training) -> None:
    # the exported script and a reopened export (`revstudio train OUT.py`) resolve data paths
    # from the .py file's folder: the embedded project must name the project's files from there
    import runpy

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    graph = load(str(_project(tmp_path)))
    graph.training = {"data": "d.npz", "val_data": "mnist:digits", "steps": 3}
    src = tmp_path / "a" / "p.revs"
    src.write_text(dumps(graph), encoding="utf-8")
    out = tmp_path / "b" / "model.py"
    flags = ["--with-training"] if with_training else []
    assert main(["export", str(src), "-o", str(out), *flags]) == 0
    capsys.readouterr()
    reopened = load(str(out))
    assert reopened.training == {"data": "../a/d.npz", "val_data": "mnist:../a/digits", "steps": 3}
    if with_training:  # the script's own settings name the same files
        script = runpy.run_path(str(out))  # defines, runs nothing (no __main__)
        assert script["TRAINING"]["data"] == "../a/d.npz" and script["TRAINING"]["val_data"] == "mnist:../a/digits"
    # beside the project, nothing moves
    assert main(["export", str(src), "-o", str(tmp_path / "a" / "same.py"), *flags]) == 0
    assert load(str(tmp_path / "a" / "same.py")).training == graph.training


def test_an_output_not_named_py_is_not_told_to_be_imported_or_reopened(tmp_path, capsys) -> None:
    src = _project(tmp_path)
    assert main(["export", str(src), "-o", str(tmp_path / "model.txt")]) == 0
    out = capsys.readouterr().out
    assert "import Model" not in out.replace("(from NAME import Model)", "") and "reopen it:" not in out
    assert "name it *.py" in out
    assert main(["export", str(src), "-o", str(tmp_path / "model.py")]) == 0
    out = capsys.readouterr().out
    assert "from model import Model" in out and f"reopen it: revstudio {tmp_path / 'model.py'}" in out


@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="needs /dev/stdout")
def test_json_beside_code_written_to_stdout_goes_to_stderr(tmp_path) -> None:
    # `-o /dev/stdout --json | ...`: stdout is the code, so the one JSON object goes to stderr
    import subprocess
    import sys

    src = _project(tmp_path)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-P", "-m", "revstudio", "export", str(src), "-o", "/dev/stdout", "--json"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr
    assert "class Model(nn.Module)" in proc.stdout and '"ok"' not in proc.stdout
    reply = json.loads(proc.stderr)
    assert reply["ok"] is True and reply["output"] == "/dev/stdout"


def test_a_read_only_output_is_refused_and_kept(tmp_path, capsys, monkeypatch) -> None:
    # writing renames a new file over the old one, which only the folder's permissions govern;
    # a read-only file is refused as cp refuses it (root may write anything: os.access says so)
    src = _project(tmp_path)
    out = tmp_path / "ro.py"
    out.write_text("# keep me\n", encoding="utf-8")
    out.chmod(0o444)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if os.fspath(p) == str(out) and mode == os.W_OK
                        else real_access(p, mode, **kw))
    assert main(["export", str(src), "-o", str(out), "--json"]) == 2
    reply = json.loads(capsys.readouterr().out)
    assert "read-only" in reply["error"] and reply["exit_code"] == 2
    assert out.read_text(encoding="utf-8") == "# keep me\n"


def test_code_written_to_stdout_for_a_reader_that_leaves_ends_quietly(tmp_path) -> None:
    """`export X -o /dev/stdout | head` said "cannot write (Broken pipe); check the folder exists"
    and exited 2; it ends as cat does, with nothing printed and exit 141."""
    import subprocess
    import sys

    src = _project(tmp_path)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-P", "-m", "revstudio", "export", str(src), "-o", "/dev/stdout"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the code is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""


@pytest.mark.parametrize("typed, meant", [("--run-dir", "--output"), ("--out-dir", "--output")])
def test_an_unknown_option_is_named_before_the_missing_output(typed, meant, tmp_path, capsys) -> None:
    """`export FILE --run-dir x` said only that -o was required: the option typed for it was hidden."""
    src = _project(tmp_path)
    assert main(["export", str(src), typed, str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert f"unrecognized arguments: {typed}" in err and f"did you mean {meant}?" in err, err
    assert "Traceback" not in err and not (tmp_path / "x").exists()


def test_a_missing_output_alone_is_still_named(tmp_path, capsys) -> None:
    assert main(["export", str(_project(tmp_path))]) == 2
    assert "required: -o/--output" in capsys.readouterr().err


def test_a_dash_output_is_refused_not_written_as_a_file_named_dash(tmp_path, capsys, monkeypatch) -> None:
    # `revstudio export x.revs -o - | tool` wrote a file named "-" and sent its "wrote - (N lines)" report
    # down the pipe, exit 0: the reader got a sentence instead of code and nothing said so
    project = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(project), "-o", "-"]) == 2
    err = capsys.readouterr().err
    assert "-o /dev/stdout" in err and "-o ./-" in err
    assert not (tmp_path / "-").exists()
    assert main(["export", str(project), "-o", "./-"]) == 0  # a file named '-', asked for as a path
    assert (tmp_path / "-").is_file()
