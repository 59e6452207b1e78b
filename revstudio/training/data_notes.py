"""What a run's start says of its inputs: 8-bit pixels scaled or kept, arrays no run reads, steps scored.

Part of the data code that ``revstudio export --with-training`` copies verbatim into the exported
script (with ``data_checks``, which re-exports these names): stdlib and torch only, torch imported
inside functions.
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from .mapped import Mapped

# ---- the words of labels per position -------------------------------------------------------------

def position_unit(rank: int) -> str:
    """What one labelled position is called for labels of ``rank`` axes a sample: a step (N x T labels of a
    sequence), a pixel (N x H x W, an image), a voxel (N x D x H x W, a volume) or, beyond, a position."""
    return "step" if rank <= 1 else "pixel" if rank == 2 else "voxel" if rank == 3 else "position"


def axes_form(positions: Sequence[int]) -> str:
    """The axes of labels a sample as the messages write them: "T", "H x W", "D x H x W", or the sizes
    themselves ("2x3x4x5") for more axes."""
    forms = {1: "T", 2: "H x W", 3: "D x H x W"}
    return forms.get(len(positions)) or "x".join(map(str, positions))


# ---- 8-bit inputs ------------------------------------------------------------------------------

def scale_bytes(inputs: dict[str, Any], scale: bool) -> tuple[dict[str, Any], list[str]]:
    """``(inputs, the names of those that are uint8)``: with ``scale`` each uint8 array becomes float32
    ``k / 255`` in [0, 1], as ``mnist:`` / ``cifar10:`` read their pixels (and torchvision's ToTensor
    gives); without it they stay 0..255. Every other number type (int8, int16, float, bool) stays as
    it is: only unsigned bytes say "pixels" plainly enough. Targets never come here."""
    import torch

    out: dict[str, Any] = {}
    found: list[str] = []
    for node, t in inputs.items():
        if isinstance(t, (torch.Tensor, Mapped)) and t.dtype == torch.uint8:
            found.append(node)
            if scale:  # (a mapped array: each batch as it is read)
                t = t.scaled() if isinstance(t, Mapped) else t.to(torch.float32).div_(255.0)
        out[node] = t
    return out, found


def looks_like_pixels(t: Any) -> bool:
    """Whether an input that stays as it is (not uint8) holds what 8-bit pixels saved in another number
    type look like: whole numbers from 0 with a largest value from 128 to 255. Such values reach the
    network 255 times larger than the same images from mnist:, cifar10: or a uint8 array."""
    import torch

    if not isinstance(t, (torch.Tensor, Mapped)) or t.dtype in (torch.uint8, torch.bool, torch.int8) \
            or t.is_complex() or math.prod(t.shape) == 0:
        return False
    if isinstance(t, Mapped):  # (a chunk at a time: the same answer, bounded memory)
        seen = PixelScan()
        for _, part in t.chunks():
            if not seen.add(part):  # (no later chunk can make it pixels: stop reading)
                break
        return seen.answer()
    high = t.max()
    if not 128 <= float(high) <= 255:
        return False
    return float(t.min()) >= 0 and (not t.is_floating_point() or bool((t == t.round()).all()))


class PixelScan:
    """:func:`looks_like_pixels` of a mapped array fed its chunks (as the file holds them) one by one."""

    def __init__(self) -> None:
        self.most, self.least, self.whole, self.nan = -math.inf, math.inf, True, False

    def add(self, part: Any) -> bool:
        """Take in a chunk; False once no later chunk can make the array pixels (and it is not read)."""
        if self.nan or self.most > 255 or self.least < 0 or not self.whole:
            return False
        if not len(part):
            return True
        top = float(part.max())
        if math.isnan(top):  # as t.max() of the whole is
            self.nan = True
            return False
        self.most, self.least = max(self.most, top), min(self.least, float(part.min()))
        self.whole = self.whole and (not part.is_floating_point() or bool((part == part.round()).all()))
        return not (self.most > 255 or self.least < 0 or not self.whole)

    def answer(self) -> bool:
        return not self.nan and 128 <= self.most <= 255 and self.least >= 0 and self.whole


def unread_arrays(arrays: dict[str, Any], inputs: dict[str, Any]) -> list[str]:
    """The arrays of a .npz / .pt that a run does not read: neither an Input's (``inputs``, by
    identity: ``x`` or the node ids) nor the targets ``y``. Said at the start (``inputs_note``)."""
    return [n for n in sorted(arrays) if n != "y" and not any(arrays[n] is v for v in inputs.values())]


# Names of arrays that look like the lengths or masks of padded sequences, which no run reads.
_PADDING = ("len", "mask", "pad", "valid")


def padding_like(names: Sequence[str]) -> bool:
    """Whether an unread array's name speaks of a padded sequence's lengths or mask (``_PADDING``)."""
    return any(key in n.lower() for n in names for key in _PADDING)


def _unread_words(unread: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    parts = []
    for source, names in unread:
        if not names:
            continue
        listed = ", ".join(repr(n) for n in names)
        words = (f"data: {source} has {'an array' if len(names) == 1 else 'arrays'} {listed} that the run does "
                 "not read (it reads the inputs 'x', or one array per Input node id, and the targets 'y')")
        if padding_like(names):
            words += ("; sequence lengths and masks ('lengths', 'mask') are read for class labels per step only "
                      "(N x T labels for a C x T Output; a 'mask' also for N x H x W labels per pixel): here every sample is fed whole, padded steps included, "
                      "and scored whole (a BiRNN runs over them in both directions, and a Pool averages them), so crop "
                      "or bucket the sequences to one length, or train with the padding as part of the data")
        parts.append(words)
    return parts


def scored_words(facts: Sequence[dict[str, Any]]) -> list[str]:
    """The start's words on per-step or per-pixel labels (``steps.per_step_targets``' facts, one a file): how
    many steps (pixels) are scored, what marked the others, and that those are still fed to the network."""
    parts = []
    for f in facts:
        ignored = f["steps"] - f["scored"]
        how = []
        if f["padding"]:
            how.append(" and ".join(repr(n) for n in f["padding"]))
        if f["ignored_labels"]:
            how.append("labels of -100")
        marked = f" ({' and '.join(how)} mark the rest)" if how and ignored else ""
        word = f.get("unit", "step")  # (position_unit: a class per step, pixel, voxel or position)
        words = (f"labels: {os.path.basename(f['source'])}: a class per {word}; loss and accuracy count the "
                 f"{f['scored']} scored {word}s of {f['steps']}{marked}")
        if ignored and word == "step":
            words += ("; padded steps are still fed to the network (a BiRNN's backward direction reads them, a "
                      "Pool averages them): only the loss leaves them out")
        elif ignored:
            words += (f"; the {word}s not scored are still fed to the network (a Conv reads them into their "
                      "neighbours): only the loss leaves them out")
        parts.append(words)
    return parts


def inputs_note(uint8: list[str], scaled: bool, pixels: list[tuple[str, str]], count: int,
                unread: Sequence[tuple[str, Sequence[str]]] = (), scored: Sequence[dict[str, Any]] = ()) -> str | None:
    """The start's words on 8-bit inputs (``scale_bytes``, ``looks_like_pixels``), or None: uint8 inputs
    scaled or kept raw, and 0..255 whole numbers in another type, which stay as they are. ``count``:
    how many Input nodes (one is called ``x``). ``unread``: ``(file name, array names)`` of arrays a
    .npz / .pt holds that no run reads (``unread_arrays``), named so that none is ignored silently.
    ``scored``: per-step labels' facts (``steps.per_step_targets``), said by :func:`scored_words`."""
    def name(node: str) -> str:
        return "x" if count == 1 else node

    parts = []
    if uint8 and scaled:
        parts.append(f"inputs: uint8 scaled to [0, 1] ({', '.join(map(name, uint8))}: k / 255, as mnist: and "
                     "cifar10: read pixels); --no-scale-uint8 keeps them raw 0..255")
    elif uint8:
        parts.append(f"inputs: uint8 kept raw 0..255 ({', '.join(map(name, uint8))}; scale_uint8 false)")
    for node, dtype in pixels:
        parts.append(f"inputs: {name(node)!r} holds whole numbers 0..255 as {dtype}, which stay as they are (only "
                     "uint8 arrays are scaled to [0, 1]); if they are 8-bit pixels, save them as uint8 or divide "
                     "them by 255")
    parts += _unread_words(unread)
    parts += scored_words(scored)
    return "; ".join(parts) or None
