"""Stand-in for ``revstudio.training.config`` until the train-core branch is merged.

CONTRACTS section 1's keys and defaults, with the checks the dialog needs to
flag a bad value by its key. Used only when the real module is missing; it
goes away once ``revstudio.training.config`` ships.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULTS: dict[str, Any] = {
    "data": "synthetic", "val_data": None, "val_fraction": 0.1, "task": "auto", "optimizer": "adam",
    "lr": 0.001, "momentum": 0.9, "weight_decay": 0.0, "schedule": "constant", "warmup_steps": 0,
    "grad_clip": None, "batch_size": 32, "steps": 200, "epochs": None, "device": "auto",
    "precision": "fp32", "mode": "reversible", "seed": 0, "log_every": 10, "val_every": 100,
    "gradcheck_every": 100, "memory_every": 50, "checkpoint_every": 100, "memory_budget": None,
}
CHOICES = {"task": ("auto", "classification", "regression", "flow"), "optimizer": ("sgd", "adam", "adamw"),
           "schedule": ("constant", "cosine", "onecycle"), "precision": ("fp32", "bf16", "fp16"),
           "mode": ("reversible", "standard", "checkpoint")}
POSITIVE_INT = ("batch_size", "steps", "epochs", "log_every")
COUNT = ("warmup_steps", "val_every", "gradcheck_every", "memory_every", "checkpoint_every", "memory_budget")


class ConfigError(Exception):
    """A bad key or value in the training section; the message names the key."""


@dataclass(frozen=True)
class TrainConfig:
    values: dict[str, Any]

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> TrainConfig:
        values = dict(DEFAULTS)
        for key, value in section.items():
            if key == "version":
                continue
            if key not in DEFAULTS:
                raise ConfigError(f"training.{key}: unknown key (known: {', '.join(DEFAULTS)})")
            values[key] = value
        for key, choices in CHOICES.items():
            if values[key] not in choices:
                raise ConfigError(f"training.{key}: {values[key]!r} is not one of {', '.join(choices)}")
        for key in POSITIVE_INT + COUNT:
            v = values[key]
            if v is None and key in ("steps", "epochs", "memory_budget"):
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < (1 if key in POSITIVE_INT else 0):
                raise ConfigError(f"training.{key}: expected a {'positive' if key in POSITIVE_INT else 'non-negative'}"
                                  f" whole number, got {v!r}")
        if (values["steps"] is None) == (values["epochs"] is None):
            raise ConfigError("training.steps / training.epochs: give exactly one of them")
        for key in ("lr", "momentum", "weight_decay", "val_fraction"):
            v = values[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise ConfigError(f"training.{key}: expected a non-negative number, got {v!r}")
        if not values["lr"] > 0:
            raise ConfigError("training.lr: the learning rate must be above 0")
        if not 0 <= values["val_fraction"] < 1:
            raise ConfigError("training.val_fraction: expected a number in [0, 1)")
        if values["precision"] == "fp16" and values["device"] == "cpu":
            raise ConfigError("training.precision: fp16 needs a CUDA device; use bf16 or fp32 on the CPU")
        if not isinstance(values["data"], str) or not values["data"]:
            raise ConfigError("training.data: expected 'synthetic', a .npz/.pt file, mnist:DIR or cifar10:DIR")
        return cls(values)

    def to_section(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": 1}
        out.update({k: v for k, v in self.values.items() if DEFAULTS[k] != v})
        return out
