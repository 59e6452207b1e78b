"""An exported training script as a command in a shell or CI job, as `revstudio train` is.

Stopped by Ctrl+C (SIGINT) or SIGTERM, it finishes the step it is in, writes its checkpoint, says how
to continue, and exits 0, where it printed a KeyboardInterrupt traceback (or died silently on SIGTERM)
and lost every step since the last periodic checkpoint. A relative data path typed from the current
folder is pointed at, not only reported missing."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codegen_harness import chain_script, run_script  # noqa: E402

COMMON = ["--schedule", "constant", "--batch-size", "8", "--lr", "0.01", "--val-fraction", "0", "--device", "cpu",
          "--log-every", "1", "--checkpoint-every", "0", "--out", "ck.pt"]


def _stopped_by(sig: int, tmp_path: Path, json_rows: bool) -> tuple[int, list[str], str]:
    """Start the script on a run far too long to finish, wait for its first step row, send ``sig``."""
    path = chain_script(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["OMP_NUM_THREADS"] = "1"
    argv = [sys.executable, "-I", path.name, *COMMON, "--steps", "1000000", *(["--json"] if json_rows else [])]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()  # a step has run: the loop is going
        assert first.strip(), proc.stderr.read()[-3000:]
        proc.send_signal(sig)
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, [first, *rest.splitlines()], err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_script_checkpoints_says_so_and_resumes(sig: int, tmp_path: Path) -> None:
    code, lines, err = _stopped_by(sig, tmp_path, json_rows=True)
    assert code == 0 and "Traceback" not in err, err[-3000:]
    last = json.loads(lines[-1])
    assert last["kind"] == "event" and last["event"] == "stopped" and last["checkpoint"] == "ck.pt"
    state = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert state["step"] == last["step"] >= 1
    more = run_script(tmp_path / "train_model.py", [*COMMON[:-1], "more.pt", "--steps", str(last["step"] + 1),
                                                    "--resume", "ck.pt"], tmp_path)
    assert more.returncode == 0, more.stderr[-3000:]
    assert torch.load(tmp_path / "more.pt", weights_only=True)["step"] == last["step"] + 1


def test_the_terminal_says_where_the_checkpoint_is_and_how_to_continue(tmp_path: Path) -> None:
    code, lines, err = _stopped_by(signal.SIGINT, tmp_path, json_rows=False)
    assert code == 0 and "Traceback" not in err, err[-3000:]
    step = int(lines[-2].split()[1])  # the last step row ("step      7  loss ...")
    assert lines[-1] == f"stopped at step {step}; checkpoint ck.pt; continue it with the same options and --resume ck.pt"


def test_a_data_path_from_the_current_folder_is_pointed_at(tmp_path: Path) -> None:
    # relative data paths start from --base-dir (the script's folder): `--data data/x.npz` typed from the
    # folder holding data/ said only "<script folder>/data/x.npz: no such file", as revstudio train did
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    path = chain_script(scripts)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.npz").write_bytes(b"")
    proc = run_script(path, ["--steps", "1", "--device", "cpu", "--data", os.path.join("data", "x.npz")], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"relative data paths start from --base-dir ({scripts})" in proc.stderr
    assert f"--data {tmp_path / 'data' / 'x.npz'}" in proc.stderr and "or --base-dir DIR" in proc.stderr


def test_a_data_path_that_names_nothing_gets_revstudio_trains_words(tmp_path: Path) -> None:
    # the script said only "no such file" where revstudio train says where the path starts and what to do;
    # both now print data_hints' words (copied into the script), the script naming its folder --base-dir
    from revstudio.training.data_hints import nowhere_hint

    path = chain_script(tmp_path)
    proc = run_script(path, ["--steps", "1", "--device", "cpu", "--data", "../elsewhere/x.npz"], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    fix = "(or --base-dir DIR, the folder relative paths start from)"
    words = nowhere_hint({"--data": "../elsewhere/x.npz"}, str(tmp_path), start="--base-dir", fix=fix)
    assert words.startswith("; a relative data path starts from --base-dir") and words in proc.stderr
    assert "put the data where it points, or give --data with the data's own path" in proc.stderr
