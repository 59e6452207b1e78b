"""A failed run's message names the editor's settings, not the worker's command-line flags.

The worker is ``revstudio train`` and its messages advise flags ("use --device cpu",
"Try a lower --lr"); a person who pressed Train has Run > Run Settings instead.
"""
from __future__ import annotations

import json
import sys

from revstudio.qt.training.words import in_app_words

from .conftest import START_TIMEOUT_MS

CUDA = "--device cuda: CUDA is not available (this torch build has no CUDA support); use --device cpu"


def test_flags_become_settings_and_the_resume_button():
    nan = ("the loss became non-finite (NaN or Inf) at step 2, first at node 'pool'; no checkpoint was saved "
           "before it. Try a lower --lr (now 1e+12), gradient clipping, or fp32")
    said = in_app_words(nan)
    assert "Try a lower learning rate (now 1e+12)" in said and said.endswith("(Run > Run Settings)")
    assert in_app_words("--resume /runs/a-1: the run already finished its 10 steps; give --steps N with N above "
                        "10 (or more --epochs) to train on") == (
        "Resume: the run already finished its 10 steps; give steps N with N above 10 (or more epochs) to train "
        "on (Run > Run Settings)")
    assert in_app_words("cannot write /a/b: disk full; free some space, then --resume /a/run") == \
        "cannot write /a/b: disk full; free some space, then Resume"
    assert in_app_words("fake failure") == "fake failure"


def test_a_failed_run_dialog_says_the_setting_to_change(qtbot, train_window, monkeypatch, tmp_path, dialogs):
    """Train with device cuda on a machine without CUDA: the dialog said "use --device cpu"."""
    import revstudio.qt.training.controller as controller

    script = tmp_path / "worker.py"
    rows = [{"kind": "event", "event": "started", "time": 0.0, "total_steps": 3},
            {"kind": "event", "event": "failed", "time": 0.1, "step": None, "message": CUDA, "exit_code": 1}]
    script.write_text("import sys\n" + "".join(f"print({json.dumps(json.dumps(r))}, flush=True)\n" for r in rows)
                      + "sys.exit(1)\n")
    monkeypatch.setattr(controller, "worker_argv", lambda snap, run_dir, resume=False: [sys.executable, str(script)])
    window = train_window({"steps": 3, "device": "cuda"})
    assert window.training.train() is None
    qtbot.waitUntil(lambda: not window.training.controller.running, timeout=START_TIMEOUT_MS)
    title, text = dialogs.errors[-1]
    assert title == "Training failed" and "--" not in text, text
    assert "use device cpu (Run > Run Settings)" in text
