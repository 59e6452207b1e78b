"""``--with-training``: the exported file trains as ``revstudio train`` does, needing only torch.

Same data (the same files read, the same synthetic tensors for a seed), same loss and
schedule, same data order and initial weights: on the CPU its loss rows and final
weights equal ``revstudio train``'s bit for bit; its checkpoint is revstudio's format.
"""
from __future__ import annotations

import gzip
import json
import os
import runpy
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from codegen_harness import chain_script, run_script  # noqa: E402
from pipe_reader import read_then_leave  # noqa: E402

from revstudio.codegen import export  # noqa: E402
from revstudio.compiler import compile as rs_compile  # noqa: E402
from revstudio.core import generate  # noqa: E402
from revstudio.core.check import check  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.training.data import load_data  # noqa: E402
from revstudio.training.task import infer_task  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "examples"


def exported(graph: Any, folder: Path, name: str = "train_model.py") -> Path:
    path = folder / name
    path.write_text(export(graph, with_training=True), encoding="utf-8")
    return path


def test_training_script_runs_standalone_and_its_checkpoint_loads_into_revstudio(tmp_path: Path) -> None:
    graph = generate.revnet_chain(1, channels=4, size=4, wired=False)
    path = chain_script(tmp_path, wired=False)
    proc = run_script(path, ["--steps", "3", "--batch", "2", "--lr", "0.01", "--mode", "reversible",
                             "--device", "cpu", "--log-every", "1", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "step      1" in proc.stdout and "step      3" in proc.stdout
    state = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert state["format"] == "revstudio-checkpoint" and state["version"] == 1 and state["step"] == 3
    assert set(state) >= {"model", "optimizer", "scheduler", "scaler", "rng", "data", "config", "graph",
                          "versions", "epoch"}
    model = rs_compile(graph, device="cpu")
    model.load_state_dict(state["model"], strict=True)  # the keys are the compiled module's
    torch.manual_seed(0)  # the script seeds 0 and builds Model: the same weights as revstudio.compile
    start = rs_compile(graph, device="cpu").state_dict()
    assert any(not torch.equal(state["model"][k], start[k]) for k in start if start[k].is_floating_point())
    assert json.loads(state["graph"])["name"] == graph.name


def test_a_memory_budget_the_script_cannot_apply_is_said_not_dropped(tmp_path: Path) -> None:
    graph = generate.revnet_chain(1, channels=4, size=4, wired=True)
    args = ["--steps", "1", "--batch", "2", "--device", "cpu", "--out", "ck.pt"]
    proc = run_script(chain_script(tmp_path, "plain.py"), args, tmp_path)
    assert proc.returncode == 0 and "memory_budget" not in proc.stderr
    graph.training = {"version": 1, "memory_budget": "1MiB"}
    proc = run_script(exported(graph, tmp_path, "budget.py"), args, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "memory_budget is not applied here" in proc.stderr and "revstudio train" in proc.stderr


def test_training_script_rejects_bad_options_and_data(tmp_path: Path) -> None:
    path = chain_script(tmp_path, "t.py")
    proc = run_script(path, ["--steps", "0"], tmp_path)
    assert proc.returncode == 2
    assert "--steps" in proc.stderr and "Traceback" not in proc.stderr
    np.savez(tmp_path / "bad.npz", x=np.zeros((8, 3, 4, 4), np.float32), y=np.zeros(8, np.int64))
    proc = run_script(path, ["--data", "bad.npz", "--steps", "1"], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "Input node 'x' expects 4x4x4" in proc.stderr, proc.stderr
    proc = run_script(path, ["--data", "mnist:nowhere", "--steps", "1"], tmp_path)
    assert proc.returncode == 2 and "no such folder" in proc.stderr


@pytest.mark.parametrize("flags, words", [
    (["--device", "tpu"], "--device 'tpu' is not a device torch knows"),
    # (a device torch names that this machine lacks: refused with the reason, as revstudio train refuses it)
    pytest.param(["--device", "mps"], "--device mps: this torch build or machine has no mps device; use --device cpu",
                 marks=pytest.mark.skipif(bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()),
                                          reason="this machine has an Apple GPU")),
    (["--lr", "nan"], "--lr nan is out of range"),
    (["--lr", "1e300"], "--lr 1e+300 is out of range"),
    (["--weight-decay", "-1"], "--weight-decay -1.0 is out of range"),
    (["--momentum", "2"], "--momentum 2.0 is out of range"),
    (["--grad-clip", "-1"], "--grad-clip -1.0 is out of range"),
    (["--warmup-steps", "-5"], "--warmup-steps -5 is negative"),
    (["--seed", str(1 << 70)], "use a seed from 0 to 2147483647"),
    (["--resume", "missing.pt"], "--resume missing.pt: cannot read the file"),
    (["--resume", "t.py"], "--resume t.py: not a checkpoint of this model"),
    (["--out", "t.py/ck.pt"], "t.py is a file, not a folder"),  # (trained, then a FileExistsError)
    (["--out", "."], "--out . is a folder; give a file in it"),
])
def test_training_script_refuses_bad_values_without_a_traceback(tmp_path: Path, flags: list[str],
                                                                 words: str) -> None:
    # each of these ended in a torch traceback (or, for --momentum 2, trained on nonsense)
    path = chain_script(tmp_path, "t.py")
    proc = run_script(path, ["--steps", "1", "--batch", "2", "--device", "cpu", *flags], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert words in proc.stderr, proc.stderr[-2000:]


def test_a_checkpoint_that_cannot_be_written_is_said_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    """A write that fails while training (a full disk, a folder gone) ended the run in a traceback."""
    script = runpy.run_path(str(chain_script(tmp_path, "t.py")))
    (tmp_path / "blocker").write_text("a file where the folder should be")
    with pytest.raises(script["_Failed"], match=r"--out .*ck\.pt: cannot write the checkpoint"):
        script["save_checkpoint"](str(tmp_path / "blocker" / "ck.pt"), {"model": {}})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "t.py"]


def test_plain_export_has_no_script(tmp_path: Path) -> None:
    source = export(generate.revnet_chain(1, channels=4, size=4, wired=True))
    assert "def train(" not in source and "__main__" not in source and "TRAINING" not in source


def _tiny_sources(folder: Path) -> None:
    rng = np.random.default_rng(0)
    np.savez(folder / "d.npz", x=rng.random((40, 1, 8, 8)).astype(np.float32), y=np.arange(40) % 10)
    torch.save({"x": torch.rand(30, 1, 8, 8), "y": torch.arange(30) % 10}, folder / "d.pt")
    (folder / "m").mkdir()
    for name, arr in [("train-images-idx3-ubyte", rng.integers(0, 256, (30, 8, 8))),
                      ("train-labels-idx1-ubyte", np.arange(30) % 10),
                      ("t10k-images-idx3-ubyte", rng.integers(0, 256, (5, 8, 8))),
                      ("t10k-labels-idx1-ubyte", np.arange(5))]:
        data = bytes([0, 0, 8, arr.ndim]) + struct.pack(">" + "I" * arr.ndim, *arr.shape) + arr.astype(
            np.uint8).tobytes()
        (folder / "m" / (name + ".gz")).write_bytes(gzip.compress(data))


@pytest.mark.parametrize("spec", ["synthetic", "d.npz", "d.pt", "mnist:m"])
def test_the_script_loads_the_very_tensors_revstudio_loads(tmp_path: Path, spec: str) -> None:
    graph = load(EXAMPLES / "digits_revnet.revs")
    _tiny_sources(tmp_path)
    script = runpy.run_path(str(exported(graph, tmp_path)))  # defines, runs nothing (no __main__)
    config = {**script["TRAINING"], "data": spec, "seed": 5}
    (x, y), val, kind = script["load_training_data"](config, str(tmp_path))
    report = check(graph)
    ours = load_data(spec, graph, report, task=infer_task(graph, report), seed=5, base_dir=str(tmp_path))
    assert kind == ours.task.kind == "classification"
    assert torch.equal(x["image"], ours.train.inputs["image"]) and torch.equal(y, ours.train.targets)
    assert torch.equal(val[0]["image"], ours.val.inputs["image"]) and torch.equal(val[1], ours.val.targets)


@pytest.mark.parametrize("name", ["glow_flow", "birnn_sequence", "two_branch"])
def test_synthetic_data_of_the_script_matches_for_flows_and_sequences(tmp_path: Path, name: str) -> None:
    graph = load(EXAMPLES / f"{name}.revs")
    script = runpy.run_path(str(exported(graph, tmp_path)))
    (x, y), _, kind = script["load_training_data"](dict(script["TRAINING"]), None)
    report = check(graph)
    ours = load_data("synthetic", graph, report, task=infer_task(graph, report))
    assert kind == ours.task.kind
    for node, tensor in ours.train.inputs.items():
        assert torch.equal(x[node], tensor)
    assert (y is None and ours.train.targets is None) or torch.equal(y, ours.train.targets)


def _rows(text: str) -> list[tuple[Any, ...]]:
    rows = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    return [(r["kind"], r["step"], r.get("loss"), r.get("val_loss"), r.get("val_accuracy"))
            for r in rows if r["kind"] in ("step", "val")]


@pytest.mark.slow
def test_the_script_trains_bit_for_bit_like_revstudio_train(tmp_path: Path) -> None:
    """The digits example, 12 steps on the shipped data: the same rows and final weights."""
    out = tmp_path / "sub"
    out.mkdir()
    script = out / "digits.py"
    cli = [sys.executable, "-P", "-m", "revstudio"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([*cli, "export", str(EXAMPLES / "digits_revnet.revs"), "-o", str(script),
                           "--with-training"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ours = subprocess.run([*cli, "train", str(EXAMPLES / "digits_revnet.revs"), "--steps", "12", "--json",
                           "--out", str(tmp_path / "run")], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600)
    assert ours.returncode == 0, ours.stderr[-3000:]
    # the exported section's data path was rebased onto the script's folder
    theirs = run_script(script, ["--steps", "12", "--json", "--out", "ck.pt"], tmp_path)
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    assert _rows(theirs.stdout) == _rows(ours.stdout) != []
    # ... with the keys of revstudio's rows (the memory measurement stays revstudio's)
    keys = [[set(r) - {"peak_bytes", "estimate_bytes"} for r in (json.loads(line) for line in text.splitlines()
             if line.startswith("{")) if r["kind"] in ("step", "val")] for text in (theirs.stdout, ours.stdout)]
    assert keys[0] == keys[1]
    a = torch.load(tmp_path / "ck.pt", weights_only=True)
    b = torch.load(tmp_path / "run" / "checkpoints" / "last.pt", weights_only=True)
    assert set(a) == set(b) and a["step"] == b["step"] == 12 and a["data"].keys() == b["data"].keys()
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in b["model"])
    # the lowest val_loss's weights, beside --out as revstudio keeps them beside last.pt
    c = torch.load(tmp_path / "ck.best.pt", weights_only=True)
    d = torch.load(tmp_path / "run" / "checkpoints" / "best.pt", weights_only=True)
    assert set(c) == set(d) and c["step"] == d["step"] and c["best"] == d["best"] == a["best"] == b["best"]
    assert all(torch.equal(c["model"][k], d["model"][k]) for k in d["model"])
    assert "the lowest val_loss's weights (step 12) to ck.best.pt" in run_script(
        script, ["--steps", "12", "--out", "ck.pt"], tmp_path).stdout


def test_exported_training_scripts_pass_ruff(tmp_path: Path) -> None:
    paths = []
    for path in sorted(EXAMPLES.glob("*.revs")):
        paths.append(exported(load(path), tmp_path, f"{path.stem}_train.py"))
    for config in (["--config", str(ROOT / "pyproject.toml")], ["--isolated"]):
        proc = subprocess.run([sys.executable, "-m", "ruff", "check", *config, *map(str, paths)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:]


@pytest.mark.slow
def test_torchrun_two_processes_train_the_global_batch(tmp_path: Path) -> None:
    """``torchrun --nproc_per_node 2``: gloo DDP, each rank half of the global batch; the weights
    end where a single process on the same global batch ends (to rounding)."""
    path = chain_script(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["OMP_NUM_THREADS"] = "1"
    common = ["--steps", "3", "--batch-size", "8", "--device", "cpu", "--log-every", "1", "--val-fraction", "0"]
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
            str(path), *common, "--out", "two.pt"]
    try:
        two = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    except subprocess.TimeoutExpired:
        # One CI run hung here for 600 s: the script tore gloo down while its peer still talked
        # to it (now a barrier first, as revstudio train does). Bounded and retried once, so a
        # launch that really hangs still fails.
        two = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    assert two.returncode == 0, (two.stdout + two.stderr)[-3000:]
    assert two.stdout.count("step      3") == 1  # only rank 0 prints
    one = run_script(path, [*common, "--out", "one.pt"], tmp_path)
    assert one.returncode == 0, one.stderr[-3000:]
    saved = torch.load(tmp_path / "two.pt", weights_only=True)
    ranks = saved["rng_ranks"]  # each rank's own stream (its own dropout masks), as revstudio train saves
    assert torch.equal(ranks[0]["torch"], saved["rng"]["torch"]) and not torch.equal(ranks[0]["torch"],
                                                                                      ranks[1]["torch"])
    a = saved["model"]
    b = torch.load(tmp_path / "one.pt", weights_only=True)["model"]
    for key in b:
        if b[key].is_floating_point():
            assert torch.allclose(a[key], b[key], atol=1e-5, rtol=1e-4), key


def test_under_torchrun_a_refusal_is_said_once(tmp_path: Path) -> None:
    """Every rank printed the same "error:" line; rank 0 says it (as it alone prints rows)."""
    path = chain_script(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["OMP_NUM_THREADS"] = "1"
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(path),
            "--steps", "1", "--device", "cpu", "--data", str(tmp_path / "missing.npz")]
    run = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    assert run.returncode != 0
    said = [line for line in run.stderr.splitlines() if line.startswith("error") and "missing.npz" in line]
    assert len(said) == 1 and said[0].startswith("error: "), run.stderr[-3000:]


def test_hostile_names_stay_data_in_the_training_script(tmp_path: Path) -> None:
    from codegen_harness import hostile_ids, names_for, renamed

    marker = tmp_path / "MARKER"
    graph = renamed(load(EXAMPLES / "digits_revnet.revs"), hostile_ids(marker), names_for(marker))
    path = exported(graph, tmp_path, "hostile.py")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", str(path)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    run = run_script(path, ["--data", "synthetic", "--steps", "2", "--batch-size", "4", "--log-every", "1",
                            "--val-fraction", "0"], tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "step      2" in run.stdout and not marker.exists()


def test_resume_continues_as_if_never_stopped_and_nan_fails_cleanly(tmp_path: Path) -> None:
    path = chain_script(tmp_path)
    common = ["--schedule", "constant", "--batch-size", "8", "--lr", "0.01", "--val-fraction", "0"]
    whole = run_script(path, [*common, "--steps", "6", "--out", "whole.pt"], tmp_path)
    half = run_script(path, [*common, "--steps", "3", "--out", "half.pt"], tmp_path)
    rest = run_script(path, [*common, "--steps", "6", "--resume", "half.pt", "--out", "rest.pt"], tmp_path)
    assert whole.returncode == half.returncode == rest.returncode == 0, rest.stderr[-3000:]
    a = torch.load(tmp_path / "whole.pt", weights_only=True)
    b = torch.load(tmp_path / "rest.pt", weights_only=True)
    assert b["step"] == 6 and all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    bad = run_script(path, [*common, "--steps", "3", "--lr", "1e30", "--optimizer", "sgd", "--out", "nan.pt"],
                     tmp_path)
    assert bad.returncode == 1 and "non-finite" in bad.stderr and "Traceback" not in bad.stderr


def test_a_resume_from_between_two_step_rows_writes_the_uninterrupted_rows(tmp_path: Path) -> None:
    """The first step row after --resume averaged only the resumed steps: the running means of
    the rows were not in the checkpoint (revstudio train had the same fault)."""
    path = chain_script(tmp_path)
    common = ["--schedule", "constant", "--batch-size", "8", "--lr", "0.01", "--val-fraction", "0",
              "--log-every", "3", "--json"]
    whole = run_script(path, [*common, "--steps", "6", "--out", "whole.pt"], tmp_path)
    assert whole.returncode == 0, whole.stderr[-3000:]
    script = runpy.run_path(str(path), run_name="probe")
    saved = script["save_checkpoint"]

    def keep_step_4(out: str, payload: dict) -> None:
        saved(out, payload)
        if payload["step"] == 4:  # a checkpoint between the rows of steps 3 and 6, as a kill would leave
            saved(str(tmp_path / "at4.pt"), payload)

    script["train"].__globals__["save_checkpoint"] = keep_step_4
    config = {**script["TRAINING"], "schedule": "constant", "batch_size": 8, "lr": 0.01, "val_fraction": 0.0,
              "log_every": 3, "steps": 6, "checkpoint_every": 2, "device": "cpu"}
    script["train"](config, str(tmp_path / "cut.pt"), str(tmp_path))
    rest = run_script(path, [*common, "--steps", "6", "--resume", "at4.pt", "--out", "rest.pt"], tmp_path)
    assert rest.returncode == 0, rest.stderr[-3000:]
    rows = lambda text: {r["step"]: r["loss"] for r in map(json.loads, text.splitlines())  # noqa: E731
                         if r.get("kind") == "step"}
    assert rows(rest.stdout) == {6: rows(whole.stdout)[6]}


def test_a_network_without_regions_gets_a_script_that_imports_and_runs(tmp_path: Path) -> None:
    # no reversible region, so no inlined runtime to bring `Callable` along: the copied
    # lr_factor's annotation named it unimported and the script died at import (NameError)
    from revstudio.core.graph import Graph

    g = Graph("mlp")
    g.add_node("Input", "x", {"shape": [4, 6]})
    g.add_node("Linear", "fc", {"out_features": 3})
    g.add_node("Output", "y", {})
    g.connect("x.out", "fc.in")
    g.connect("fc.out", "y.in")
    path = exported(g, tmp_path, "mlp.py")
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", str(path)], capture_output=True,
                          text=True)
    assert lint.returncode == 0, lint.stdout[-3000:]
    proc = run_script(path, ["--steps", "2", "--batch-size", "4", "--log-every", "1", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "step      2" in proc.stdout


def test_fewer_samples_than_one_batch_train_on_all_of_them_as_revstudio_does(tmp_path: Path) -> None:
    # revstudio train takes min(batch size, samples) per step; the script refused instead
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", x=rng.random((12, 4, 4, 4)).astype(np.float32), y=np.arange(12) % 10)
    path = chain_script(tmp_path)
    proc = run_script(path, ["--data", "d.npz", "--val-fraction", "0.25", "--steps", "2", "--batch-size", "32",
                             "--log-every", "1", "--out", "ck.pt"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    state = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert state["step"] == 2 and state["data"]["steps_per_epoch"] == 1


def test_task_is_an_option_like_revstudio_trains(tmp_path: Path) -> None:
    # TRAINING held "task" but no option read it: the task was fixed at export time
    path = chain_script(tmp_path)
    common = ["--steps", "2", "--batch-size", "4", "--log-every", "1", "--val-fraction", "0", "--json"]
    rows = {}
    for task in ("auto", "regression"):
        proc = run_script(path, [*common, "--task", task, "--out", f"{task}.pt"], tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        rows[task] = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert "accuracy" in rows["auto"][-1] and "accuracy" not in rows["regression"][-1]  # cross-entropy vs mse
    proc = run_script(path, [*common, "--task", "flow"], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--task flow: task 'flow' needs a log-determinant" in proc.stderr, proc.stderr[-2000:]


def test_nan_gradients_under_a_finite_loss_stop_the_exported_script_before_the_update(tmp_path: Path) -> None:
    """An AffineCoupling (clamp 0) whose log-scale underflows exp() gives a finite loss, but reversible
    mode's rebuilt inputs (0 * inf) make its gradients NaN; the script wrote them into the weights
    (revstudio train stops at that step: the exported loop must too)."""
    graph = load(EXAMPLES / "glow_flow.revs")
    for node in graph:
        if node.type == "AffineCoupling":
            graph.set_param(node.id, "clamp", 0.0)
    path = exported(graph, tmp_path)
    common = ["--schedule", "constant", "--batch-size", "8", "--val-fraction", "0", "--mode", "reversible"]
    first = run_script(path, [*common, "--steps", "1", "--out", "one.pt"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    state = torch.load(tmp_path / "one.pt", weights_only=True)
    key = [k for k, v in state["model"].items() if "coupling" in k and k.endswith("bias") and v.numel() == 12][-1]
    state["model"][key][:6] = -200.0  # the log-scale half: exp(-200) is 0 in float32
    torch.save(state, tmp_path / "poisoned.pt")
    bad = run_script(path, [*common, "--steps", "3", "--resume", "poisoned.pt", "--out", "two.pt"], tmp_path)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr, bad.stderr[-3000:]
    assert "gradients became non-finite" in bad.stderr and "at step 2" in bad.stderr, bad.stderr[-3000:]
    assert "fp32" not in bad.stderr  # the run is fp32 already
    assert not (tmp_path / "two.pt").exists()  # no checkpoint written from what followed


def test_the_scripts_rows_piped_into_head_end_quietly(tmp_path: Path) -> None:
    """`python model.py --json | head -n 1` printed a BrokenPipeError traceback and exited 1;
    it stops as cat does: nothing more printed, exit 141 (128 + SIGPIPE)."""
    path = chain_script(tmp_path, wired=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["OMP_NUM_THREADS"] = "1"
    code, read, err = read_then_leave([sys.executable, "-I", str(path), "--steps", "100000", "--batch", "2",
                                       "--device", "cpu", "--log-every", "1", "--json", "--out", "ck.pt"],
                                      1, tmp_path, env)
    assert json.loads(read[0])["kind"] == "step"
    assert code == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_the_scripts_best_validation_survives_a_resume(tmp_path: Path) -> None:
    """A resumed script goes on comparing with the best val_loss its checkpoint carries, as revstudio's does."""
    path = chain_script(tmp_path)
    common = ["--batch-size", "8", "--lr", "0.01", "--val-every", "1", "--log-every", "1"]
    half = run_script(path, [*common, "--steps", "2", "--out", "half.pt"], tmp_path)
    assert half.returncode == 0, half.stderr[-3000:]
    first = torch.load(tmp_path / "half.best.pt", weights_only=True)
    assert first["best"]["step"] == first["step"] and first["best"]["val_loss"] > 0
    state = torch.load(tmp_path / "half.pt", weights_only=True)
    state["best"] = {"val_loss": 0.0, "step": 1}  # a best no validation can beat
    torch.save(state, tmp_path / "half.pt")
    rest = run_script(path, [*common, "--steps", "4", "--resume", "half.pt", "--out", "rest.pt"], tmp_path)
    assert rest.returncode == 0, rest.stderr[-3000:]
    assert torch.load(tmp_path / "rest.pt", weights_only=True)["best"] == {"val_loss": 0.0, "step": 1}
    assert not (tmp_path / "rest.best.pt").exists()
