"""The run configuration: the project's ``training`` section as a :class:`TrainConfig`.

A project stores only the keys that differ from :data:`DEFAULTS` (plus
``"version"``), so a saved project reopens with its settings and a new default
reaches old projects. Reading is strict, like the file format: an unknown key
or a bad value is a :class:`ConfigError` naming the key and what is allowed.
A section written by a later shape of this code is brought up to date by
:data:`MIGRATIONS` before it is read. Torch-free: the editor imports this.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

VERSION = 3
# The lowest version that reads a key (a key not named here is version 1's): a section is stored with
# the lowest version that holds its keys, so a project that sets none of the newer keys still opens in
# an older revstudio, and one that sets them is refused there as "newer" (not as an unknown key).
KEY_VERSIONS: dict[str, int] = {"threads": 2, "patience": 3, "min_delta": 3, "accumulate": 3}

# Whole numbers (steps, intervals, batch, seed) stay within what the editor's fields hold (a
# 32-bit QSpinBox: a larger value crashed Run Settings or was silently cut down by it). A seed
# beyond 32 bits would also repeat a smaller one's run (torch's CPU generator keeps 32 bits).
INT_MAX = 2**31 - 1
SEED_MAX = INT_MAX
# a learning rate or weight decay beyond float32's range overflows the first optimizer step
FLOAT32_MAX = 3.4028234663852886e38
# CPU threads per process: more than the machine's CPUs is allowed (the run says so: the thread count,
# not the cores, decides a run's last bits), but not a count no machine runs
THREADS_MAX = 1024

DEFAULTS: dict[str, Any] = {
    "data": "synthetic",
    "val_data": None,
    "val_fraction": 0.1,
    "task": "auto",
    "optimizer": "adam",
    "lr": 0.001,
    "momentum": 0.9,
    "weight_decay": 0.0,
    "schedule": "constant",
    "warmup_steps": 0,
    "grad_clip": None,
    "batch_size": 32,
    "steps": 200,
    "epochs": None,
    "device": "auto",
    "precision": "fp32",
    "mode": "reversible",
    "seed": 0,
    "log_every": 10,
    "val_every": 100,
    "gradcheck_every": 100,
    "memory_every": 100,
    "checkpoint_every": 100,
    "memory_budget": None,
    # uint8 inputs of a .npz / .pt divided by 255, as mnist: / cifar10: (and torchvision's ToTensor)
    "scale_uint8": True,
    # CPU threads of each process (torch.set_num_threads); null: torch's default, which the run records
    # in environment.json. The count changes a run's last bits and its speed.
    "threads": None,
    # early stopping: a run ends once val_loss has not fallen by more than min_delta below its best for this
    # many validations in a row (null: never); the best weights are checkpoints/best.pt's
    "patience": None,
    "min_delta": 0.0,
    # gradient accumulation: each optimizer step sums the gradients of this many micro-batches of batch_size
    "accumulate": 1,
}

CHOICES: dict[str, tuple[str, ...]] = {
    "task": ("auto", "classification", "regression", "flow"),
    "optimizer": ("sgd", "adam", "adamw"),
    "schedule": ("constant", "cosine", "onecycle"),
    "precision": ("fp32", "bf16", "fp16"),
    "mode": ("reversible", "standard", "checkpoint"),
}



def _from_1(values: dict[str, Any]) -> dict[str, Any]:
    """Version 1 had no ``threads`` key: its runs took torch's default, which is what null means now
    (a version-1 section given the key by hand keeps it)."""
    return {"threads": None, **values}


def _from_2(values: dict[str, Any]) -> dict[str, Any]:
    """Version 2 had no early stopping nor gradient accumulation: its runs never stopped early and took one
    batch a step, which the defaults say."""
    return {"patience": None, "min_delta": 0.0, "accumulate": 1, **values}


# Sections of an older version are migrated one version at a time: MIGRATIONS[v]
# turns a version-v section into a version-(v + 1) one.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _from_1, 2: _from_2}


class ConfigError(Exception):
    """A bad ``training`` section or override; the message names the key."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    return type(value).__name__


def _int(key: str, value: Any, low: int, what: str, high: float = INT_MAX) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not value.is_integer()):
        raise ConfigError(f"training.{key}: expected a whole number ({what}), got {value!r} ({_kind(value)})", key)
    value = int(value)
    if value < low:
        raise ConfigError(f"training.{key}: {value} is too small; use {what}", key)
    if value > high:
        raise ConfigError(f"training.{key}: {value} is too large; use at most {high}", key)
    return value


