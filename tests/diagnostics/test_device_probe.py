"""``auto``'s device, read without torch: a CUDA build of torch, a GPU the driver lists, and
CUDA_VISIBLE_DEVICES leaving one visible."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from revstudio.diagnostics.device_probe import auto_device, cuda_build, driver_gpus, guess_auto, visible

CPU_BUILD = "__all__ = ['__version__', 'cuda']\n__version__ = '2.13.0+cpu'\ncuda: Optional[str] = None\n"
CUDA_BUILD = "__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n"


def test_a_cuda_build_names_its_cuda_version() -> None:
    assert cuda_build(CUDA_BUILD) and cuda_build("cuda = '12.8'\n")
    assert not cuda_build(CPU_BUILD) and not cuda_build("") and not cuda_build("hip = '6.2'\ncuda = None\n")


@pytest.mark.parametrize("value,seen", [(None, True), ("0", True), ("1,2", True), ("GPU-5e3c", True),
                                        ("", False), ("-1", False), (" ", False)])
def test_cuda_visible_devices(value: str | None, seen: bool) -> None:
    assert visible({} if value is None else {"CUDA_VISIBLE_DEVICES": value}) is seen


def test_the_driver_lists_its_gpus(tmp_path: Path) -> None:
    listing, dev = tmp_path / "gpus", tmp_path / "dev"
    dev.mkdir()
    assert driver_gpus(listing, dev) == 0
    for name in ("nvidia0", "nvidiactl", "nvidia-uvm"):  # (only the numbered ones are GPUs)
        (dev / name).touch()
    assert driver_gpus(listing, dev) == 1
    listing.mkdir()
    (listing / "0000:17:00.0").mkdir()
    (listing / "0000:65:00.0").mkdir()
    assert driver_gpus(listing, dev) == 2


def test_auto_is_cuda_only_where_all_three_hold() -> None:
    assert guess_auto(CUDA_BUILD, {}, 1) == "cuda"
    assert guess_auto(CPU_BUILD, {}, 1) == "cpu"  # the driver sees a GPU this torch cannot use
    assert guess_auto(CUDA_BUILD, {}, 0) == "cpu"  # a CUDA build on a machine without one
    assert guess_auto(CUDA_BUILD, {"CUDA_VISIBLE_DEVICES": ""}, 2) == "cpu"


def test_this_machine_agrees_with_torch_and_the_guess_never_imports_it() -> None:
    torch = pytest.importorskip("torch")
    assert auto_device() == ("cuda" if torch.cuda.is_available() else "cpu")
    code = ("import sys; from revstudio.diagnostics.device_probe import auto_device; auto_device(); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "False", out.stderr
