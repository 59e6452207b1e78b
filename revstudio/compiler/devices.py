"""Whether this machine can use a device torch names: the one check behind ``rs.compile``'s ``device``,
``revstudio train``/``memory``/``gradcheck``'s ``--device`` and ``training.device``.

The names are checked without torch by ``device_probe.device_name`` (any of torch's device types, with
an index: ``cpu``, ``cuda:1``, ``mps``, ``xpu:0``); here torch says whether this machine has one. Each
caller words the refusal for its user (``device='cpu'``); the commands all word it by :func:`flag_refusal`
(``--device mps: ...; use --device cpu``), ``train``/``evaluate`` as ``memory``/``gradcheck`` do.
"""
from __future__ import annotations

from typing import Any

import torch


class DeviceUnavailable(ValueError):
    """A device torch knows that this machine cannot use; ``str()`` says why (no "use ..." advice:
    the caller adds its own). ``index``: the device exists, not with that index."""

    def __init__(self, why: str, index: bool = False) -> None:
        super().__init__(why)
        self.index = index


def flag_refusal(name: Any, exc: ValueError | RuntimeError) -> str:
    """The commands' words for a ``--device`` (or ``training.device``) this machine cannot use
    (``exc`` a DeviceUnavailable) or torch does not know (another error): one wording for them all."""
    if isinstance(exc, DeviceUnavailable):
        return f"--device {name}: {exc}; " + ("pick one of those" if exc.index else "use --device cpu")
    return f"--device {name!r} is not a device torch knows; use cpu, cuda, cuda:N or mps"


_NAMES = {"cuda": "CUDA", "mps": "MPS (Apple GPU)", "xpu": "XPU (Intel GPU)", "hpu": "HPU", "mtia": "MTIA"}


def _unavailable_why(kind: str) -> str:
    if kind == "cuda":
        return "this torch build has no CUDA support" if torch.version.cuda is None else "no GPU is visible"
    if kind == "mps":
        built = getattr(getattr(torch.backends, "mps", None), "is_built", lambda: False)()
        return "this machine has no Apple GPU (or its macOS is too old)" if built else \
            "this torch build has no MPS support (it is built for macOS on Apple silicon)"
    return f"this torch build or machine has no {kind} device"


def usable_device(name: Any, local_rank: int | None = None) -> torch.device:
    """``name`` (None or "auto": CUDA when there is one, else the CPU; a name torch takes; a
    ``torch.device``) as a device this machine has. ``local_rank``: what a bare ``cuda`` becomes
    (under torchrun this rank's GPU; None keeps it bare). Raises DeviceUnavailable saying why it has none."""
    if name is None or (isinstance(name, str) and name == "auto"):
        name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(name)
    kind = device.type
    if kind in ("cpu", "meta"):
        return device
    module = getattr(torch, kind, None)
    available = getattr(module, "is_available", None)
    count_of = getattr(module, "device_count", None)
    label = _NAMES.get(kind, kind)
    if callable(available):
        if not available():
            raise DeviceUnavailable(f"{label} is not available ({_unavailable_why(kind)})")
        count = int(count_of()) if callable(count_of) else 1
        if kind == "cuda" and device.index is None and local_rank is not None:
            device = torch.device("cuda", local_rank)
        if device.index is not None and device.index >= count:
            raise DeviceUnavailable(f"there {'is' if count == 1 else 'are'} only {count} {label} "
                                    f"device{'s' * (count != 1)} ({kind}:0..{kind}:{count - 1})", index=True)
        return device
    try:  # a type without a torch.<type> module to ask: a tensor on it is the test
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError, NotImplementedError):
        raise DeviceUnavailable(f"{label} is not available ({_unavailable_why(kind)})") from None
    return device
