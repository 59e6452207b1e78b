"""A stand-in for ``revstudio train SNAPSHOT --json --out DIR`` that prints CONTRACTS section 3 rows.

Test fixture only (the product runs the real worker): it lets the GUI tests
drive rows, stops and failures quickly. It reads ``steps`` from the snapshot's
training section like the real worker; FAKE_DELAY (seconds per step) and
FAKE_FAIL_AT (a step where it fails with a message) come from the environment.
"""
import json
import os
import signal
import sys
import time
from pathlib import Path

args = sys.argv[1:]
out = Path(args[args.index("--out") + 1])
out.mkdir(parents=True, exist_ok=True)
(out / "checkpoints").mkdir(exist_ok=True)
training = json.loads(Path(args[0]).read_text()).get("training") or {}
steps = int(training.get("steps") or 200)
delay = float(os.environ.get("FAKE_DELAY", "0.02"))
fail_at = int(os.environ.get("FAKE_FAIL_AT", "-1"))
diverge_at = int(os.environ.get("FAKE_DIVERGE_AT", "-1"))
stall_at = int(os.environ.get("FAKE_STALL_AT", "-1"))  # a step at which the run is told it is not learning
early_at = int(os.environ.get("FAKE_EARLY_AT", "-1"))  # a step early stopping ends the run at (best: 4 before)
short = os.environ.get("FAKE_SHORT") == "1"  # a run too short to check whether it learns
SHORT = ("not checked whether the run learns: it ran {} steps, and the check needs at least 100; "
         "Train at least 100 steps (--steps 100) to have it checked")
STALLED = "the run is not learning: after {} steps the training loss went from 2.3 to 2.3; try a higher --lr (now 0.001)"
disk_full = os.environ.get("FAKE_DISK_FULL") == "1"  # its failure cannot be written to status.json  # a step whose loss diverged (the run goes on)
DIVERGED = "the loss diverged: 5e+04 at step {}, against 2.3 at the start; try a lower --lr (now 0.001)"
t0 = time.monotonic()
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
log = open(out / "metrics.jsonl", "a")


def row(**kw):
    kw.setdefault("time", round(time.monotonic() - t0, 4))
    line = json.dumps(kw)
    print(line, flush=True)
    log.write(line + "\n")
    log.flush()


def status(state, step, **kw):
    (out / "status.json").write_text(json.dumps({"status": state, "pid": os.getpid(), "step": step,
                                                 "total_steps": steps, "started": "2026-12-01T22:00:00",
                                                 "ended": None, "metrics": {}, "message": None, **kw}))


(out / "config.json").write_text(json.dumps({"data": "synthetic", "steps": steps, "lr": 0.001}))
status("running", 0)
row(kind="event", event="started", time=0.0, run_dir=str(out), config={"steps": steps}, device="cpu",
    versions={}, parameters=100, total_steps=steps, steps_per_epoch=10, mode="reversible",
    task="classification", estimate_bytes=3000, standard_estimate_bytes=10000, regions=["r0"],
    resumed_from=None, inputs=os.environ.get("FAKE_INPUTS") or None,
    threads_notes=[os.environ["FAKE_THREADS_NOTE"]] if os.environ.get("FAKE_THREADS_NOTE") else [],
    device_notes=[os.environ["FAKE_DEVICE_NOTE"]] if os.environ.get("FAKE_DEVICE_NOTE") else [])
for step in range(1, steps + 1):
    if stop:
        (out / "checkpoints" / "last.pt").write_text(json.dumps({"step": step - 1}))
        row(kind="event", event="stopped", step=step - 1, checkpoint="checkpoints/last.pt")
        status("stopped", step - 1)
        sys.exit(0)
    time.sleep(delay)
    if step == fail_at:
        print("Traceback (most recent call last):\nValueError: fake failure", file=sys.stderr, flush=True)
        if disk_full:
            print(json.dumps({"kind": "event", "event": "failed", "step": step, "exit_code": 1,
                              "message": f"cannot write {out / 'status.json'}: No space left on device; "
                                         "free some space"}), flush=True)
            sys.exit(1)
        row(kind="event", event="failed", step=step, message="fake failure at this step", exit_code=1)
        status("failed", step, message="fake failure")
        sys.exit(1)
    row(kind="step", step=step, epoch=step / 10, loss=1.0 / step, lr=0.001, samples_per_s=500.0,
        accuracy=min(1.0, step / steps), peak_bytes=2900 + step % 7, estimate_bytes=3000)
    if step == stall_at:
        row(kind="event", event="not_learning", step=step, loss=2.3, start=2.3, message=STALLED.format(step))
    if step == diverge_at:
        row(kind="event", event="diverged", step=step, loss=5e4, start=2.3, message=DIVERGED.format(step))
    if step % 10 == 0:
        row(kind="val", step=step, epoch=step / 10, val_loss=1.2 / step, val_accuracy=min(1.0, step / steps))
        row(kind="gradcheck", step=step, epoch=step / 10, regions=[
            {"region": "r0", "grad_rel_error": 1e-7 * step, "inversion_error": 1e-8}],
            max_grad_rel_error=1e-7 * step, max_inversion_error=1e-8)
    if step == early_at:
        break
end = early_at if 0 < early_at <= steps else steps
row(kind="event", event="finished", step=end, metrics={"loss": 1.0 / end}, wall_s=time.monotonic() - t0,
    **({"early_stopped": {"step": early_at, "patience": 2, "min_delta": 0.0, "best_step": early_at - 4,
                          "best_val_loss": 0.5}} if early_at > 0 else {}),
    **({"warning": DIVERGED.format(diverge_at), "diverged_at": diverge_at} if 0 < diverge_at <= steps else {}),
    **({"warning": STALLED.format(stall_at), "not_learning_at": stall_at} if 0 < stall_at <= steps else {}),
    **({"note": SHORT.format(steps)} if short else {}))
status("finished", end)
