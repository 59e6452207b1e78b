"""Which device ``training.device: auto`` would pick, asked without importing torch.

The editor prices its live memory figures for the device a project trains on
(``check.training_device``). ``auto`` means a CUDA device where torch finds one
(``torch.cuda.is_available()``), and importing torch to ask takes seconds the
editor does not spend. This reads the same facts from disk: torch is a CUDA build
(its ``version.py`` names a CUDA version), the NVIDIA driver lists a GPU, and
``CUDA_VISIBLE_DEVICES`` does not hide every device. A run confirms it (its first
row names the device it got).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_CUDA_BUILD = re.compile(r"^cuda\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
GPUS = Path("/proc/driver/nvidia/gpus")  # (Linux: one folder per GPU the driver sees)


def cuda_build(version_text: str) -> bool:
    """Whether a torch ``version.py`` is a CUDA build's (``cuda = '12.8'``, not ``None``)."""
    return _CUDA_BUILD.search(version_text) is not None


def _torch_version_text() -> str:
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return ""
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        try:
            return (Path(folder) / "version.py").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return ""


def visible(environ: Mapping[str, str]) -> bool:
    """Whether ``CUDA_VISIBLE_DEVICES`` leaves any device visible (unset: all are)."""
    value = environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return True
    first = value.split(",")[0].strip()
    return bool(first) and not first.startswith("-")


def driver_gpus(root: Path = GPUS, dev: Path = Path("/dev")) -> int:
    """GPUs the NVIDIA driver lists (``/proc/driver/nvidia/gpus``), or its device nodes
    (``/dev/nvidia0``...) where a container shows those but not the listing."""
    try:
        return sum(1 for _ in root.iterdir())
    except OSError:
        pass
    try:
        return sum(1 for p in dev.glob("nvidia[0-9]*"))
    except OSError:
        return 0


def guess_auto(version_text: str, environ: Mapping[str, str], gpus: int) -> str:
    """"cuda" where a CUDA build of torch would find a GPU the driver lists, else "cpu"."""
    return "cuda" if cuda_build(version_text) and gpus > 0 and visible(environ) else "cpu"


@functools.cache
def auto_device() -> str:
    """The device kind ``auto`` picks on this machine ("cuda" or "cpu"), read once."""
    return guess_auto(_torch_version_text(), os.environ, driver_gpus())


# The device types ``torch.device`` takes (its own list, in its order), so a device is checked
# without importing torch; "cuda:N"-style indexes as torch writes them (no sign, no leading 0)
TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
                      "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_DEVICE = re.compile(r"([a-z]+)(?::(?:0|[1-9][0-9]*))?")


def device_name(device: Any, caller: str, none_means: str = "None for the project's training device") -> Any:
    """The one check of the Python API's ``device`` arguments (``rs.check``, ``rs.compile``), as the
    CLI's ``--device`` and ``training.device`` take them: ``"auto"`` (returned as is), a name
    ``torch.device`` takes ("cpu", "cuda:1", "mps"), or a ``torch.device`` (returned as given). A
    ValueError names any other value, says who refused it and lists the accepted forms."""
    if isinstance(device, str) and device == "auto":
        return device
    kind = getattr(device, "type", None) if not isinstance(device, str) else None
    if isinstance(kind, str) and kind:  # a torch.device torch made (an out-of-tree backend's too)
        return device
    m = _DEVICE.fullmatch(device) if isinstance(device, str) else None
    if m is None or m.group(1) not in TORCH_DEVICE_TYPES:
        shown = repr(device) if len(repr(device)) <= 40 else repr(device)[:36] + "...'"
        raise ValueError(f"{caller}: device {shown} is not a device torch knows; use 'auto', 'cpu', 'cuda', "
                         f"'cuda:N', 'mps', 'xpu' (or another of torch's types: {', '.join(TORCH_DEVICE_TYPES)}), "
                         f"a torch.device, or {none_means}")
    return device


def device_type(device: Any, caller: str = "rs.check") -> str:
    """The type of ``device`` (``"cuda"`` for ``"cuda:1"``; for ``"auto"`` the type it picks here,
    :func:`auto_device`), for a value :func:`device_name` takes; a ValueError names any other. A
    ``torch.device`` gives its ``.type`` (torch made it: a backend registered under a name of its
    own, "npu", too)."""
    device = device_name(device, caller)
    if isinstance(device, str):
        return auto_device() if device == "auto" else device.partition(":")[0]
    return str(device.type)


def command_line_device(text: str, flag: str = "--device") -> str:
    """The check of a device given on a command line or in ``training.device`` (``flag`` names it):
    :func:`device_name`'s rule (the Python API's), its refusal worded for a command line. Returns
    ``text``; a ValueError names any other value and lists the forms."""
    try:
        return str(device_name(text, flag))
    except ValueError:
        shown = repr(text) if len(repr(text)) <= 40 else repr(text)[:36] + "...'"
        raise ValueError(f"{flag} {shown} is not a device torch knows; use auto, cpu, cuda, cuda:N, mps, xpu "
                         f"(or another of torch's types: {', '.join(TORCH_DEVICE_TYPES)})") from None
