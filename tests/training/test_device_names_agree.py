"""``--device`` takes the device names ``rs.compile(device=...)`` and ``rs.check`` take.

The Python API took any device torch names (``mps``, ``xpu``, ``cuda:1``) while ``revstudio
train --device`` and ``training.device`` took only auto, cpu, cuda and cuda:N, and ``revstudio
memory --device mps`` said "not supported". All now share one check of the name
(``device_probe.device_name``) and one of whether this machine has the device
(``compiler.devices.usable_device``): a device it lacks is refused with the reason, exit 2.
"""
from __future__ import annotations

import pytest
import torch
from training_kit import EXAMPLES

from revstudio import cli
from revstudio.compiler.devices import DeviceUnavailable, usable_device
from revstudio.training.config import ConfigError, TrainConfig

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))
QUICK = ["--steps", "1", "--batch-size", "4", "--gradcheck-every", "0", "--memory-every", "0", "--val-every", "0"]
MPS_HERE = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def _why(name: str) -> str:
    with pytest.raises(DeviceUnavailable) as caught:
        usable_device(name)
    return str(caught.value)


@pytest.mark.parametrize("name", ["mps", "xpu:0", "cuda:1", "hpu"])
def test_the_project_setting_takes_any_device_torch_names(name: str) -> None:
    assert TrainConfig.from_section({"device": name}).device == name


def test_the_project_setting_refuses_a_name_torch_does_not_know() -> None:
    with pytest.raises(ConfigError, match=r"training\.device: 'gpu' is not a device torch knows; use auto, cpu, "
                                          r"cuda, cuda:N, mps, xpu"):
        TrainConfig.from_section({"device": "gpu"})


@pytest.mark.skipif(MPS_HERE, reason="this machine has an Apple GPU")
def test_train_with_a_device_this_machine_lacks_says_why_like_the_api(tmp_path, capsys) -> None:
    why = _why("mps")
    assert why.startswith("MPS (Apple GPU) is not available (")
    assert cli.main(["train", EXAMPLE, *QUICK, "--device", "mps", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"revstudio: --device mps: {why}; use --device cpu" in err and "Traceback" not in err, err
    assert not (tmp_path / "run").exists()  # (refused before it started: no run left behind)

    from revstudio import compile as rs_compile
    from revstudio.compiler import CompileError
    from revstudio.core.project import load

    with pytest.raises(CompileError, match="device 'mps': " + why.replace("(", r"\(").replace(")", r"\)")):
        rs_compile(load(EXAMPLE), device="mps")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_memory_takes_the_same_names_and_refuses_a_missing_one_with_the_reason(capsys) -> None:
    for name, why in (("mps", None if MPS_HERE else _why("mps")), ("cuda:1", _why("cuda:1"))):
        if why is None:
            continue
        assert cli.main(["memory", EXAMPLE, "--device", name]) == 2
        err = capsys.readouterr().err
        assert f"--device {name}: {why}; use --device cpu" in err, err
    assert cli.main(["memory", EXAMPLE, "--device", "gpu"]) == 2
    err = capsys.readouterr().err
    assert "--device 'gpu' is not a device torch knows" in err and "mps" in err, err


@pytest.mark.skipif(MPS_HERE, reason="this machine has an Apple GPU")
def test_train_evaluate_and_memory_refuse_a_missing_device_in_one_wording(tmp_path, capsys) -> None:
    # evaluate and train said "device mps: ..." where memory said "--device mps: ..."
    run = tmp_path / "run"
    assert cli.main(["train", EXAMPLE, *QUICK, "--device", "cpu", "--out", str(run)]) == 0
    capsys.readouterr()
    said = {}
    for command in (["train", EXAMPLE, *QUICK, "--out", str(tmp_path / "other")], ["evaluate", str(run)],
                    ["memory", EXAMPLE]):
        assert cli.main([*command, "--device", "mps"]) == 2
        said[command[0]] = capsys.readouterr().err
    line = f"revstudio: --device mps: {_why('mps')}; use --device cpu\n"
    assert said == {"train": line, "evaluate": line, "memory": line}
