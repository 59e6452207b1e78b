"""Exported ``.py`` files are read as Python reads them, cheaply, and refused as Python refuses them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from revstudio.core import generate
from revstudio.core.project import ProjectError, dumps, load
from revstudio.core.pyfile import embed

ROOT = Path(__file__).resolve().parents[2]
PROJECT = dumps(generate.revnet_chain(1, channels=4, size=4))


def _write(path: Path, head: bytes, body: str = "") -> Path:
    path.write_bytes(head + body.encode("latin-1") + embed(PROJECT).encode("ascii"))
    return path


@pytest.mark.parametrize("encoding", ["rot13", "utf-7", "latin-1", "bogus"])
def test_coding_declarations_are_honoured_or_refused_like_python(tmp_path: Path, encoding: str) -> None:
    path = _write(tmp_path / "m.py", f"# -*- coding: {encoding} -*-\n".encode(), "name = 'caf\xe9'\n")
    python = subprocess.run([sys.executable, "-P", "-c", f"import ast; ast.parse(open({str(path)!r}, 'rb').read())"],
                            capture_output=True, text=True)
    if python.returncode == 0:
        assert load(path).name  # Python reads it: so do we, in its encoding
    else:
        with pytest.raises(ProjectError, match=encoding) as info:
            load(path)
        assert "codecs.decode" not in str(info.value)  # Python's advice to programmers, not to a user


def test_a_declared_encoding_changes_what_the_text_is(tmp_path: Path) -> None:
    """Under latin-1, the bytes of a UTF-8 'é' are two characters, as Python would read them."""
    doc = json.loads(PROJECT)
    doc["name"] = "café"
    body = embed(json.dumps(doc, ensure_ascii=False)).encode("utf-8")
    (tmp_path / "a.py").write_bytes(b"# coding: latin-1\n" + body)
    (tmp_path / "b.py").write_bytes(body)
    assert load(tmp_path / "b.py").name == "café"
    assert load(tmp_path / "a.py").name == "café".encode().decode("latin-1")


def test_nul_bytes_name_their_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path / "nul.py", b"x = 1\ny = 'a\0b'\n")
    with pytest.raises(ProjectError, match=r"line 2, column 7: a NUL byte"):
        load(path)


def _limited(argv: list[str], limit_bytes: int, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``argv`` with its address space limited (resource.setrlimit in the child)."""
    code = ("import resource, runpy, sys; "
            f"resource.setrlimit(resource.RLIMIT_AS, ({limit_bytes}, {limit_bytes})); "
            f"sys.argv = {['revstudio', *argv]!r}; runpy.run_module('revstudio', run_name='__main__')")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is what bounds memory on Linux")
def test_a_12_mb_python_file_is_checked_within_a_memory_limit(tmp_path: Path) -> None:
    path = tmp_path / "huge.py"
    path.write_text("x = 1\n" * 2_000_000 + embed(PROJECT), encoding="ascii")  # 12 MB, 2 million statements
    proc = _limited(["check", str(path)], 768 << 20, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "valid" in proc.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is what bounds memory on Linux")
def test_one_huge_statement_before_the_constant_is_not_parsed(tmp_path: Path) -> None:
    path = tmp_path / "wide.py"
    path.write_text("x = [" + "1," * 3_000_000 + "]\n" + embed(PROJECT), encoding="ascii")  # 3 million constants
    proc = _limited(["check", str(path)], 512 << 20, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_out_of_memory_while_parsing_is_a_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ast

    def no_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError()

    path = _write(tmp_path / "m.py", b"")
    monkeypatch.setattr(ast, "parse", no_memory)
    with pytest.raises(ProjectError, match="too large to read as Python"):
        load(path)


def test_an_empty_memory_error_never_reaches_the_user(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from revstudio import cli

    def no_memory(args: list[str]) -> int:
        raise MemoryError()

    monkeypatch.setattr(cli, "_dispatch", no_memory)
    assert cli.main(["check", "x.revs"]) == 1
    err = capsys.readouterr().err
    assert "out of memory" in err and "MemoryError" not in err
