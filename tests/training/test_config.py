"""The training section: defaults, strict reading (errors name the key), round trips, migration."""
from __future__ import annotations

import pytest

from revstudio.training import config as C
from revstudio.training.config import DEFAULTS, ConfigError, TrainConfig


def test_an_empty_section_is_all_defaults_and_writes_only_the_version() -> None:
    cfg = TrainConfig.from_section({})
    assert cfg.full_section() == {"version": C.VERSION, **DEFAULTS}
    assert cfg.to_section() == {"version": 1}
    assert TrainConfig.from_section(None) == cfg


def test_only_changed_keys_are_written_and_read_back() -> None:
    cfg = TrainConfig.from_section({"lr": 0.1, "epochs": 3, "mode": "standard"})
    assert cfg.steps is None and cfg.epochs == 3
    section = cfg.to_section()
    assert section == {"version": 1, "lr": 0.1, "steps": None, "epochs": 3, "mode": "standard"}
    assert TrainConfig.from_section(section) == cfg


@pytest.mark.parametrize("section, key", [
    ({"learning_rate": 0.1}, "learning_rate"),
    ({"lr": -1}, "lr"),
    ({"lr": "fast"}, "lr"),
    ({"lr": float("nan")}, "lr"),
    ({"batch_size": 0}, "batch_size"),
    ({"batch_size": 2.5}, "batch_size"),
    ({"batch_size": True}, "batch_size"),
    ({"optimizer": "lion"}, "optimizer"),
    ({"schedule": "step"}, "schedule"),
    ({"precision": "fp8"}, "precision"),
    ({"mode": "fast"}, "mode"),
    ({"device": "tpu"}, "device"),
    ({"val_fraction": 1.0}, "val_fraction"),
    ({"momentum": 1.5}, "momentum"),
    ({"data": ""}, "data"),
    ({"steps": None}, "steps"),
    ({"steps": 10, "epochs": 2}, "epochs"),
    ({"grad_clip": 0}, "grad_clip"),
    ({"version": 99}, "version"),
    ({"log_every": 0}, "log_every"),
    ({"memory_budget": -1}, "memory_budget"),
    ({"memory_budget": 1.5}, "memory_budget"),
    ({"memory_budget": "lots"}, "memory_budget"),
    ({"memory_budget": "-5MiB"}, "memory_budget"),
    ({"memory_budget": "1.9"}, "memory_budget"),
    ({"memory_budget": True}, "memory_budget"),
    ({"memory_budget": 1 << 70}, "memory_budget"),
    ({"memory_budget": "9" * 400}, "memory_budget"),
    ({"seed": -1}, "seed"),
    ({"seed": 1 << 32}, "seed"),  # torch keeps 32 bits: it would rerun seed 0 (and 1 << 63 crashed the run)
    ({"steps": 1 << 31}, "steps"),  # beyond what Run Settings can show (it crashed or cut it down)
    ({"batch_size": 10**15}, "batch_size"),
    ({"checkpoint_every": 1 << 40}, "checkpoint_every"),
    ({"lr": 1e300}, "lr"),  # beyond float32: the first optimizer step overflowed ("internal error")
    ({"weight_decay": 1e300}, "weight_decay"),
])
def test_bad_sections_name_the_key(section: dict, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_section(section)
    assert info.value.key == key
    assert f"training.{key}" in str(info.value)


@pytest.mark.parametrize("value, expected", [
    (None, None), (0, 0), (200_000, 200_000), ("64MiB", 64 << 20), ("1.5GB", 1_500_000_000), ("512 KiB", 512 << 10),
])
def test_a_memory_budget_is_bytes_or_an_amount_as_users_write_it(value, expected) -> None:
    """0 is a budget (it keeps nothing: reversible mode's memory); a hand-written "64MiB" reads as
    the badges and `revstudio memory --budget` read it, and is stored as bytes."""
    cfg = TrainConfig.from_section({"memory_budget": value})
    assert cfg.memory_budget == expected
    assert cfg.to_section().get("memory_budget") == expected


@pytest.mark.parametrize("value, shown", [(1e30, "'1e+30'"), (10**30, "'10000000000000000000...'"),
                                          (1.2e24, "'1.2e+24'")])
def test_a_memory_budget_beyond_any_machine_says_so_as_written(value, shown) -> None:
    """A budget too large for any machine, written as a number in the project file: the message
    named an internal limit of 2**80 bytes ("use at most 1208925819614629174706176"), itself
    refused, and showed 1e30 as the float's 31 digits."""
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_section({"memory_budget": value})
    message = str(info.value)
    assert message.startswith(f"training.memory_budget: {shown} is more memory than any machine has"), message
    assert "1208925819614629174706176" not in message and "19884624838656" not in message
    assert TrainConfig.from_section({"memory_budget": 1024.0}).memory_budget == 1024  # (a whole float reads)


@pytest.mark.parametrize("typed", ["unlimited", "inf", " Infinity "])
def test_an_unlimited_budget_is_refused_with_what_keeps_everything(typed) -> None:
    """`memory --budget unlimited` measures everything kept; train, the project file and Run
    Settings take amounts only, and said just "'unlimited' is not an amount of memory"."""
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_section({"memory_budget": typed})
    message = str(info.value)
    assert "is not an amount of memory" in message
    assert "larger than the model keeps (e.g. 1TiB) keeps every region whole" in message


def test_overrides_replace_and_validate() -> None:
    cfg = TrainConfig().replace(epochs=2)
    assert cfg.steps is None and cfg.epochs == 2
    assert cfg.replace(steps=5).epochs is None
    with pytest.raises(ConfigError, match="training.lr"):
        cfg.replace(lr=0)
    with pytest.raises(ConfigError, match="training.nope"):
        cfg.replace(nope=1)


def test_an_older_section_is_migrated(monkeypatch: pytest.MonkeyPatch) -> None:
    # a later version 2 renames "lr" to "learning_rate": its migration turns version-1 sections into it
    monkeypatch.setattr(C, "VERSION", 2)
    monkeypatch.setitem(C.MIGRATIONS, 1, lambda s: {**{k: v for k, v in s.items() if k != "old"},
                                                     "lr": s.get("old", 0.5)})
    assert C.migrate({"version": 1, "old": 0.25}) == {"lr": 0.25}
    assert TrainConfig.from_section({"version": 1, "old": 0.25}).lr == 0.25


def test_config_and_runs_load_no_torch() -> None:
    import os
    import subprocess
    import sys

    from training_kit import ROOT

    code = ("import sys, revstudio.training.config, revstudio.training.runs, revstudio.clicmd.runs\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'PySide6')))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
