"""``revstudio runs`` over many runs: the short-run note said once, --status and --sort, the duration column."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from revstudio.cli import main
from revstudio.training.learning import unchecked_note, unchecked_why


def _run(root: Path, name: str, **status: object) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "status.json").write_text(json.dumps({"status": "finished", **status}), encoding="utf-8")


def test_the_short_run_note_is_said_once_under_many_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each of 12 short runs printed its own 5-line-wide note under the table, drowning it."""
    for i in range(12):
        _run(tmp_path, f"r{i:02d}", step=i + 1, total_steps=i + 1, started=f"2026-01-01T00:{i:02d}:00+00:00",
             ended=f"2026-01-01T00:{i:02d}:30+00:00", message=f"note: {unchecked_note(i + 1)}")
    _run(tmp_path, "zfail", status="failed", started="2026-01-02T00:00:00+00:00", message="the data file is gone")
    assert main(["runs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("it looks after one epoch") == 1 and unchecked_why() in out
    assert out.count("not checked") == 12 + 1  # (the learning column, and the explanation once)
    assert "zfail: the data file is gone" in out  # (other messages stay, one per run)
    lines = out.splitlines()
    assert lines[0].split() == ["run", "status", "step", "duration", "learning", "metrics"]
    assert lines[1].split()[:4] == ["r00", "finished", "1/1", "30"]
    assert main(["runs", str(tmp_path), "--json"]) == 0  # --json: each run's message, as it was
    listed = json.loads(capsys.readouterr().out)["runs"]
    assert [r["message"] for r in listed[:12]] == [f"note: {unchecked_note(i + 1)}" for i in range(12)]


def _many(root: Path) -> None:
    _run(root, "a", started="2026-01-01T00:00:00+00:00", ended="2026-01-01T01:00:00+00:00", step=10,
         metrics={"loss": 0.5, "val_accuracy": 0.9})
    _run(root, "b", status="stopped", started="2026-01-02T00:00:00+00:00", ended="2026-01-02T00:10:00+00:00",
         step=30, metrics={"loss": 0.2, "accuracy": 0.5})
    _run(root, "c", status="failed", started="2026-01-03T00:00:00+00:00", ended="2026-01-03T00:00:05+00:00",
         step=2, metrics={"loss": 2.0})
    _run(root, "d", started="2026-01-04T00:00:00+00:00", step=20)  # (no loss, no end)


@pytest.mark.parametrize(("flags", "names"), [
    ([], ["a", "b", "c", "d"]),
    (["--sort", "loss"], ["b", "a", "c", "d"]),
    (["--sort=-loss"], ["c", "a", "b", "d"]),
    (["--sort", "-loss"], ["c", "a", "b", "d"]),
    (["--sort", "loss", "--reverse"], ["c", "a", "b", "d"]),
    (["--sort", "step", "--reverse"], ["b", "d", "a", "c"]),
    (["--sort", "accuracy"], ["b", "a", "c", "d"]),  # (val acc where a run has it, else the training one)
    (["--sort=-duration"], ["a", "b", "c", "d"]),
    (["--sort", "started", "--reverse"], ["d", "c", "b", "a"]),
    (["--status", "finished,stopped"], ["a", "b", "d"]),
    (["--status", "FAILED", "--sort", "step"], ["c"]),
    (["--status", "running"], []),
])
def test_runs_are_filtered_by_status_and_sorted_by_a_column(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            flags: list[str], names: list[str]) -> None:
    _many(tmp_path)
    assert main(["runs", str(tmp_path), *flags, "--json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)["runs"]] == names
    assert main(["runs", str(tmp_path), *flags]) == 0
    text = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in text[1:1 + len(names)]] == names if names else "no runs with status" in text[0]


@pytest.mark.parametrize(("flags", "named"), [
    (["--status", "done"], "'done'"), (["--status", ","], "no status given"), (["--sort", "speed"], "'speed'"),
])
def test_a_wrong_status_or_sort_key_is_refused_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         flags: list[str], named: str) -> None:
    _many(tmp_path)
    assert main(["runs", str(tmp_path), *flags]) == 2
    err = capsys.readouterr().err
    assert named in err and "give one" in err and "Traceback" not in err


def test_a_project_with_no_runs_yet_is_not_called_a_missing_folder(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`revstudio runs model.revs` before any training said "no such folder of runs" of a file that is there."""
    project = tmp_path / "model.revs"
    project.write_text("{}", encoding="utf-8")
    assert main(["runs", str(project)]) == 2
    err = capsys.readouterr().err
    assert "no such folder" not in err
    assert f"model.revs: no runs of this project yet (looked in {tmp_path / 'runs'})" in err
    assert f"train it with 'revstudio train {project}' first" in err
    _run(tmp_path / "runs", "model-20260101-000000", step=3, total_steps=3)  # trained: its runs are listed
    assert main(["runs", str(project)]) == 0
    assert "model-20260101-000000" in capsys.readouterr().out


@pytest.mark.parametrize(("flags", "words"), [
    (["--sort", "foo"], "revstudio: --sort 'foo': unknown key; give one of started, step, loss"),
    (["--status", "done"], "revstudio: --status 'done': unknown status 'done'; give one or more of running"),
])
def test_a_bad_key_is_refused_before_a_missing_folder(tmp_path, monkeypatch, capsys, flags, words):
    # with no ./runs, "runs --sort foo" said the folder was missing: the user fixed that, then met the bad key
    monkeypatch.chdir(tmp_path)
    for dirs in ([], ["nowhere"]):
        assert main(["runs", *dirs, *flags]) == 2
        err = capsys.readouterr().err
        assert err.startswith(words) and err.count("\n") == 1, err
