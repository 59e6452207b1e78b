"""What the Run Settings form holds, as the training section reads it: choices, and typed text as values.

The dialog's widgets show a section's values and read them back through these
functions; a text that is not a value raises :class:`NotANumber` naming the key
(``training.lr: 'abc' is not a number``), which the dialog shows under its form.
"""
from __future__ import annotations

import math
from typing import Any

from revstudio.diagnostics.budget import parse_bytes

CHOICES = {
    "task": ("auto", "classification", "regression", "flow"),
    "optimizer": ("adam", "adamw", "sgd"),
    "schedule": ("constant", "cosine", "onecycle"),
    "precision": ("fp32", "bf16", "fp16"),
    "mode": ("reversible", "standard", "checkpoint"),
}
DATA_KINDS = (("synthetic", "synthetic (a learnable task for this graph)"), ("file", ".npz / .pt file"),
              ("mnist", "MNIST folder (IDX files)"), ("cifar10", "CIFAR-10 folder (binary batches)"))
FOLDER_KINDS = ("mnist", "cifar10")                                    # "kind:folder" in the section
NUMBERS = ("lr", "momentum", "weight_decay", "val_fraction")           # free text, parsed as floats
OPTIONAL_NUMBERS = ("grad_clip",)                                      # empty = null
INTS = ("warmup_steps", "batch_size", "seed", "log_every", "val_every", "gradcheck_every", "memory_every",
        "checkpoint_every")


class NotANumber(ValueError):
    pass


def data_source(data: object) -> tuple[str, str]:
    """(kind, path) of a section's ``data``: one of ``DATA_KINDS``' keys and the file or folder."""
    text = str(data or "synthetic")
    if text == "synthetic":
        return "synthetic", ""
    return next(((k, text[len(k) + 1:]) for k in FOLDER_KINDS if text.startswith(k + ":")), ("file", text))


def data_spec(kind: str, path: str) -> str:
    """The section's ``data`` for a kind and a path, as ``data_source`` reads it back."""
    if kind == "synthetic":
        return "synthetic"
    return f"{kind}:{path}" if kind in FOLDER_KINDS else path


def number_text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def parse_number(key: str, text: str, optional: bool) -> Any:
    text = text.strip().replace("_", "")
    if not text:
        if optional:
            return None
        raise NotANumber(f"training.{key}: enter a number")
    try:
        value = float(text)
    except ValueError:
        raise NotANumber(f"training.{key}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise NotANumber(f"training.{key}: {text!r} is not a finite number")
    return value


def parse_amount(key: str, text: str) -> int | None:
    """A memory amount as typed ("64MiB", "1.5 GB", "200000"); empty is no budget."""
    if not text.strip():
        return None
    try:
        return parse_bytes(text)  # (digit groups, 1_000, as the CLI and the project file read them)
    except ValueError as exc:
        raise NotANumber(f"training.{key}: {exc}") from None
