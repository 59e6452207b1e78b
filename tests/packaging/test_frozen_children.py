"""The frozen app's child processes (train, the export server, --nproc workers) start and answer.

No PyInstaller build here (that takes 20-40 minutes): a fake frozen program stands in for it, a
script that, like PyInstaller's bootloader, runs packaging/revstudio_main.py with ``sys.frozen`` set,
``sys.executable`` naming the program itself and the current folder off ``sys.path``. The test's own
process is made to look frozen too, so ``child_argv`` builds the frozen form, and the real child is
started through that program. tests/packaging/test_freeze.py does the same through a real build.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from planted import plant

from revstudio import frozen
from revstudio.cli import child_argv, child_env, main
from revstudio.core import generate
from revstudio.core.project import dumps
from revstudio.training import launch

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "resources" / "examples" / "revnet_coupling.revs")
TRAIN = ["--steps", "2", "--batch-size", "8", "--log-every", "1", "--val-every", "0", "--json"]


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake frozen ``revstudio`` program; this process now looks like the frozen app."""
    folder = tmp_path / "dist" / "revstudio"
    folder.mkdir(parents=True)
    program = folder / "revstudio"
    boot = (f"import sys, runpy; sys.frozen = True; sys.executable = {str(program)!r}; "
            f"runpy.run_path({str(ROOT / 'packaging' / 'revstudio_main.py')!r}, run_name='__main__')")
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" -P -c "{boot}" "$@"\n', encoding="utf-8")
    program.chmod(0o755)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(program))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return program


def _train_options(*args: str) -> argparse.Namespace:
    """``revstudio train ARGS``'s parsed options, as the launcher gets them."""
    from revstudio.cli import _build_parser

    parser, _ = _build_parser("train")
    return parser.parse_args(list(args))


def test_in_the_frozen_app_a_child_is_the_program_with_the_marker(app: Path) -> None:
    argv = child_argv("revstudio", "train", "x.revs", "--json")
    assert argv == [str(app), frozen.RUN_MODULE, "revstudio", "train", "x.revs", "--json"]


def test_a_training_child_runs_through_the_frozen_program(app: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    marker = plant(work)
    run = tmp_path / "run"
    proc = subprocess.run(child_argv("revstudio", "train", EXAMPLE, *TRAIN, "--out", str(run)), cwd=work,
                          env=child_env(), capture_output=True, text=True, timeout=300)
    assert not marker.exists(), f"a planted {marker.read_text()}.py ran"
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["step"] for r in rows if r.get("kind") == "step"] == [1, 2]
    assert json.loads((run / "status.json").read_text())["status"] == "finished"


def test_the_export_server_answers_through_the_frozen_program(app: Path, tmp_path: Path) -> None:
    marker = plant(tmp_path)
    request = json.dumps({"id": 4, "project": dumps(generate.revnet_chain(1, channels=4, size=4))}) + "\n"
    proc = subprocess.run(child_argv("revstudio.codegen.serve"), cwd=tmp_path, env=child_env(), input=request,
                          capture_output=True, text=True, timeout=300)
    assert not marker.exists(), f"a planted {marker.read_text()}.py ran"
    reply = json.loads(proc.stdout.splitlines()[0]) if proc.stdout else {}
    assert reply.get("id") == 4 and reply.get("ok") and "class Model" in reply["source"], proc.stderr[-2000:]


def test_nproc_workers_are_the_frozen_program_too(app: Path, tmp_path: Path) -> None:
    args = _train_options(EXAMPLE, "--nproc", "2")
    argv = launch.launcher_args(args, str(tmp_path / "run"))
    at = argv.index("--no-python")
    assert argv[at + 1:at + 5] == [str(app), frozen.RUN_MODULE, "revstudio", "train"] and "--module" not in argv
    run = tmp_path / "run"
    proc = subprocess.run([str(app), "train", EXAMPLE, *TRAIN, "--nproc", "2", "--out", str(run)], cwd=tmp_path,
                          env=child_env(), capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert json.loads((run / "status.json").read_text())["status"] == "finished"


def test_the_marker_without_a_module_or_with_an_unknown_one_says_so(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", ["revstudio", frozen.RUN_MODULE])
    assert main() == 2
    assert "--run-module needs a module name" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["revstudio", frozen.RUN_MODULE, "revstudio.no_such_module"])
    assert main() == 2
    assert "--run-module revstudio.no_such_module: no such module in this revstudio" in capsys.readouterr().err


def test_the_marker_keeps_the_current_folder_off_the_path(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", ".", str(tmp_path), str(ROOT)])
    frozen._keep_the_current_folder_off_the_path()
    assert sys.path == [str(ROOT)]


def test_merge_setup_in_the_frozen_app_names_the_program(app: Path, tmp_path: Path, monkeypatch, git: str) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    assert main(["merge", "--setup", str(repo)]) == 0
    driver = subprocess.run(["git", "-C", str(repo), "config", "merge.revstudio.driver"], capture_output=True,
                            text=True).stdout.strip()
    assert driver == f"{app} merge %A %O %B --name %P"
