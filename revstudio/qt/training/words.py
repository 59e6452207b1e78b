"""A run's messages in the editor's words: the worker's CLI flags become the settings and buttons.

The worker is ``revstudio train`` and speaks its command line ("use --device cpu",
"Try a lower --lr"); in the editor those are fields of Run > Run Settings and the
Runs tab's Resume button. Plain strings, no Qt.
"""
from __future__ import annotations

import re

# flag -> the Run Settings field it sets (docs/editor.md names them so)
SETTINGS = {
    "device": "device", "lr": "learning rate", "mode": "mode", "batch-size": "batch size", "batch": "batch size",
    "precision": "precision", "steps": "steps", "epochs": "epochs", "optimizer": "optimizer",
    "grad-clip": "gradient clipping", "seed": "seed", "memory-every": "measure memory every",
    "checkpoint-every": "checkpoint every", "gradcheck-every": "gradient check every", "data": "data source",
    "threads": "CPU threads", "scale-uint8": '"scale uint8 inputs to [0, 1]" on', "no-scale-uint8": '"scale uint8 inputs to [0, 1]" off',
}
_FLAG = re.compile(r"--([a-z][a-z0-9-]*)")
_RESUME = re.compile(r"--resume(?: (?:/|[A-Za-z]:\\)\S*?(?=[:;,]|\s|$))?")


def in_app_words(message: str) -> str:
    """``message`` with the worker's flags said as the editor's settings (unknown flags stay)."""
    text = _RESUME.sub("Resume", message)
    used = False

    def swap(match: re.Match[str]) -> str:
        nonlocal used
        word = SETTINGS.get(match.group(1))
        if word is None:
            return match.group(0)
        used = True
        return word

    text = _FLAG.sub(swap, text)
    if used and "Run Settings" not in text:
        text += " (Run > Run Settings)"
    return text


def early_resume_words(early: dict, run_dir: str) -> str:
    """Why the Runs tab's Resume is off for a run that stopped early (its ``finished`` row's
    ``early_stopped``): ``revstudio train --resume``'s reason, and how to train on from a terminal, since
    Resume goes on with the run's own patience and would stop again at its next validation."""
    import shlex

    from revstudio.training.patience import early_reason

    n = early.get("patience")
    reason = early_reason(early, n if isinstance(n, int) else 0)
    return (f"{reason[0].upper()}{reason[1:]}. Resume goes on with the run's own settings, so it would stop again "
            f"at its next validation; to train on, run in a terminal: revstudio train --resume "
            f"{shlex.quote(run_dir)} --patience M (M above {n}: the count goes on), or --patience none to turn "
            "early stopping off.")
