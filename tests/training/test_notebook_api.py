"""``rs.train``, ``rs.memory`` and ``rs.runs``: a notebook does what ``revstudio train``, ``memory``
and ``runs`` do, in process, by the same code, and gets the same figures back (DESIGN section 3)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from training_kit import EXAMPLES

import revstudio as rs
from revstudio import cli
from revstudio.training.runs import read_metrics, read_run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(next(p for p in EXAMPLES if p.stem == "revnet_coupling"))
QUICK = {"batch_size": 8, "lr": 0.01, "device": "cpu", "val_every": 0, "gradcheck_every": 0}


def _quick_flags() -> list[str]:
    return ["--batch-size", "8", "--lr", "0.01", "--device", "cpu", "--val-every", "0", "--gradcheck-every", "0"]


def test_dir_of_the_module_is_its_api_and_importing_it_loads_no_torch() -> None:
    code = ("import sys, revstudio as rs; print(sorted(dir(rs))); print(sorted(rs.__all__)); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch')[:3])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.splitlines()
    shown, api, heavy = (eval(line) for line in out)
    assert shown == api, "dir(rs) lists names beyond the API"
    assert {"train", "memory", "runs"} <= set(api) and not {"Any", "annotations", "_LAZY"} & set(shown)
    assert heavy == []


def test_train_is_the_command_in_process_same_first_loss_same_run_folder(tmp_path, capsys) -> None:
    cli_dir, api_dir = tmp_path / "cli", tmp_path / "api"
    assert cli.main(["train", EXAMPLE, "--steps", "3", "--log-every", "1", "--seed", "5", *_quick_flags(),
                     "--json", "--out", str(cli_dir)]) == 0
    capsys.readouterr()
    seen: list[dict] = []
    run = rs.train(EXAMPLE, steps=3, log_every=1, seed=5, out=api_dir, on_step=seen.append, progress=False,
                   **QUICK)
    assert run.status == "finished" and run.step == 3 and run.run_dir == str(api_dir)
    cli_rows, api_rows = read_metrics(str(cli_dir)), read_metrics(str(api_dir))
    first = [r["loss"] for r in cli_rows if r["kind"] == "step"][0]
    assert [r["loss"] for r in run.steps][0] == first == [r["loss"] for r in api_rows if r["kind"] == "step"][0]
    assert [(r["kind"], r.get("event"), r.get("step")) for r in api_rows] == \
        [(r["kind"], r.get("event"), r.get("step")) for r in cli_rows]
    assert json.loads(json.dumps(run.rows)) == api_rows  # the rows handed back are the run folder's
    assert seen == run.steps and [r["step"] for r in seen] == [1, 2, 3]
    assert sorted(os.listdir(api_dir)) == sorted(os.listdir(cli_dir))
    assert os.path.isfile(api_dir / "checkpoints" / "last.pt") and read_run(str(api_dir)).status == "finished"
    assert isinstance(run.model, torch.nn.Module) and run.metrics["loss"] == cli_rows[-1]["metrics"]["loss"]
    assert repr(run).startswith("<Run finished at step 3: loss ")


def test_a_graph_in_memory_trains_into_runs_of_the_current_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    g = rs.load(EXAMPLE)
    g.name = "my net"
    run = rs.train(g, steps=2, progress=False, **QUICK)
    assert run.status == "finished"
    assert Path(run.run_dir).parent == tmp_path / "runs" and Path(run.run_dir).name.startswith("my_net-")
    assert rs.load(Path(run.run_dir) / "project.revs").name == "my net"
    listed = rs.runs()
    assert [r["name"] for r in listed] == [Path(run.run_dir).name] and listed[0]["status"] == "finished"


def test_a_bad_setting_is_a_value_error_naming_key_and_value_and_leaves_no_run(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"training\.lr: -1\.0 is out of range"):
        rs.train(EXAMPLE, steps=2, lr=-1.0, out=tmp_path / "r", progress=False)
    with pytest.raises(ValueError, match=r"training\.learning_rate: unknown key"):
        rs.train(EXAMPLE, steps=2, learning_rate=0.1, out=tmp_path / "r", progress=False)
    with pytest.raises(ValueError, match=r"training\.batch_size: .*0"):
        rs.train(EXAMPLE, steps=2, batch_size=0, out=tmp_path / "r", progress=False)
    with pytest.raises(FileNotFoundError, match=r"nothere.revs: cannot read the file \(No such file or directory\); check the path"):
        rs.train(tmp_path / "nothere.revs")
    assert not (tmp_path / "r").exists()


def test_nproc_above_one_is_refused_with_the_command_to_run_and_nproc_one_trains_here(tmp_path) -> None:
    # rs.train trains in this process; several processes are revstudio train --nproc's (torch's launcher)
    with pytest.raises(ValueError, match=r"rs\.train: nproc=2 asks for several processes") as refused:
        rs.train(EXAMPLE, steps=2, nproc=2, out=tmp_path / "r", progress=False)
    assert f"`revstudio train {EXAMPLE} --steps 2 --nproc 2`" in str(refused.value)
    assert "rs.runs(" in str(refused.value) and "unknown key" not in str(refused.value)
    g = rs.load(EXAMPLE)
    with pytest.raises(ValueError, match=r"nproc=2, master_addr='h1'.*rs\.save\(g, 'net\.revs'\), then run "
                                         r"`revstudio train net\.revs --nproc 2 --master-addr h1`"):
        rs.train(g, nproc=2, master_addr="h1", out=tmp_path / "r", progress=False)
    with pytest.raises(ValueError, match=r"nproc=0 is not a count of processes"):
        rs.train(EXAMPLE, steps=2, nproc=0, out=tmp_path / "r", progress=False)
    assert not (tmp_path / "r").exists()
    run = rs.train(EXAMPLE, steps=2, nproc=1, out=tmp_path / "one", progress=False, **QUICK)
    assert run.status == "finished" and run.step == 2


def test_a_run_that_fails_after_its_start_raises_with_the_run_and_the_command_s_words(tmp_path) -> None:
    with pytest.raises(rs.TrainFailed, match=r"the loss became non-finite .* Try a lower --lr") as caught:
        rs.train(EXAMPLE, steps=20, out=tmp_path / "r", progress=False, **{**QUICK, "lr": 1e30, "optimizer": "sgd"})
    run = caught.value.run
    assert run.status == "nan" and run.run_dir == str(tmp_path / "r") and run.rows[0]["event"] == "started"
    assert read_run(str(tmp_path / "r")).status == "failed"
    listed = repr(rs.runs(tmp_path))  # (how it ended said on its line, as the command says it under its table)
    assert "\n  r  failed  step " in listed and "/20  (the loss became non-finite" in listed


def test_a_graph_with_errors_is_refused_pointing_at_rs_check(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    g = rs.load(EXAMPLE)
    g.add_node("Conv", "lonely", {"out_channels": 4})
    with pytest.raises(ValueError, match=r"the graph has errors; fix them first \(rs\.check\(graph\) shows all\):"
                                         r"\n  error: lonely\.in: input 'in' is not connected"):
        rs.train(g, steps=2, progress=False)
    assert not (tmp_path / "runs").exists()


def test_ctrl_c_stops_cleanly_after_the_step_and_returns_the_stopped_run(tmp_path) -> None:
    def interrupt(row: dict) -> None:
        if row["step"] == 2:
            os.kill(os.getpid(), signal.SIGINT)  # what a notebook's Interrupt sends the kernel

    before = signal.getsignal(signal.SIGINT)
    run = rs.train(EXAMPLE, steps=50, log_every=1, out=tmp_path / "r", on_step=interrupt, progress=False, **QUICK)
    assert run.status == "stopped" and 2 <= run.step < 50
    assert run.rows[-1]["event"] == "stopped" and run.rows[-1]["checkpoint"]
    assert read_run(str(tmp_path / "r")).status == "stopped"
    assert signal.getsignal(signal.SIGINT) is before  # the notebook's own handler back


def test_a_second_ctrl_c_stops_at_once_as_a_keyboard_interrupt_the_run_recorded_as_stopped(tmp_path) -> None:
    def interrupt_twice(row: dict) -> None:
        assert row in read_metrics(str(tmp_path / "r"))  # (the folder already holds the row handed over)
        if row["step"] == 3:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        rs.train(EXAMPLE, steps=50, log_every=1, checkpoint_every=2, out=tmp_path / "r", on_step=interrupt_twice,
                 progress=False, **QUICK)
    info = read_run(str(tmp_path / "r"))
    assert info.status == "stopped" and info.step == 2 and "second signal" in (info.message or "")


def test_an_error_in_the_callback_stops_the_run_cleanly_and_is_raised(tmp_path) -> None:
    def broken(row: dict) -> None:
        raise KeyError("my plot")

    with pytest.raises(KeyError, match="my plot") as caught:
        rs.train(EXAMPLE, steps=50, out=tmp_path / "r", on_step=broken, progress=False, **QUICK)
    assert "the run stopped cleanly at step 10" in " ".join(caught.value.__notes__)
    info = read_run(str(tmp_path / "r"))
    assert info.status == "stopped"
    assert os.path.isfile(tmp_path / "r" / "checkpoints" / "last.pt")
    # its record says why (it said "stopped by a signal", which nobody sent)
    assert "on_step raised KeyError: 'my plot'" in (info.message or "") and "signal" not in (info.message or "")


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"on_step": "plot"}, "rs.train: on_step must be a function of a row, got str"),  # (a run begun, then failed)
    ({"out": 5}, "rs.train: out=5: give a path"),
    ({"init": 5}, "rs.train: init=5: give a path"),
])
def test_arguments_of_the_wrong_type_are_refused_before_the_run(kwargs: dict, words: str, tmp_path) -> None:
    kwargs.setdefault("out", tmp_path / "r")
    with pytest.raises(TypeError) as info:
        rs.train(EXAMPLE, steps=1, progress=False, **kwargs, **QUICK)
    assert words in str(info.value) and not (tmp_path / "r").exists()


def test_memory_gives_the_json_of_the_command(tmp_path, capsys) -> None:
    assert cli.main(["memory", EXAMPLE, "--batch", "2", "--repeat", "1", "--budget", "1KiB", "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)
    report = rs.memory(EXAMPLE, batch=2, repeat=1, budget="1KiB")
    got = json.loads(cli.json_text(report.to_json()))

    def untimed(value):  # (the seconds differ from run to run; every byte count must not)
        if isinstance(value, dict):
            return {k: untimed(v) for k, v in value.items() if k not in ("seconds", "seconds_runs")}
        return value

    assert untimed(got) == untimed(expected)
    assert report.peak("reversible") == expected["modes"]["reversible"]["peak_bytes"]
    assert report.estimated_peak("standard") == expected["estimate"]["modes"]["standard"]["peak_bytes"]
    text = repr(report)
    assert "one training step, batch 2" in text and "reversible" in text and "budget" in text


def test_memory_of_some_modes_and_its_refusals() -> None:
    report = rs.memory(rs.load(EXAMPLE), batch=2, repeat=1, modes=["reversible"])
    assert list(report.modes) == ["reversible"] and report.peak("reversible") > 0
    assert "\n  reversible " in repr(report) and "standard" not in repr(report)
    with pytest.raises(ValueError, match=r"rs\.memory: batch=0: 0 is too small"):
        rs.memory(EXAMPLE, batch=0)
    with pytest.raises(ValueError, match=r"modes=\['fast'\]: 'fast' is not a mode"):
        rs.memory(EXAMPLE, modes=["fast"])
    with pytest.raises(ValueError, match=r"--device 'gpu' is not a device torch knows"):
        rs.memory(EXAMPLE, device="gpu")


def test_runs_of_a_folder_not_given_as_a_path_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="rs.runs: folder=b'runs': give a folder's path"):
        rs.runs(b"runs")  # (an AttributeError from inside the listing)


def test_runs_lists_as_the_command_does(tmp_path, capsys) -> None:
    for name, steps in (("a", 2), ("b", 3)):
        rs.train(EXAMPLE, steps=steps, out=tmp_path / name, progress=False, **QUICK)
    assert cli.main(["runs", str(tmp_path), "--sort", "-step", "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)
    listed = rs.runs(tmp_path, sort="-step")
    assert json.loads(cli.json_text(listed.to_json())) == expected
    assert [r["name"] for r in listed] == ["b", "a"] and repr(listed).startswith(f"<2 runs in {tmp_path}>")
    with pytest.raises(ValueError, match="unknown status 'done'"):
        rs.runs(tmp_path, status="done")
