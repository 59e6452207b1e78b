"""What ``train`` and ``runs`` print for a terminal: paths, names and messages come from the
user's files and folders, so a control sequence in them is shown as an escape, never acted on
(as ``check`` and the other commands do)."""
from __future__ import annotations

import json

from training_kit import EXAMPLES

from revstudio import cli

EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))
CLEAR = "\x1b[2J"


def test_train_shows_a_control_sequence_in_its_data_path_as_an_escape(tmp_path, capsys) -> None:
    missing = tmp_path / f"data{CLEAR}.npz"
    code = cli.main(["train", EXAMPLE, "--steps", "1", "--device", "cpu", "--data", str(missing),
                     "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and "\x1b" not in err and "\\x1b[2J" in err


def test_runs_shows_control_sequences_in_names_and_messages_as_escapes(tmp_path, capsys) -> None:
    run = tmp_path / "runs" / f"evil{CLEAR}"
    run.mkdir(parents=True)
    (run / "status.json").write_text(json.dumps({"status": "failed", "step": 1, "message": f"boom{CLEAR}\u202e",
                                                 "metrics": {}}))
    assert cli.main(["runs", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert out.count("evil\\x1b[2J") == 2 and "boom\\x1b[2J\\u202e" in out


def test_train_progress_shows_a_control_sequence_in_its_run_folder_as_an_escape(tmp_path, capsys) -> None:
    code = cli.main(["train", EXAMPLE, "--steps", "1", "--batch-size", "8", "--device", "cpu", "--val-every", "0",
                     "--gradcheck-every", "0", "--memory-every", "0", "--out", str(tmp_path / f"run{CLEAR}")])
    out = capsys.readouterr().out
    assert code == 0 and "\x1b" not in out and "run\\x1b[2J" in out


def test_a_one_step_run_says_step_not_steps(tmp_path, capsys) -> None:
    code = cli.main(["train", EXAMPLE, "--steps", "1", "--batch-size", "8", "--device", "cpu", "--val-every", "0",
                     "--gradcheck-every", "0", "--memory-every", "0", "--out", str(tmp_path / "run")])
    out = capsys.readouterr().out
    assert code == 0 and "1 steps" not in out
    assert ", 1 step (" in out and "finished 1 step in " in out


def test_a_gradient_check_over_the_warning_level_says_so_in_the_text() -> None:
    # the app's plot warns from 1e-4; the terminal printed the bare figures, 1.1e+14 as calmly as 2e-08
    import io
    import math

    from revstudio.training.output import Progress

    out = io.StringIO()
    progress = Progress(out)
    good = {"region": "r0", "grad_rel_error": 2e-8, "inversion_error": 0.0}
    progress.on_gradcheck({"step": 10, "regions": [good], "max_grad_rel_error": 2e-8, "max_inversion_error": 0.0})
    progress.on_gradcheck({"step": 20, "regions": [good, {"region": "r1", "grad_rel_error": 1.1e14,
                                                          "inversion_error": 5e16}],
                           "max_grad_rel_error": 1.1e14, "max_inversion_error": 5e16})
    progress.on_gradcheck({"step": 30, "regions": [{"region": "r0", "grad_rel_error": math.inf,
                                                    "inversion_error": math.nan}],
                           "max_grad_rel_error": math.inf, "max_inversion_error": math.inf})
    first, second, third = out.getvalue().splitlines()
    assert "OFF" not in first
    assert "OFF in region r1 (over 0.0001)" in second and "--mode checkpoint" in second
    assert "OFF in region r0" in third


def test_a_stopped_run_says_where_its_checkpoint_is_and_how_to_continue() -> None:
    # Ctrl+C printed "stopped at step 70; checkpoint checkpoints/last.pt": a path that is not under the
    # folder the user is in, and no word of --resume, which the status file alone mentioned
    import io
    import shlex

    from revstudio.training.output import Progress

    out = io.StringIO()
    progress = Progress(out)
    run_dir = "/tmp/my runs/r ü"
    progress.on_train_start({"total_steps": 300, "batch_size": 32, "run_dir": run_dir})
    progress.on_event({"event": "stopped", "step": 70, "checkpoint": "checkpoints/last.pt"})
    last = out.getvalue().splitlines()[-1]
    assert last == (f"stopped at step 70; checkpoint {run_dir}/checkpoints/last.pt; "
                    f"continue it with: revstudio train --resume {shlex.quote(run_dir)}")
    assert shlex.split(last.split("continue it with: ")[1])[-1] == run_dir

    out = io.StringIO()
    progress = Progress(out)  # (stopped before a checkpoint: nothing to continue from)
    progress.on_train_start({"total_steps": 300, "batch_size": 32, "run_dir": run_dir})
    progress.on_event({"event": "stopped", "step": 0, "checkpoint": None})
    assert out.getvalue().splitlines()[-1] == "stopped at step 0"


def test_the_progress_line_is_redrawn_on_a_terminal_only() -> None:
    # docs/cli.md: piped or redirected (a CI log), each step row is a line of its own, no control characters
    import io

    from revstudio.training.output import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    row = {"step": 1, "epoch": 0.1, "loss": 2.0, "samples_per_s": 100.0}
    for stream, redrawn in ((io.StringIO(), False), (Terminal(), True)):
        progress = Progress(stream)
        progress.on_train_start({"total_steps": 2, "batch_size": 8})
        progress.on_step_end(row)
        progress.on_step_end({**row, "step": 2})
        progress.on_event({"event": "finished", "step": 2, "wall_s": 1.0, "metrics": {"loss": 2.0}})
        text = stream.getvalue()
        assert ("\r" in text and "\x1b[K" in text) is redrawn, repr(text)
        if not redrawn:
            assert "\x1b" not in text and [line.split("] ")[-1][:6] for line in text.splitlines()[1:3]] == \
                ["step 1", "step 2"]
