"""What a run's labels ``y`` mean for the Output the loss reads: the one rule a run, ``revstudio check`` and the
Run Settings preview all apply, from the Output's shape, the labels' shape a sample and their number type.

:func:`label_fit` says the task the labels make (classification, a class per step / pixel / voxel, or
regression) or why a run refuses them, naming the Output and what to change. Where only the values can
tell, it says so instead of guessing: N x K rows for K class scores are classes when they are one-hot
(``one_hot``), and real numbers taken as class indices must be whole (``whole``). A run reads the values
after it (the label range, NaN, padding); the header readers (:func:`revstudio.training.task.labels_decide`)
stop there. Part of the data code that ``revstudio export --with-training`` copies verbatim (after
``data_notes``): stdlib only.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from .data_notes import axes_form, position_unit


def _fmt(shape: Any) -> str:
    return "x".join(str(int(s)) for s in shape) if len(shape) else "a scalar"


def number_kind(dtype: str) -> str:
    """"i", "u", "f", "b", "c" or "" for a number type's name as numpy or torch write it ("int64",
    "torch.float32", "uint8", "bool", "<i8", "complex64")."""
    name = str(dtype).replace("torch.", "")
    if len(name) >= 2 and name[0] in "<>|=" and name[1] in "iufbc":  # (numpy's byte-order codes: "<i8", "|b1")
        return name[1]
    for prefix, kind in (("uint", "u"), ("int", "i"), ("float", "f"), ("bfloat", "f"), ("half", "f"),
                         ("double", "f"), ("long", "i"), ("short", "i"), ("bool", "b"), ("complex", "c"),
                         ("cfloat", "c"), ("cdouble", "c")):
        if name.startswith(prefix):
            return kind
    return ""


class LabelFit(NamedTuple):
    """What labels make of an Output (:func:`label_fit`). (A NamedTuple, not a dataclass: the exported
    training script copies this class, and a dataclass there fails where the script is run by ``exec``
    in a namespace no module in ``sys.modules`` names.)"""

    kind: str                   # "classification" | "regression" | "flow": the task the labels make
    per_position: bool = False  # a class per step / pixel / voxel: N x T labels for a C x T Output
    problem: str | None = None  # why a run refuses them ("array 'y' ..."; the file's name goes first)
    one_hot: bool = False       # N x K rows for K class scores: one-hot rows are classes instead, by their values
    whole: str | None = None    # real numbers taken as class indices: the refusal where one is not whole

    @property
    def decided(self) -> bool:
        """Whether the shape and number type alone decide (else only the values can tell)."""
        return not self.one_hot and self.whole is None


def _not_per_sample(held: tuple[int, ...], out_shape: Sequence[int]) -> str:
    """The refusal of labels of shape ``held`` a sample for an Output of a vector of classes, with the
    per-step, per-pixel or per-voxel way to train them."""
    steps = (f"; for a class per step (N x T labels) end the model in C x T scores instead of a vector of "
             f"{_fmt(out_shape)}: a Conv with kernel_size 1 and out_channels C on the sequence (docs/data.md)"
             if len(held) == 1 else
             f"; for a class per {position_unit(len(held))} (N x {_fmt(held)} labels) end the model in C x "
             f"{_fmt(held)} scores instead of a vector of {_fmt(out_shape)}: a Conv with kernel_size 1 and "
             f"out_channels C on the feature map{' (a Reshape to C x ' + _fmt(held) + ' after it)' * (len(held) > 2)}, "
             "no Flatten or Linear (docs/data.md)")
    return (f"array 'y' has targets of shape {_fmt(held)}; classification needs one class index per sample (an "
            f"array of N labels){steps}")


PER_STEP = ("a class per position (N x T labels for a C x T Output, N x H x W for a C x H x W Output, channels "
            "first) is classification per step or per pixel: set task to 'classification' (or 'auto'), and save "
            "the labels as int64 class indices")


def layout_problem(shape: tuple[int, ...], out_shape: tuple[int, ...], output_id: str, head: str) -> str | None:
    """Why labels of ``shape`` a sample (T, or H x W ...) do not fit a channels-first Output of ``out_shape``,
    naming the port and the fix; None when they fit (``shape == out_shape[1:]``)."""
    shape, classes, positions = tuple(shape), out_shape[0], tuple(out_shape[1:])
    if shape == positions:
        return None
    port = f"Output {output_id!r} (port '{output_id}.in')"
    if len(shape) == 1:
        steps, out_steps = shape[0], positions[0]
        if steps == classes:
            return (f"{port} reads {_fmt(out_shape)} per sample and the labels have {steps} steps: the scores are "
                    f"steps x classes, and per-step classification reads them channels first, classes x steps (N x C "
                    f"x T, as a Conv or a BiRNN gives them, the layout torch's CrossEntropyLoss takes); end the model "
                    f"in a Conv with kernel_size 1 and out_channels = the number of classes on the C x {steps} "
                    f"sequence instead of node {head!r}'s layout")
        return (f"{port} reads {_fmt(out_shape)} per sample ({classes} classes x {out_steps} steps) and the labels "
                f"have {steps} steps: per-step labels are N x T for a C x T Output; give the Input {steps} steps or "
                f"save labels of {out_steps} steps")
    word = position_unit(len(shape))
    if shape == tuple(out_shape[:-1]):
        head_on = (f"a Conv with kernel_size 1 and out_channels = the number of classes on the C x {_fmt(shape)} "
                   "feature map" if len(shape) == 2 else "channels-first scores (a Conv with kernel_size 1 and "
                   f"out_channels = classes x {shape[0]}, then a Reshape to C x {_fmt(shape)}, or a Permute of the "
                   "class axis to the front)")
        return (f"{port} reads {_fmt(out_shape)} per sample and the labels are {_fmt(shape)}: the scores are "
                f"{_fmt(shape)} x classes (channels last), and per-{word} classification reads them channels first, "
                f"classes x {_fmt(shape)} (N x C x {axes_form(shape)}, the layout torch's CrossEntropyLoss takes); "
                f"end the model in {head_on} instead of node {head!r}'s layout")
    things = {2: "images", 3: "volumes"}.get(len(shape), "samples")
    return (f"{port} reads {_fmt(out_shape)} per sample ({classes} classes x {_fmt(positions)} {word}s) and the "
            f"labels are {_fmt(shape)}: per-{word} labels are N x {_fmt(positions)} for a C x {_fmt(positions)} "
            f"Output; give the Input {_fmt(shape)} {things} (a fully convolutional model keeps their size) or save "
            f"labels of {_fmt(positions)}")


def label_fit(kind: str, out_shape: Sequence[int], held: Sequence[int], dtype: str, *, auto: bool,
              output_id: str, head: str | None = None) -> LabelFit:
    """What labels of ``held`` a sample (the array's shape without N) and number type ``dtype`` make of a
    run whose graph reads as ``kind`` ("classification", "regression" or "flow": the guess, or the task
    asked for when ``auto`` is False) for Output ``output_id`` of ``out_shape`` fed by node ``head``.

    - a C x T (C x H x W, C x D x H x W ...) Output, C > 1, and labels of one axis fewer: a class per
      position under task classification, and under auto for whole-number types;
    - under auto, N whole numbers for a K-vector (K > 1) are a class a sample, and real values of the
      Output's shape regression targets, whatever the graph's guess;
    - one-hot N x K rows for K class scores are a class a sample (``one_hot``: their values tell);
    - else the guess stands: class indices of N (or N x 1) labels, or regression targets of as many
      values a sample as the Output reads (reshaped to it), and anything else is refused (``problem``).
    """
    out, held = tuple(int(s) for s in out_shape), tuple(int(s) for s in held)
    k, name = number_kind(dtype), str(dtype).replace("torch.", "")
    head = head or output_id
    if kind == "flow":
        return LabelFit("flow")
    if len(out) >= 2 and out[0] >= 2 and len(held) == len(out) - 1 and (
            kind == "classification" or (auto and kind == "regression" and k in ("i", "u"))):
        word = position_unit(len(held))
        problem = layout_problem(held, out, output_id, head)
        if problem is not None:
            return LabelFit("classification", True, f"array 'y' holds {_fmt(held)} labels a sample: {problem}")
        if k in ("b", "c"):
            return LabelFit("classification", True, f"array 'y' has dtype {name}; per-{word} labels are int64 "
                                                    "class indices")
        whole = (f"array 'y' holds real values; per-{word} classification needs int64 class indices (or set task "
                 f"to 'regression' with targets of the Output's shape {_fmt(out)})") if k == "f" else None
        return LabelFit("classification", True, whole=whole)
    if kind == "classification" and len(out) >= 2:
        word = position_unit(len(out) - 1)
        return LabelFit("classification", problem=(
            f"array 'y' holds {_fmt(held) if held else 'one label'} a sample, Output {output_id!r} (port "
            f"'{output_id}.in') reads {_fmt(out)} scores (classes x {word}s): per-{word} classification needs "
            f"labels of N x {_fmt(out[1:])}; for one class a sample end the model in a Pool and a Linear of as many "
            "outputs as classes"))
    vector = len(out) == 1 and out[0] > 1
    one_hot = (kind == "classification" or (auto and kind == "regression")) and vector and held == out and k != "c"
    if kind == "regression" and auto and not held and k in ("i", "u") and vector:
        kind = "classification"  # whole numbers for a K-vector output: class scores
    if kind == "classification" and k == "f":
        if auto and held == out:
            kind = "regression"
        else:
            what = "one real value per sample" if not held else f"real values of shape {_fmt(held)}"
            refusal = (f"array 'y' holds {what}; classification needs one int64 class index per sample (or set "
                       f"task to 'regression' with targets of the output's shape {_fmt(out)})")
            if held in ((), (1,)):
                return LabelFit("classification", one_hot=one_hot, whole=refusal)
            return LabelFit("classification", problem=refusal, one_hot=one_hot)
    if kind == "classification":
        if k in ("b", "c"):
            return LabelFit(kind, problem=f"array 'y' has dtype {name}; expected int64 class indices", one_hot=one_hot)
        if held not in ((), (1,)):
            return LabelFit(kind, problem=_not_per_sample(held, out), one_hot=one_hot)
        return LabelFit(kind, one_hot=one_hot)
    if k in ("b", "c"):
        return LabelFit(kind, problem=f"array 'y' has dtype {name}; regression needs float targets", one_hot=one_hot)
    if held != out:
        if len(out) >= 3 and out[0] > 1 and held == out[1:] and k != "f":
            return LabelFit(kind, problem=f"array 'y' holds a class index per position ({_fmt(held)} whole numbers "
                                          f"a sample), Output {output_id!r} reads {_fmt(out)}: {PER_STEP}")
        if math.prod(held) != math.prod(out):
            return LabelFit(kind, problem=f"array 'y' has targets of shape {_fmt(held)}, Output {output_id!r} reads "
                                          f"{_fmt(out)}", one_hot=one_hot)
    return LabelFit(kind, one_hot=one_hot)
