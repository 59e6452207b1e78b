"""One rule for what labels mean: a run (its labels read whole and mapped), ``revstudio check --json``'s task and
the Run Settings preview's task hint read the same table of (Output, label shape, number type) alike: the same
task, and the same refusal in the same words. Before, check and the preview had a rule of their own and said
"classification per step" for labels the run refused."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from revstudio import cli
from revstudio.core.generate import flat_classifier, segmenter, sequence_tagger
from revstudio.core.graph import Graph
from revstudio.core.project_write import save
from revstudio.diagnostics.check import full_check
from revstudio.qt.training.section import task_text
from revstudio.training import mapped
from revstudio.training.data import DataError, load_data, peek_data
from revstudio.training.label_fit import label_fit
from revstudio.training.task import infer_task

N, F, T, C, H, W = 16, 4, 10, 3, 6, 5
ints = np.random.default_rng(0).integers


def _same() -> Graph:  # a Linear back to the input's own size: the graph alone reads it as regression
    return flat_classifier([3], classes=3, name="same")


GRAPHS = {"vector": lambda: flat_classifier([F], classes=10), "same": _same,
          "tagger": lambda: sequence_tagger(F, T, classes=C), "segmenter": lambda: segmenter(1, H, W, classes=C)}

# (graph, task asked for, labels, what every reader says: (task, a class per position) or a refusal's words)
CASES: list[tuple[str, str, Any, Any]] = [
    ("vector", "auto", ints(0, 10, N), ("classification", False)),
    ("vector", "auto", ints(0, 10, (N, 1)), ("classification", False)),
    ("vector", "classification", ints(0, 10, N).astype(np.uint8), ("classification", False)),
    ("vector", "auto", ints(0, 2, N).astype(bool), "has dtype bool; expected int64 class indices"),
    ("vector", "auto", np.zeros((N, 2), np.int64), "has targets of shape 2; classification needs one class index"),
    ("vector", "auto", np.zeros((N, 3), np.float32), "holds real values of shape 3; classification needs one int64"),
    ("vector", "regression", ints(0, 10, N), "has targets of shape a scalar, Output 'y' reads 10"),
    ("vector", "regression", np.zeros((N, 10), bool), "has dtype bool; regression needs float targets"),
    ("vector", "auto", np.zeros((N, 10), bool), "values"),  # (one-hot rows or not: their values tell)
    ("vector", "classification", np.zeros((N, 10), np.float32), "values"),
    ("same", "auto", ints(0, 3, N), ("classification", False)),
    ("same", "auto", np.zeros((N, 3), np.float32), "values"),
    ("same", "auto", np.zeros((N, 2), np.float32), "has targets of shape 2, Output 'y' reads 3"),
    ("same", "regression", np.zeros((N, 3), np.float64), ("regression", False)),
    ("tagger", "auto", ints(0, C, (N, T)), ("classification", True)),
    ("tagger", "auto", ints(0, C, (N, T)).astype(np.uint8), ("classification", True)),
    ("tagger", "auto", np.zeros((N, C, T), np.float32), ("regression", False)),
    ("tagger", "auto", np.zeros((N, C, T), np.int64), ("regression", False)),
    ("tagger", "auto", np.zeros((N, C * T), np.float32), ("regression", False)),
    ("tagger", "auto", np.zeros((N, T), np.float32), "has targets of shape 10, Output 'tags' reads 3x10"),
    ("tagger", "auto", ints(0, C, (N, T + 1)), "holds 11 labels a sample: Output 'tags' (port 'tags.in') reads 3x10"),
    ("tagger", "auto", ints(0, C, (N, T)).astype(bool), "has dtype bool; regression needs float targets"),
    ("tagger", "auto", ints(0, C, N), "has targets of shape a scalar, Output 'tags' reads 3x10"),
    ("tagger", "classification", ints(0, C, (N, T)), ("classification", True)),
    ("tagger", "classification", np.zeros((N, T), np.float32), "values"),  # (whole numbers are classes)
    ("tagger", "classification", ints(0, C, (N, T)).astype(bool), "has dtype bool; per-step labels are int64"),
    ("tagger", "classification", np.zeros((N, C, T), np.float32), "holds 3x10 a sample, Output 'tags' (port 'tags.in') "
                                                                 "reads 3x10 scores (classes x steps)"),
    ("tagger", "classification", ints(0, C, N), "holds one label a sample, Output 'tags'"),
    ("tagger", "regression", ints(0, C, (N, T)), "has targets of shape 10, Output 'tags' reads 3x10"),
    ("segmenter", "auto", ints(0, C, (N, H, W)), ("classification", True)),
    ("segmenter", "auto", ints(0, C, (N, W, H)), "holds 5x6 labels a sample: Output 'seg' (port 'seg.in') reads 3x6x5"),
    ("segmenter", "auto", ints(0, C, (N, H, W)).astype(np.int8), ("classification", True)),
    ("segmenter", "regression", ints(0, C, (N, H, W)), "holds a class index per position (6x5 whole numbers a "
                                                        "sample), Output 'seg' reads 3x6x5"),
    ("segmenter", "auto", np.zeros((N, C, H, W), np.float32), ("regression", False)),
]


def _project(folder: Path, graph: str, task: str, y: np.ndarray) -> tuple[Graph, Any, Path]:
    g = GRAPHS[graph]()
    g.set_training({"version": 1, "data": "d.npz", "batch_size": 4, "seed": 1, "task": task})
    report = full_check(g, batch=4)
    x = np.zeros((N, *report.shape(f"{next(n.id for n in g if n.type == 'Input')}.out")), np.float32)
    np.savez(folder / "d.npz", x=x, y=y)
    save(g, folder / "p.revs")
    return g, report, folder / "p.revs"


def _run(g: Graph, report: Any, data: Path, task: str) -> Any:
    """(task, per position) of the run, or its refusal's words after the file's name."""
    try:
        bundle = load_data(str(data), g, report, task=infer_task(g, report, task))
    except DataError as exc:
        assert str(exc).startswith(f"{data}: "), exc
        return str(exc)[len(f"{data}: "):]
    return bundle.task.kind, bundle.task.per_step


def _check(path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    assert cli.main(["check", str(path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["task"]
    if "error" in got:
        assert got["error"].startswith("d.npz: ") and got["labels"]["source"] == "d.npz", got
        return got["error"][len("d.npz: "):]
    return got


def _preview(g: Graph, report: Any, task: str, folder: Path) -> str:
    return task_text(g, report, task, peek_data("d.npz", str(folder)), "d.npz")


def _kind(text: str, task: str) -> tuple[str, bool]:
    said = text.removeprefix(f"{task}: ")
    return ("classification", said.startswith("classification per ")) if said.startswith("classification") \
        else (said.split(" ", 1)[0], False)


@pytest.mark.parametrize("case", CASES, ids=[f"{g}-{t}-{'x'.join(map(str, y.shape))}-{y.dtype}"
                                            for g, t, y, _ in CASES])
def test_the_run_check_and_the_preview_read_the_labels_alike(tmp_path, monkeypatch, capsys, case) -> None:
    graph, task, y, expected = case
    g, report, path = _project(tmp_path, graph, task, y)
    data = tmp_path / "d.npz"
    whole = _run(g, report, data, task)
    monkeypatch.setattr(mapped, "MAP_ABOVE", 0)  # (large files are mapped, read a chunk at a time)
    monkeypatch.setattr(mapped, "CHUNK_BYTES", 100)
    assert _run(g, report, data, task) == whole
    check, preview = _check(path, capsys), _preview(g, report, task, tmp_path)
    if expected == "values":  # the header cannot tell: check and the preview keep the guess and refuse nothing
        assert isinstance(check, dict) and "labels" not in check and "refused" not in preview, (check, preview)
        return
    if isinstance(expected, str):  # one refusal, in the same words everywhere
        assert isinstance(whole, str) and expected in whole, whole
        assert check == whole and preview == f"{task}: refused: d.npz: {whole}", (check, preview)
        return
    assert whole == expected
    assert check["kind"] == expected[0] and "error" not in check, check
    assert _kind(preview, task) == expected, preview
    if task == "auto" and "labels" in check:  # (where the labels decided, both say why in the same words)
        assert preview.endswith(check["why"].split("; under auto the labels decide")[0]), (preview, check["why"])


def test_the_table_holds_every_way_a_label_array_is_read() -> None:
    # every outcome of the one rule is in the table: a task, a class per position, a refusal, values to tell
    fits = []
    for graph, task, y, _ in CASES:
        g = GRAPHS[graph]()
        report = full_check(g, batch=4)
        info = infer_task(g, report, task)
        fits.append(label_fit(info.kind, info.output_shape, y.shape[1:], str(y.dtype), auto=task == "auto",
                              output_id=info.output_id, head=info.head_id))
    assert {(f.kind, f.per_position, f.problem is None, f.decided) for f in fits} == {
        ("classification", False, True, True), ("classification", True, True, True), ("regression", False, True, True),
        ("classification", False, False, True), ("classification", True, False, True),
        ("regression", False, False, True), ("regression", False, True, False), ("classification", True, True, False),
        ("classification", False, False, False)}
