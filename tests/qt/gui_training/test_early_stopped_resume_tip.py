"""The Runs tab's Resume for a run that stopped early (``--patience``): off, as for any finished run, and its
tooltip says why in ``revstudio train --resume``'s words and how to train on (a larger ``--patience`` or
``--patience none`` from a terminal, since Resume goes on with the run's own patience)."""
from __future__ import annotations

import json
from pathlib import Path

from revstudio.qt.runs.panel import RESUME_TIP, RunsPanel


def _finished_run(root: Path, name: str, early: dict | None) -> Path:
    run = root / name
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.pt").write_bytes(b"")
    (run / "snapshot.revs").write_text("{}", encoding="utf-8")
    message = f"stopped early at step {early['step']} (best at {early['best_step']})" if early else None
    (run / "status.json").write_text(json.dumps({"status": "finished", "step": 15, "total_steps": 40,
                                                 "message": message}), encoding="utf-8")
    end = {"kind": "event", "event": "finished", "step": 15, "metrics": {"loss": 0.5}, "wall_s": 1.0,
           **({"early_stopped": early} if early else {})}
    rows = [{"kind": "step", "step": 15, "loss": 0.5}, {"kind": "val", "step": 15, "val_loss": 0.75}, end]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return run


def test_resume_of_a_run_that_stopped_early_says_why_it_is_off(qtbot, tmp_path: Path) -> None:
    early = {"step": 15, "patience": 2, "min_delta": 1000.0, "best_step": 5, "best_val_loss": 0.625}
    stopped = _finished_run(tmp_path, "stopped-early", early)
    plain = _finished_run(tmp_path, "plain", None)
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(tmp_path)
    panel.select_paths([stopped])
    button = panel.buttons["resume"]
    assert not button.isEnabled()
    assert button.toolTip() == (
        "The run stopped early at step 15 (best at 5, val_loss 0.625): val_loss has not improved for 2 "
        "validations in a row, and its patience is 2. Resume goes on with the run's own settings, so it would "
        f"stop again at its next validation; to train on, run in a terminal: revstudio train --resume {stopped} "
        "--patience M (M above 2: the count goes on), or --patience none to turn early stopping off.")
    panel.select_paths([plain])  # a run that finished its steps: the button's own tip
    assert not button.isEnabled() and button.toolTip() == RESUME_TIP
