"""Weights of another model (plain PyTorch, MemCNN, RevLib) loaded into a revstudio model.

``rs.load_weights(model, state_dict, rename=..., by_order=...)``: a model rebuilt in revstudio
names its weights after its node ids (``blocks.blocks.0.coupling.f.f_conv1.weight``), the
original after its attributes (``blocks.0.Fm.conv1.weight``). This maps one onto the other by
rename rules (regular expressions, or a function) and, where asked, by order, checks every key
and shape first, and loads only when all of them fit: a mapping that does not fit loads nothing
and says which keys are left on each side, with the closest names.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

Rename = Mapping[str, str] | Callable[[str], "str | None"] | None

_SHOWN = 6  # keys listed per kind of problem; the rest are counted


class WeightsError(ValueError):
    """The given weights do not fit the model; nothing was loaded."""


def load_weights(model: nn.Module, state_dict: Mapping[str, Any] | str | os.PathLike[str],
                 rename: Rename = None, by_order: bool = False) -> dict[str, str]:
    """Load ``state_dict``, written by another model, into ``model`` (``rs.compile``'s or an
    exported ``Model``); returns the mapping used, ``{model key: given key}``, in the model's order.
    ``state_dict`` may be a file's path: a saved state_dict, or a checkpoint holding one under
    ``state_dict`` or ``model`` (read with ``weights_only=True``).

    ``rename``: ``{pattern: replacement}`` regular expressions applied in turn to each given key
    (``re.sub``, so ``\\1`` refers to a group), or a function from a given key to the model's key
    (None drops the key). ``by_order``: the given keys that no name matches are paired, in order,
    with the model's keys that none matched, each pair of one shape (for two models that declare
    the same layers in the same order). Every model key must get a value and every given key a
    place, with the model's shape; else :class:`WeightsError` names what is left and nothing loads.
    """
    if not isinstance(model, nn.Module):  # (a Graph, a path: an AttributeError on state_dict before)
        raise TypeError(f"rs.load_weights: model must be a torch module (rs.compile(graph) or an exported Model()), "
                        f"got {type(model).__name__}")
    _check_rename(rename)
    given = _tensors(_read(state_dict) if isinstance(state_dict, (str, os.PathLike)) else state_dict)
    target = model.state_dict()
    mapping: dict[str, str] = {}   # model key -> given key
    unplaced: list[str] = []
    seen: dict[str, str] = {}      # renamed key -> given key
    for key in given:
        new = _renamed(key, rename)
        if new is None:
            continue
        if new in seen:
            raise WeightsError(f"the given keys {seen[new]!r} and {key!r} both become {new!r}; "
                               "change the rename rules so each names one weight")
        seen[new] = key
        if new in target:
            mapping[new] = key
        else:
            unplaced.append(key)
    missing = [k for k in target if k not in mapping]
    if by_order and (unplaced or missing):
        _pair_in_order(mapping, unplaced, missing, given, target)
        unplaced, missing = [], []
    problems = _problems(mapping, unplaced, missing, given, target, rename)
    if problems:
        raise WeightsError(problems)
    model.load_state_dict({new: given[old] for new, old in mapping.items()}, strict=True)
    return {k: mapping[k] for k in target if k in mapping}


def _read(path: str | os.PathLike[str]) -> Any:
    """A file's weights, read with ``weights_only=True`` (no pickled code runs): a bare state_dict,
    or a training script's checkpoint holding one under ``state_dict`` or ``model``; a run folder's
    last checkpoint (``runs/NAME``, as ``train --init`` and ``gradcheck --checkpoint`` take it)."""
    if os.path.isdir(path):
        last = os.path.join(path, "checkpoints", "last.pt")
        if not os.path.isfile(last):
            raise WeightsError(f"{os.fspath(path)}: a folder without checkpoints/last.pt; give a run folder "
                               "that saved a checkpoint (runs/NAME), a checkpoint or a state_dict file")
        path = last
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise WeightsError(f"{os.fspath(path)}: no such file") from None
    except Exception as exc:  # not a torch file, cut short, or holding objects weights_only refuses
        first = str(exc).splitlines()[0].split(". ")[0] if str(exc) else type(exc).__name__
        raise WeightsError(f"{os.fspath(path)}: not a file of weights torch can read safely ({first}); "
                           "save them with torch.save(model.state_dict(), path)") from None
    if isinstance(data, Mapping) and not all(isinstance(v, torch.Tensor) for v in data.values()):
        inner = [data[k] for k in ("state_dict", "model") if isinstance(data.get(k), Mapping)]
        if len(inner) == 1:
            return inner[0]
    return data


def _tensors(state_dict: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    if not isinstance(state_dict, Mapping):
        raise WeightsError(f"the weights must be a state_dict (a dict of name -> tensor), got "
                           f"{type(state_dict).__name__}")
    bad = [k for k, v in state_dict.items() if not isinstance(v, torch.Tensor)]
    if bad:
        inner = [k for k in bad if isinstance(state_dict[k], Mapping)]
        hint = (f"; it looks like a checkpoint: pass its state_dict, e.g. checkpoint[{inner[0]!r}]"
                if inner else "")
        raise WeightsError(f"the weights must be a state_dict (a dict of name -> tensor), but "
                           f"{bad[0]!r} holds a {type(state_dict[bad[0]]).__name__}{hint}")
    return {str(k): v for k, v in state_dict.items()}


def _check_rename(rename: Any) -> None:
    """``rename`` is None, a function, or ``{pattern: replacement}`` of strings; a TypeError naming what it is."""
    if rename is None or callable(rename):
        return
    if not isinstance(rename, Mapping):
        raise TypeError(f"rs.load_weights: rename must be {{pattern: replacement}} or a function of a key, "
                        f"got {type(rename).__name__}")
    for pattern, replacement in rename.items():
        if not (isinstance(pattern, str) and isinstance(replacement, str)):
            raise TypeError(f"rs.load_weights: rename rule {pattern!r} -> {replacement!r}: both sides must be "
                            "text (a regular expression and its replacement)")


def _renamed(key: str, rename: Rename) -> str | None:
    if rename is None:
        return key
    if callable(rename):
        new = rename(key)
        if new is not None and not isinstance(new, str):
            raise WeightsError(f"the rename function returned {new!r} for {key!r}; "
                               "return the model's key (a str), or None to drop it")
        return new
    for pattern, replacement in rename.items():
        try:
            key = re.sub(pattern, replacement, key)
        except re.error as exc:
            raise WeightsError(f"rename rule {pattern!r} -> {replacement!r} is not a valid "
                               f"regular expression: {exc}") from None
    return key


def _shape(t: torch.Tensor) -> str:
    return "x".join(str(n) for n in t.shape) or "a scalar"


def _pair_in_order(mapping: dict[str, str], unplaced: list[str], missing: list[str],
                   given: dict[str, torch.Tensor], target: dict[str, Any]) -> None:
    if len(unplaced) != len(missing):
        raise WeightsError(
            f"by_order: {len(unplaced)} given keys match no name but the model has {len(missing)} "
            f"keys left to fill, so they cannot be paired in order"
            + _listing("given keys left", unplaced, given) + _listing("model keys left", missing, target))
    for i, (old, new) in enumerate(zip(unplaced, missing, strict=True)):
        if given[old].shape != target[new].shape:
            raise WeightsError(
                f"by_order: pair {i + 1} of {len(missing)} does not fit: the given {old!r} is "
                f"{_shape(given[old])} but the model's {new!r} is {_shape(target[new])}; the two "
                "models declare their layers in another order: map these keys with rename")
        mapping[new] = old


def _problems(mapping: dict[str, str], unplaced: list[str], missing: list[str],
              given: dict[str, torch.Tensor], target: dict[str, Any], rename: Rename) -> str:
    parts = []
    wrong = [(new, old) for new, old in mapping.items() if given[old].shape != target[new].shape]
    if wrong:
        lines = [f"    {old!r} -> {new!r}: given {_shape(given[old])}, the model has {_shape(target[new])}"
                 for new, old in wrong[:_SHOWN]]
        parts.append(f"{len(wrong)} weights have another shape than the model's:\n" + "\n".join(lines)
                     + _more(len(wrong)))
    if missing:
        parts.append(f"{len(missing)} of the model's {len(target)} keys get no value:"
                     + _listing("", missing, target))
    if unplaced:
        parts.append(f"{len(unplaced)} given keys name nothing in the model"
                     + (" after the rename rules" if rename is not None else "") + ":"
                     + _listing("", unplaced, given))
    if not parts:
        return ""
    advice = ("map the given names to the model's with rename={pattern: replacement} (regular "
              "expressions, e.g. {r'^layers\\.(\\d+)\\.Fm\\.': r'blocks.blocks.\\1.coupling.f.'}), or "
              "pass by_order=True where both models declare the same layers in the same order; "
              "print(model.state_dict().keys()) lists the model's names")
    return "the weights do not fit the model, so nothing was loaded:\n" + "\n".join(parts) + "\n" + advice


def _listing(title: str, keys: list[str], tensors: Mapping[str, Any]) -> str:
    head = f"\n{title}:" if title else ""
    body = "".join(f"\n    {k!r} ({_shape(tensors[k])})" for k in keys[:_SHOWN])
    return head + body + _more(len(keys))


def _more(count: int) -> str:
    return f"\n    ... and {count - _SHOWN} more" if count > _SHOWN else ""
