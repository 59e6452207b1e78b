"""What ``revstudio evaluate`` counts over the batches: the task's loss per sample (``parts.Loss.per_sample``,
the loss training reads), and for a classification the confusion matrix of the scored positions (-100,
``lengths`` and ``mask`` left out, as training leaves them out), for a regression the absolute errors too.
:meth:`Tally.result` turns the sums into the figures of the evaluation's JSON object.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from .parts import Loss


class Tally:
    """The running sums of one evaluation; :meth:`add` a batch, :meth:`result` at the end."""

    def __init__(self, loss: Loss, classes: int | None) -> None:
        self.loss = loss
        self.classes = classes if loss.kind == "classification" else None
        c = self.classes or 0
        self.confusion = torch.zeros(c * c, dtype=torch.int64)
        self.sample_loss: list[torch.Tensor] = []   # each sample's summed loss
        self.sample_count: list[torch.Tensor] = []  # the predictions it sums (scored steps of a per-step sample)
        self.sample_hits: list[torch.Tensor] = []   # classification: its right predictions
        self.labels: list[torch.Tensor] = []        # one class a sample: its label and prediction
        self.predicted: list[torch.Tensor] = []
        self.abs_error = 0.0                        # regression: summed |output - target| and its element count
        self.elements = 0

    def add(self, output: torch.Tensor, targets: torch.Tensor | None, logdet: torch.Tensor | None) -> None:
        losses, counts = self.loss.per_sample(output, targets, logdet)
        self.sample_loss.append(losses.cpu())
        self.sample_count.append(counts.cpu())
        n = output.shape[0]
        if self.classes:
            assert targets is not None
            pred = output.detach().float().argmax(dim=1)
            scored = targets != -100
            hits = ((pred == targets) & scored).reshape(n, -1).sum(dim=1)
            self.sample_hits.append(hits.cpu())
            cells = targets[scored] * self.classes + pred[scored]
            self.confusion += torch.bincount(cells.cpu(), minlength=self.classes ** 2)
            if targets.dim() == 1:
                self.labels.append(targets.cpu())
                self.predicted.append(pred.cpu())
        elif self.loss.kind == "regression":
            assert targets is not None
            out = output.detach().float()
            target = targets.to(out.dtype)
            if target.shape != out.shape and target.numel() == out.numel():
                target = target.view_as(out)
            self.abs_error += float((out - target).abs().double().sum())
            self.elements += out.numel()

    def result(self, worst: int) -> dict[str, Any]:
        """The figures: ``loss`` and what the task adds (see docs/cli.md, ``revstudio evaluate --json``)."""
        losses = torch.cat(self.sample_loss) if self.sample_loss else torch.zeros(0, dtype=torch.float64)
        counts = torch.cat(self.sample_count) if self.sample_count else torch.zeros(0, dtype=torch.float64)
        total = float(counts.sum())
        out: dict[str, Any] = {"loss": _num(float(losses.sum()) / total) if total else None}
        per = torch.where(counts > 0, losses / counts.clamp(min=1), torch.zeros_like(losses))
        order = sorted(range(len(per)), key=lambda i: (-_rank(float(per[i])), i))[:max(0, worst)]
        if self.classes:
            c = self.classes
            matrix = self.confusion.reshape(c, c)
            right = int(matrix.diag().sum())
            scored = int(matrix.sum())
            support = matrix.sum(dim=1)
            out.update({
                "accuracy": right / scored if scored else None, "correct": right, "scored": scored,
                "classes": c, "class_counts": [int(v) for v in support],
                "class_accuracy": [int(matrix[k, k]) / int(support[k]) if int(support[k]) else None
                                   for k in range(c)],
                "confusion": [[int(v) for v in row] for row in matrix]})
            hits = torch.cat(self.sample_hits)
            if self.labels:
                labels, predicted = torch.cat(self.labels), torch.cat(self.predicted)
                out["worst"] = [{"index": i, "label": int(labels[i]), "prediction": int(predicted[i]),
                                 "loss": _num(float(per[i]))} for i in order]
            else:  # (a class per step or pixel: the sample's mean over its scored positions)
                out["worst"] = [{"index": i, "loss": _num(float(per[i])), "scored": int(counts[i]),
                                 "accuracy": int(hits[i]) / int(counts[i]) if int(counts[i]) else None}
                                for i in order]
        elif self.loss.kind == "regression":
            out.update({"mse": out["loss"], "mae": _num(self.abs_error / self.elements) if self.elements else None})
            out["worst"] = [{"index": i, "loss": _num(float(per[i]))} for i in order]
        else:
            out["bits_per_dim"] = out["loss"]
            out["worst"] = [{"index": i, "loss": _num(float(per[i]))} for i in order]
        return out


def _rank(value: float) -> float:
    """A sample's loss as the worst-first order reads it: NaN (a broken prediction) worst of all."""
    return math.inf if math.isnan(value) else value


def _num(value: float) -> float | None:
    """A figure for JSON: a non-finite one is None (the JSON carries no NaN)."""
    return value if math.isfinite(value) else None


def top_confusions(confusion: list[list[int]], count: int = 10) -> list[tuple[int, int, int]]:
    """The ``count`` largest off-diagonal cells as (true class, predicted class, samples), largest first."""
    cells = [(n, t, p) for t, row in enumerate(confusion) for p, n in enumerate(row) if t != p and n]
    cells.sort(key=lambda c: (-c[0], c[1], c[2]))
    return [(t, p, n) for n, t, p in cells[:count]]
