"""Ctrl+C during a long step: the first says at once that the run stops after the step, the second
stops it now, recorded as stopped at its last checkpoint (exit 130; a KeyboardInterrupt in a session)."""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading

import pytest
from training_kit import EXAMPLES, ROOT

from revstudio import cli
from revstudio.training import checkpoint, runs
from revstudio.training.stopping import FIRST_SIGINT

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "two_branch"))
ARGS = ["--steps", "1000", "--batch-size", "8", "--log-every", "1", "--checkpoint-every", "2", "--val-every", "0",
        "--device", "cpu"]

# A step that never ends by itself (a big model on the CPU, taken to its limit): once the
# checkpoint of step 2 is on disk, every forward waits until a signal ends it.
LONG_STEP = r"""
import os, sys, time
import torch.nn.modules.module as m

marker = os.path.join(os.environ["RS_TEST_OUT"], "checkpoints", "last.pt")


def hook(module, args, output):
    while os.path.exists(marker):
        time.sleep(0.01)


m.register_module_forward_hook(hook)
from revstudio.cli import main
main()
"""


def _lines(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def _wait_for(lines: queue.Queue, found, what: str, seen: list[str]) -> str:
    while True:
        try:
            line = lines.get(timeout=120)
        except queue.Empty:
            pytest.fail(f"no {what} within 120 s; got {seen!r}")
        if line is None:
            pytest.fail(f"the output ended without {what}; got {seen!r}")
        seen.append(line)
        if found(line):
            return line


def test_a_second_ctrl_c_stops_a_long_step_now_at_the_last_checkpoint(tmp_path) -> None:
    out = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1", RS_TEST_OUT=str(out))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.Popen([sys.executable, "-P", "-c", LONG_STEP, "train", EXAMPLE, *ARGS, "--json",
                             "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path))
    rows: queue.Queue = queue.Queue()
    errs: queue.Queue = queue.Queue()
    seen_out: list[str] = []
    seen_err: list[str] = []
    for stream, into in ((proc.stdout, rows), (proc.stderr, errs)):
        threading.Thread(target=_lines, args=(stream, into), daemon=True).start()
    try:
        _wait_for(rows, lambda ln: '"event": "checkpoint"' in ln, "checkpoint row", seen_out)
        proc.send_signal(signal.SIGINT)  # step 3 now runs forever
        said = _wait_for(errs, lambda ln: "stopping after this step" in ln, "word of the stop", seen_err)
        assert said.strip() == f"revstudio: {FIRST_SIGINT}"
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    while (line := rows.get(timeout=30)) is not None:
        seen_out.append(line)
    while (line := errs.get(timeout=30)) is not None:
        seen_err.append(line)
    err = "".join(seen_err)
    assert code == cli.INTERRUPTED, err
    assert "Traceback" not in err and "interrupted" not in err
    last = json.loads(seen_out[-1])
    assert last == {**last, "event": "stopped", "step": 2, "checkpoint": "checkpoints/last.pt", "forced": True}
    info = runs.read_run(str(out))
    assert info.status == "stopped" and info.step == 2 and "second signal" in (info.message or "")
    assert runs.read_metrics(str(out))[-1] == last
    assert checkpoint.load(str(out / "checkpoints" / "last.pt"))["step"] == 2
    assert [p.name for p in out.rglob("*") if p.name.endswith(".tmp")] == []


def test_in_a_session_the_second_ctrl_c_raises_after_the_run_is_recorded_stopped(tmp_path, capsys) -> None:
    import torch.nn.modules.module as m

    out = tmp_path / "run"
    marker = out / "checkpoints" / "last.pt"
    sent: list[int] = []

    def hook(module, args, output):  # step 3 is where Ctrl+C is pressed, twice
        if marker.exists() and len(sent) < 2:
            sent.append(signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            assert FIRST_SIGINT in capsys.readouterr().err  # (the first one, said at once)
            sent.append(signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)

    handle = m.register_module_forward_hook(hook)
    before = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(KeyboardInterrupt):
            cli.main(["train", EXAMPLE, *ARGS, "--out", str(out)])
    finally:
        handle.remove()
    assert signal.getsignal(signal.SIGINT) is before
    assert len(sent) == 2
    info = runs.read_run(str(out))
    assert info.status == "stopped" and info.step == 2
    assert "stopped now, the step after 2 unfinished" in capsys.readouterr().out


def test_a_second_signal_while_train_still_loads_ends_it_there() -> None:
    from revstudio.early_stop import EarlyStop

    early = EarlyStop()
    early(signal.SIGINT, None)  # the first is noted: the run stops before its first step
    assert early.stop_signal == signal.SIGINT
    with pytest.raises(KeyboardInterrupt):  # (cli.main reports it: "interrupted", exit 130)
        early(signal.SIGINT, None)
