"""No child process revstudio starts imports a module planted in the current folder.

With ``python -m``, Python puts the current folder first on ``sys.path``: a
``json.py`` there would run inside the export worker. ``child_argv`` starts
every child with ``-P`` and the worker runs in a fixed private folder.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from planted import plant

from revstudio.cli import child_argv, child_cwd, child_env
from revstudio.core import generate
from revstudio.core.project import dumps

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # an empty PYTHONPATH entry means the current folder: child_env must drop it
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), "", env.get("PYTHONPATH", "")])
    return child_env(env)


def test_child_argv_is_the_contract() -> None:
    argv = child_argv("revstudio", "train", "x.revs", "--json")
    assert argv[0] == sys.executable and argv[-3:] == ["train", "x.revs", "--json"]
    if sys.version_info >= (3, 11):
        assert argv[1:4] == ["-P", "-m", "revstudio"]
    assert "-I" not in argv


def test_child_env_drops_the_current_folder_from_pythonpath() -> None:
    env = child_env({"PYTHONPATH": os.pathsep.join(["", "/a", ".", "/b"])})
    assert env["PYTHONPATH"] == os.pathsep.join(["/a", "/b"]) and env["PYTHONSAFEPATH"] == "1"
    assert "PYTHONPATH" not in child_env({"PYTHONPATH": ""})


def test_the_old_way_would_run_the_planted_module(tmp_path: Path) -> None:
    """The control: without -P the planted module does run (so the test below can fail)."""
    marker = plant(tmp_path)
    env = {k: v for k, v in _env().items() if k != "PYTHONSAFEPATH"}
    subprocess.run([sys.executable, "-m", "revstudio.codegen.serve"], cwd=tmp_path, env=env,
                   input="", capture_output=True, timeout=60)
    assert marker.exists()


def test_export_worker_child_never_imports_planted_modules(tmp_path: Path) -> None:
    marker = plant(tmp_path)
    request = json.dumps({"id": 1, "project": dumps(generate.revnet_chain(1, channels=4, size=4))}) + "\n"
    # even started from the planted folder, -P keeps it off sys.path
    proc = subprocess.run(child_argv("revstudio.codegen.serve"), cwd=tmp_path, env=_env(), input=request,
                          capture_output=True, text=True, timeout=300)
    assert not marker.exists(), f"a planted {marker.read_text()}.py ran"
    reply = json.loads(proc.stdout.splitlines()[0])
    assert reply["ok"] and "class Model" in reply["source"], proc.stderr[-2000:]


def test_child_cwd_is_private_and_fixed() -> None:
    folder = Path(child_cwd())
    assert folder == Path(child_cwd()) and folder.is_dir()
    assert (folder.stat().st_mode & 0o077) == 0


def test_editor_export_worker_starts_in_a_fixed_folder(qtbot, tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("PySide6")
    from revstudio.qt.export_worker import ExportWorker

    marker = plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["", os.environ.get("PYTHONPATH", "")]))
    worker = ExportWorker()
    try:
        source, ok = worker.export(dumps(generate.revnet_chain(1, channels=4, size=4)), timeout_ms=240_000)
        assert ok, source
        assert worker._process is not None and worker._process.workingDirectory() == child_cwd()
    finally:
        worker.shutdown()
    assert not marker.exists()