def _amount(key: str, value: Any) -> int:
    """Bytes, as a whole number or as users write them ("64MiB", "1.5GB"): 0 keeps nothing."""
    from revstudio.diagnostics.budget import parse_bytes  # (torch-free)

    if isinstance(value, float) and value.is_integer():
        value = repr(value)  # (as written: parse_bytes words 1e30 as '1e+30', not as its float's digits)
    elif not isinstance(value, str):
        value = _int(key, value, 0, "bytes, 0 or more, or an amount such as \"64MiB\"; or null",
                     high=math.inf)  # (parse_bytes says how much is too much)
    try:
        return parse_bytes(value)
    except ValueError as exc:
        raise ConfigError(f"training.{key}: {exc}; or null for no budget", key) from None


def _float(key: str, value: Any, low: float, what: str, strict: bool = False,
           high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"training.{key}: expected a number ({what}), got {value!r} ({_kind(value)})", key)
    value = float(value)
    if not math.isfinite(value) or value < low or (strict and value <= low) or value > high:
        raise ConfigError(f"training.{key}: {value!r} is out of range; use {what}", key)
    return value


def _device(value: Any) -> str:
    """Any device torch names, as ``rs.compile`` and ``--device`` take it (``device_probe``); whether
    this machine has it is the run's check when it starts."""
    from revstudio.diagnostics.device_probe import command_line_device

    if not isinstance(value, str):
        raise ConfigError(f"training.device: expected text such as 'auto', 'cpu', 'cuda:0' or 'mps', got {value!r}",
                          "device")
    try:
        return command_line_device(value, "training.device:")
    except ValueError as exc:
        raise ConfigError(str(exc), "device") from None


def _data(key: str, value: Any, nullable: bool) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str) or not value.strip():
        allowed = "'synthetic', a .npz/.pt file, 'mnist:DIR' or 'cifar10:DIR'" + (" or null" if nullable else "")
        raise ConfigError(f"training.{key}: expected {allowed}, got {value!r}", key)
    return value


def _check(key: str, value: Any) -> Any:
    """One key's value, validated and normalised (ints as int, rates as float)."""
    if key in CHOICES:
        if value not in CHOICES[key]:
            raise ConfigError(f"training.{key}: {value!r} is not one of {', '.join(CHOICES[key])}", key)
        return value
    if key == "data":
        return _data(key, value, nullable=False)
    if key == "val_data":
        return _data(key, value, nullable=True)
    if key == "device":
        return _device(value)
    if key == "val_fraction":
        v = _float(key, value, 0.0, "a fraction from 0 (no validation) to below 1")
        if v >= 1.0:
            raise ConfigError(f"training.val_fraction: {v!r} leaves nothing to train on; use below 1", key)
        return v
    if key == "lr":
        return _float(key, value, 0.0, "a learning rate above 0, e.g. 0.001", strict=True, high=FLOAT32_MAX)
    if key == "momentum":
        v = _float(key, value, 0.0, "a momentum from 0 to below 1, e.g. 0.9")
        if v >= 1.0:
            raise ConfigError(f"training.momentum: {v!r} is out of range; use from 0 to below 1", key)
        return v
    if key == "weight_decay":
        return _float(key, value, 0.0, "0 or more, e.g. 0.01", high=FLOAT32_MAX)
    if key == "grad_clip":
        return None if value is None else _float(key, value, 0.0, "a max gradient norm above 0, or null",
                                                 strict=True)
    if key == "batch_size":
        return _int(key, value, 1, "at least 1")
    if key in ("steps", "epochs"):
        return None if value is None else _int(key, value, 1, "at least 1, or null")
    if key == "seed":
        return _int(key, value, 0, f"a seed from 0 to {SEED_MAX}", SEED_MAX)
    if key == "memory_budget":
        return None if value is None else _amount(key, value)
    if key == "scale_uint8":
        if not isinstance(value, bool):
            raise ConfigError(f"training.scale_uint8: expected true (uint8 inputs scaled to [0, 1]) or false "
                              f"(kept raw 0..255), got {value!r} ({_kind(value)})", key)
        return value
    if key == "threads":
        return None if value is None else _int(key, value, 1, "at least 1 CPU thread, or null for torch's "
                                               "default", THREADS_MAX)
    if key == "patience":
        return None if value is None else _int(key, value, 1, "at least 1 validation without improvement, or "
                                               "null for no early stopping")
    if key == "min_delta":
        return _float(key, value, 0.0, "0 or more, the fall in val_loss that counts as an improvement, e.g. 0.001")
    if key == "accumulate":
        return _int(key, value, 1, "at least 1 micro-batch per optimizer step (1: no accumulation)")
    if key == "log_every":
        return _int(key, value, 1, "at least 1 step")
    if key in ("warmup_steps", "val_every", "gradcheck_every", "memory_every", "checkpoint_every"):
        return _int(key, value, 0, "0 or more steps")
    raise ConfigError(f"training.{key}: unknown key", key)  # pragma: no cover - keys come from DEFAULTS


