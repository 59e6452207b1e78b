"""The text of an exported training script's file helpers (part of ``training_loop.LOOP``): the
uint8 scale a checkpoint learned, its atomic write, where the best weights go, and why ``--out``
cannot be written. Plain text, never run here; ``tests/codegen/test_training_script.py`` runs it.
"""
from __future__ import annotations

FILE_HELPERS = '''def scale_mismatch(state: dict[str, Any], facts: dict[str, Any], path: str) -> str | None:
    """Why a checkpoint cannot go on with these uint8 inputs: it learned them at the other scale."""
    saved = (state.get("data") or {}).get("uint8_scaled", False)  # (older checkpoints: raw 0..255)
    if not facts.get("uint8") or saved is None or bool(saved) == bool(facts["scaled"]):
        return None
    then, now = ("scaled to [0, 1]", "raw 0..255") if saved else ("raw 0..255", "scaled to [0, 1]")
    flag = "--scale-uint8" if saved else "--no-scale-uint8"
    return (f"--resume {path}: the run trained on its uint8 inputs {then}, these options feed them {now}; its "
            f"weights learned the other scale: resume with {flag} (or start a new run)")


def save_checkpoint(path: str, payload: dict[str, Any]) -> None:
    """torch.save to a temporary file beside ``path``, fsync, rename: a kill leaves the old one whole,
    and a write that fails (a full disk) leaves no temporary file and says which file it was."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(tmp, "wb") as fh:
            torch.save({"format": "revstudio-checkpoint", "version": 1, "threads": torch.get_num_threads(), **payload}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise _Failed(f"--out {path}: cannot write the checkpoint ({exc.strerror or exc})") from None


def best_file(out: str) -> str:
    """Where the weights of the lowest val_loss go (revstudio train's checkpoints/best.pt), beside ``out``:
    best.pt beside a last.pt, else OUT's name with .best before its suffix (checkpoint.best.pt)."""
    folder, name = os.path.split(out)
    root, ext = os.path.splitext(name)
    return os.path.join(folder, "best.pt" if name == "last.pt" else f"{root}.best{ext or '.pt'}")


def out_problem(path: str) -> str | None:
    """Why the checkpoint could not be written to ``path``, found before training, not after it."""
    full = os.path.abspath(path)
    if os.path.isdir(full):
        return f"--out {path} is a folder; give a file in it, e.g. --out {os.path.join(path, 'checkpoint.pt')}"
    folder = os.path.dirname(full)
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        return f"--out {path}: {folder} is a file, not a folder; give another --out"
    return None
'''
