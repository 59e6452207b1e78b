"""``revstudio runs --filter WORDS``: the Runs tab's filter rule in the terminal (``training.run_filter``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from revstudio.cli import main
from revstudio.training.run_filter import RunFilter, run_fields


def _run(root: Path, name: str, status: str = "finished", label: str | None = None, **config: object) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "status.json").write_text(json.dumps({"status": status, "step": 3, "started": f"2026-01-01T{name[-2:]}"}),
                                              encoding="utf-8")
    (root / name / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if label is not None:
        (root / name / "label.json").write_text(json.dumps({"label": label}), encoding="utf-8")


def _folder(root: Path) -> None:
    _run(root, "mnist-20260101-000001", data="data/mnist.npz", mode="reversible")
    _run(root, "mnist-20260101-000002", status="failed", label="LR 0.1 try", data="data/mnist.npz", mode="standard")
    _run(root, "cifar-20260101-000003", status="stopped", data="cifar.npz", mode="reversible")
    _run(root, "sweep-run-04", status="failed", data="cifar.npz", mode="checkpoint")


@pytest.mark.parametrize(("words", "names"), [
    ("MNIST", ["mnist-20260101-000001", "mnist-20260101-000002"]),
    ("fail", ["mnist-20260101-000002", "sweep-run-04"]),
    ("cifar fail", ["sweep-run-04"]),  # (every word: data of one, status of the other)
    ("status:failed,stopped", ["mnist-20260101-000002", "cifar-20260101-000003", "sweep-run-04"]),
    ("project:cifar", ["cifar-20260101-000003"]),  # (not sweep-run-04, whose data is cifar's)
    ("label:lr", ["mnist-20260101-000002"]),
    ("mode:check", ["sweep-run-04"]),
    ("status:", ["mnist-20260101-000001", "mnist-20260101-000002", "cifar-20260101-000003", "sweep-run-04"]),
    ("nothing-like-it", []),
])
def test_runs_are_listed_by_the_filter_words(tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str,
                                             names: list[str]) -> None:
    _folder(tmp_path)
    assert main(["runs", str(tmp_path), "--filter", words, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in listed["runs"]] == names
    assert main(["runs", str(tmp_path), "--json"]) == 0  # (--json keeps its shape: only fewer runs)
    every = json.loads(capsys.readouterr().out)
    assert set(listed) == set(every) and all(set(r) == set(every["runs"][0]) for r in listed["runs"])


def test_a_filter_that_keeps_nothing_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _folder(tmp_path)
    assert main(["runs", str(tmp_path), "--filter", "status:running"]) == 0
    assert capsys.readouterr().out.strip() == f"{tmp_path}: no runs matching 'status:running'"
    assert main(["runs", str(tmp_path), "--filter", "label:lr", "--status", "failed"]) == 0
    out = capsys.readouterr().out
    assert "mnist-20260101-000002" in out and "sweep-run-04" not in out


def test_the_rule_reads_words_not_the_whole_text() -> None:
    fields = run_fields("Net-20260101-000001", "Wide, lr 0.01", "Running", "d:/x.npz", None)
    assert fields["project"] == "net" and fields["mode"] == ""
    assert RunFilter("  LR   wide ").matches(fields)
    assert not RunFilter("lr narrow").matches(fields)
    assert RunFilter("d:/x").matches(fields)  # (an unknown key: the word as written, colon and all)
    assert not RunFilter("status:finished").matches(fields)
    assert not RunFilter("   ") and RunFilter("status:,").matches(fields)


@pytest.mark.parametrize("words", ["MNIST", "cifar fail", "status:failed,stopped", "label:lr", "status:",
                                   "nothing-like-it"])
def test_rs_runs_filters_by_the_commands_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str], words: str) -> None:
    """``rs.runs`` had no filter: a notebook filtered the dicts by hand, by another rule than the command's."""
    import revstudio as rs

    _folder(tmp_path)
    assert main(["runs", str(tmp_path), "--filter", words, "--json"]) == 0
    expected = [r["name"] for r in json.loads(capsys.readouterr().out)["runs"]]
    assert [r["name"] for r in rs.runs(tmp_path, filter=words)] == expected
    assert [r["name"] for r in rs.runs(tmp_path, filter=words.split())] == expected  # (a list: its words)


def test_rs_runs_filter_goes_with_status_and_sort_and_refuses_what_is_not_text(tmp_path: Path) -> None:
    import revstudio as rs

    _folder(tmp_path)
    listed = rs.runs(tmp_path, filter="reversible", status=["finished", "stopped"], sort="started", reverse=True)
    assert [r["name"] for r in listed] == ["cifar-20260101-000003", "mnist-20260101-000001"]
    assert len(rs.runs(tmp_path, filter=None)) == len(rs.runs(tmp_path, filter="  ")) == 4
    with pytest.raises(TypeError, match=r"rs.runs: filter=3: give the words as text .* `revstudio runs --filter WORDS`"):
        rs.runs(tmp_path, filter=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"filter=\['lr', None\]"):
        rs.runs(tmp_path, filter=["lr", None])  # type: ignore[list-item]