@dataclass(frozen=True)
class TrainConfig:
    """Every run setting; the fields and defaults are :data:`DEFAULTS`."""

    data: str = DEFAULTS["data"]
    val_data: str | None = DEFAULTS["val_data"]
    val_fraction: float = DEFAULTS["val_fraction"]
    task: str = DEFAULTS["task"]
    optimizer: str = DEFAULTS["optimizer"]
    lr: float = DEFAULTS["lr"]
    momentum: float = DEFAULTS["momentum"]
    weight_decay: float = DEFAULTS["weight_decay"]
    schedule: str = DEFAULTS["schedule"]
    warmup_steps: int = DEFAULTS["warmup_steps"]
    grad_clip: float | None = DEFAULTS["grad_clip"]
    batch_size: int = DEFAULTS["batch_size"]
    steps: int | None = DEFAULTS["steps"]
    epochs: int | None = DEFAULTS["epochs"]
    device: str = DEFAULTS["device"]
    precision: str = DEFAULTS["precision"]
    mode: str = DEFAULTS["mode"]
    seed: int = DEFAULTS["seed"]
    log_every: int = DEFAULTS["log_every"]
    val_every: int = DEFAULTS["val_every"]
    gradcheck_every: int = DEFAULTS["gradcheck_every"]
    memory_every: int = DEFAULTS["memory_every"]
    checkpoint_every: int = DEFAULTS["checkpoint_every"]
    memory_budget: int | None = DEFAULTS["memory_budget"]
    scale_uint8: bool = DEFAULTS["scale_uint8"]
    threads: int | None = DEFAULTS["threads"]
    patience: int | None = DEFAULTS["patience"]
    min_delta: float = DEFAULTS["min_delta"]
    accumulate: int = DEFAULTS["accumulate"]

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _check(f.name, getattr(self, f.name)))
        if (self.steps is None) == (self.epochs is None):
            raise ConfigError("training.steps / training.epochs: set exactly one of them (the other null)",
                              "steps" if self.steps is None else "epochs")
        if self.patience is not None:
            none = ("val_every is 0 (validation at the end only)" if self.val_every == 0 else
                    "there is no validation (val_fraction 0, no val_data)"
                    if self.val_fraction == 0 and self.val_data is None else None)
            if none:
                raise ConfigError(f"training.patience: early stopping counts validations, and {none}; set "
                                  "val_every above 0 and a validation set (val_fraction or val_data), or "
                                  "patience null", "patience")

    @classmethod
    def from_section(cls, section: dict[str, Any] | None) -> TrainConfig:
        """Read a project's ``training`` section (missing keys take the defaults)."""
        if section is None:
            section = {}
        if not isinstance(section, dict):
            raise ConfigError(f"training: expected an object of run settings, got {_kind(section)}")
        values = migrate(section)
        unknown = sorted(set(values) - set(DEFAULTS))
        if unknown:
            raise ConfigError(f"training.{unknown[0]}: unknown key; the known keys are "
                              f"{', '.join(DEFAULTS)}", unknown[0])
        # steps and epochs exclude each other: a section naming one drops the other's default
        if values.get("epochs") is not None and "steps" not in values:
            values["steps"] = None
        return cls(**values)

    def to_section(self) -> dict[str, Any]:
        """The section to store: ``version`` (the lowest that reads it, :data:`KEY_VERSIONS`) and only
        the keys that differ from the defaults."""
        out: dict[str, Any] = {"version": 1}
        for key, default in DEFAULTS.items():
            value = getattr(self, key)
            if value != default or type(value) is not type(default):
                out[key] = value
                out["version"] = max(out["version"], KEY_VERSIONS.get(key, 1))
        return out

    def full_section(self) -> dict[str, Any]:
        """Every key with its value (the resolved config of a run directory)."""
        return {"version": VERSION, **{key: getattr(self, key) for key in DEFAULTS}}

    def replace(self, **overrides: Any) -> TrainConfig:
        """A copy with some keys changed (validated; ``steps=N`` clears epochs and vice versa)."""
        unknown = sorted(set(overrides) - set(DEFAULTS))
        if unknown:
            raise ConfigError(f"training.{unknown[0]}: unknown key", unknown[0])
        if overrides.get("steps") is not None and "epochs" not in overrides:
            overrides["epochs"] = None
        if overrides.get("epochs") is not None and "steps" not in overrides:
            overrides["steps"] = None
        return dataclasses.replace(self, **overrides)


def migrate(section: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``section`` in the current shape, without its ``version`` key."""
    values = dict(section)
    version = values.pop("version", VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ConfigError(f"training.version: expected a whole number from 1, got {version!r}", "version")
    if version > VERSION:
        raise ConfigError(f"training.version: {version} is newer than this revstudio reads ({VERSION}); "
                          "update revstudio", "version")
    while version < VERSION:
        values = MIGRATIONS[version](values)
        version += 1
    return values
