"""The one-folder frozen app (packaging/revstudio.spec) builds and starts. Opt-in: it takes minutes.

Run it with ``REVSTUDIO_FREEZE_TEST=1 python -m pytest tests/packaging/test_freeze.py`` (PyInstaller
from the ``freeze`` extra), or point ``REVSTUDIO_FROZEN_APP`` at an existing ``dist/revstudio``
folder to smoke-test that build only. packaging/README.md has the measured time and size.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import revstudio

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.freeze,
    pytest.mark.skipif(not (os.environ.get("REVSTUDIO_FREEZE_TEST") or os.environ.get("REVSTUDIO_FROZEN_APP")),
                       reason="opt-in (minutes): set REVSTUDIO_FREEZE_TEST=1 or REVSTUDIO_FROZEN_APP=dist/revstudio"),
]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("REVSTUDIO_FROZEN_APP")
    if given:
        return Path(given)
    pytest.importorskip("PyInstaller")
    work = tmp_path_factory.mktemp("freeze")
    tool = shutil.which("pyinstaller", path=str(Path(sys.executable).parent)) or "pyinstaller"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    result = subprocess.run([tool, "--noconfirm", "--distpath", str(work / "dist"), "--workpath", str(work / "build"),
                             str(ROOT / "packaging" / "revstudio.spec")], env=env, capture_output=True, text=True,
                            timeout=3600)
    assert result.returncode == 0, result.stderr[-4000:]
    return work / "dist" / "revstudio"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(QT_QPA_PLATFORM="offscreen", OMP_NUM_THREADS="1")
    return env


def _run(app: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(app / "revstudio"), *args], env=_env(), cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_the_frozen_app_runs_its_commands(app: Path, tmp_path: Path) -> None:
    assert _run(app, "--version", cwd=tmp_path).stdout.strip() == revstudio.__version__
    example = _run(app, "examples", "glow_flow", cwd=tmp_path).stdout.strip()
    assert Path(example).is_file() and str(app) in example
    check = _run(app, "check", example, cwd=tmp_path)
    assert check.returncode == 0 and "valid" in check.stdout, check.stdout + check.stderr
    plugins = _run(app, "plugins", cwd=tmp_path)
    assert plugins.returncode == 0 and "24 node types" in plugins.stdout, plugins.stdout + plugins.stderr
    export = _run(app, "export", example, "-o", str(tmp_path / "m.py"), cwd=tmp_path)
    assert export.returncode == 0, export.stderr


def test_the_frozen_editor_starts_offscreen_and_closes_cleanly(app: Path, tmp_path: Path) -> None:
    example = _run(app, "examples", "revnet_wired", cwd=tmp_path).stdout.strip()
    home = tmp_path / "home"  # settings and recovery files go here, not into the user's home
    env = dict(_env(), HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local"))
    proc = subprocess.Popen([str(app / "revstudio"), example], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(20)  # start-up, the example opened and checked
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)  # Ctrl+C closes the window the normal way
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "error" not in err.lower(), err
    assert (app / "_internal" / "revstudio" / "_resources" / "styles" / "dark.qss").is_file()


def test_the_frozen_apps_children_start_through_the_app(app: Path, tmp_path: Path) -> None:
    """Train, Memory, Evaluate, the Code tab's export server and --nproc's workers are child processes:
    in the frozen app each is ``revstudio --run-module MODULE ...`` (revstudio.frozen), never ``-P -m``."""
    example = _run(app, "examples", "revnet_coupling", cwd=tmp_path).stdout.strip()
    run = tmp_path / "run"
    steps = ["--steps", "2", "--batch-size", "8", "--log-every", "1", "--val-every", "0", "--json"]
    train = _run(app, "--run-module", "revstudio", "train", example, *steps, "--out", str(run), cwd=tmp_path)
    assert train.returncode == 0, train.stdout[-2000:] + train.stderr[-2000:]
    assert [json.loads(line)["step"] for line in train.stdout.splitlines() if '"kind": "step"' in line] == [1, 2]
    request = json.dumps({"id": 1, "project": Path(example).read_text(encoding="utf-8")}) + "\n"
    serve = subprocess.run([str(app / "revstudio"), "--run-module", "revstudio.codegen.serve"], input=request,
                           env=_env(), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert json.loads(serve.stdout.splitlines()[0])["ok"], serve.stdout[-2000:] + serve.stderr[-2000:]
    ddp = _run(app, "train", example, *steps, "--nproc", "2", "--out", str(tmp_path / "ddp"), cwd=tmp_path)
    assert ddp.returncode == 0, ddp.stdout[-2000:] + ddp.stderr[-3000:]
    assert json.loads((tmp_path / "ddp" / "status.json").read_text())["status"] == "finished"


def test_a_user_trains_resumes_evaluates_and_ships_with_the_frozen_app(app: Path, tmp_path: Path) -> None:
    """What a user does with the app alone, from a folder of their own: the example with its data
    (resources/data/digits.npz, found beside the installed example), --resume, evaluate, gradcheck at
    the run's weights, memory --top (the layer that allocated each tensor, not the measuring code),
    export of the run with its weights (run by a plain Python with torch), runs, merge --setup."""
    digits = _run(app, "examples", "digits_revnet", cwd=tmp_path).stdout.strip()
    steps = ["--batch-size", "16", "--log-every", "1", "--val-every", "2"]
    train = _run(app, "train", digits, "--steps", "2", *steps, "--out", "run", cwd=tmp_path)
    assert train.returncode == 0 and "digits.npz" in train.stdout, train.stdout[-2000:] + train.stderr[-2000:]
    resumed = _run(app, "train", "--resume", "run", "--steps", "4", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert json.loads((tmp_path / "run" / "status.json").read_text())["step"] == 4
    evaluated = _run(app, "evaluate", "run", "--json", cwd=tmp_path)
    assert evaluated.returncode == 0 and json.loads(evaluated.stdout)["samples"] == 180, evaluated.stderr
    grad = _run(app, "gradcheck", digits, "--checkpoint", "run", cwd=tmp_path)
    assert grad.returncode == 0 and "OK" in grad.stdout, grad.stdout[-2000:] + grad.stderr[-2000:]
    memory = _run(app, "memory", digits, "--repeat", "1", "--top", "2", "--json", cwd=tmp_path)
    places = [t["where"] for mode in json.loads(memory.stdout)["modes"].values() for t in mode["peak_tensors"]]
    assert places and not any("memory_tracker" in p for p in places), places
    assert any(p.startswith("revstudio/") for p in places), places
    export = _run(app, "export", "run", "-o", "shipped.py", cwd=tmp_path)
    assert export.returncode == 0 and (tmp_path / "shipped.pt").is_file(), export.stderr
    use = ("import torch; from shipped import Model; m = Model(); "
           "m.load_state_dict(torch.load('shipped.pt', weights_only=True)); m.eval(); print(m(torch.zeros(2, 1, 8, 8)).shape)")
    ran = subprocess.run([sys.executable, "-c", use], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0 and "torch.Size([2, 10])" in ran.stdout, ran.stderr[-2000:]
    runs = _run(app, "runs", "run", cwd=tmp_path)
    assert runs.returncode == 0 and "finished" in runs.stdout, runs.stdout + runs.stderr
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    setup = _run(app, "merge", "--setup", str(repo), cwd=tmp_path)
    assert setup.returncode == 0 and f"{app / 'revstudio'} merge %A %O %B" in setup.stdout, setup.stdout + setup.stderr
