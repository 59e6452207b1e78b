"""``run_compare``'s reading of run folders: a rewritten step keeps its last row, and runs whose losses agree
where both have steps are told apart from runs that part."""
from __future__ import annotations

import json
from pathlib import Path

from revstudio.training.run_compare import comparison_lines, same_rows
from revstudio.training.runs import read_run


def _run(root: Path, name: str, losses: dict[int, float], lr: float = 0.001) -> Path:
    path = root / name
    path.mkdir()
    (path / "status.json").write_text(json.dumps({"status": "finished"}))
    (path / "config.json").write_text(json.dumps({"version": 1, "lr": lr}))
    rows = [{"kind": "step", "step": s, "loss": v} for s, v in losses.items()]
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"kind": "st')
    return path


def test_a_longer_run_with_the_same_losses_so_far_is_told_from_one_that_parts(tmp_path: Path) -> None:
    short = _run(tmp_path, "short", {1: 2.5, 2: 2.25})
    longer = _run(tmp_path, "longer", {1: 2.5, 2: 2.25, 3: 2.0})
    other = _run(tmp_path, "other", {1: 2.5, 2: 2.2500000000000004}, lr=0.01)
    resumed = _run(tmp_path, "resumed", {1: 2.5, 2: 9.0})
    with (resumed / "metrics.jsonl").open("a") as rows:  # (a resume writes step 2 again: the last row counts)
        rows.write("\n" + json.dumps({"kind": "step", "step": 2, "loss": 2.25}) + "\n")
    runs = [read_run(str(p)) for p in (short, longer, other, resumed)]
    groups = same_rows(runs)
    assert [g.runs for g in groups] == [["short", "resumed"], ["longer"], ["other"]]
    assert groups[1].first_difference == {"step": None, "loss": None, "reference_loss": None, "reference": "short",
                                          "same_steps": 2, "other_steps": 1}
    assert groups[2].first_difference == {"step": 2, "loss": 2.2500000000000004, "reference_loss": 2.25,
                                          "reference": "short"}
    lines = comparison_lines(runs)
    assert lines[:2] == ["what differs between these 4 runs (settings, network and data digests, environment):",
                         "  lr  0.001 (short, longer, resumed); 0.01 (other)"]
    assert lines[3:] == ["  short, resumed: identical (2 rows)",
                         "  longer: the losses of short at the 2 steps both have, 1 step only in one of them",
                         "  other: part from short at step 2 (loss 2.2500000000000004 vs 2.25)"]


def test_rows_of_bytes_that_are_not_text_are_skipped_not_a_crash(tmp_path: Path) -> None:
    """`revstudio runs A B` read a metrics.jsonl holding bytes that are not UTF-8 (a disk error, another
    program's write) as an internal UnicodeDecodeError; the line is skipped as a cut one is, and the rows
    around it still count (read_metrics, which a resume reads, the same)."""
    from revstudio.training.runs import read_metrics

    good = _run(tmp_path, "good", {1: 2.5, 2: 2.25})
    damaged = _run(tmp_path, "damaged", {1: 2.5})
    with (damaged / "metrics.jsonl").open("ab") as rows:
        rows.write(b"\n\xd8\xff\xfe garbage\n" + json.dumps({"kind": "step", "step": 2, "loss": 2.25}).encode() + b"\n")
    groups = same_rows([read_run(str(good)), read_run(str(damaged))])
    assert [g.runs for g in groups] == [["good", "damaged"]]
    assert [r["step"] for r in read_metrics(str(damaged))] == [1, 2]


def test_the_rows_read_as_their_json_says_whoever_wrote_them(tmp_path: Path) -> None:
    # the worker's own rows are read without parsing them; any other spelling is parsed as JSON, a cut line
    # or a half-written row is skipped, and every loss comes out as json.loads reads it (an int stays an int)
    lines = ['{"kind": "event", "event": "started"}', '{"kind": "step", "step": 1, "loss": 2}',
             '{"kind": "step", "step": 2, "epoch": 0.1, "loss": -0.5, "lr": 1e-05}', '{"kind":"step","step":3,"loss":1.5}',
             '{"kind": "step", "step": 4, "loss": NaN, "time": 1}', '{"kind": "step", "step": 5, "loss": null}',
             '{"kind": "step", "step": 6, "accuracy": 0.5}', '{"kind": "step", "step": 7, "loss": 1e-07, "time": 1}',
             '{"kind": "step", "step": 8, "loss": 2.5, "lr": 0.0', '{"kind": "val", "step": 8, "loss": 3.0}',
             '{"kind": "step", "step": 1, "loss": 3.5}', '{"kind": "step", "step": 10, "loss": 2}',
             '{"kind": "step", "step": 9, "loss": 4.5']
    path = tmp_path / "run"
    path.mkdir()
    (path / "metrics.jsonl").write_text("\n".join(lines))
    from revstudio.training.run_compare import loss_rows

    rows = loss_rows(path)
    assert rows is not None
    assert json.dumps(rows) == json.dumps([(1, 3.5), (2, -0.5), (3, 1.5), (4, float("nan")), (5, None), (6, None),
                                           (7, 1e-07), (10, 2)])
    assert isinstance(dict(rows)[3], float) and isinstance(dict(rows)[10], int)
