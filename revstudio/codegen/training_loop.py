"""The text of an exported training script's own code (``training.training_parts`` puts it after
the copied data, schedule and loss code): the loop that trains ``Model`` as
``revstudio.training.loop`` does and the imports it needs; its options and ``main()`` are
``training_options``'s text, which ``LOOP`` ends with. Plain text, never run here;
``tests/codegen/test_training_script.py`` runs it.
"""
from __future__ import annotations

from .inline import ImportFact
from .training_files import FILE_HELPERS
from .training_options import OPTIONS_AND_MAIN

# Imports the loop needs (the copied modules' are read from their own lines by script_imports).
LOOP_IMPORTS = tuple(ImportFact(name, name) for name in ("argparse", "contextlib", "json", "math", "os", "pickle",
                                                           "platform", "shlex", "signal", "sys", "time")) \
    + (ImportFact("Any", "typing", "Any"),)

LOOP = '''

class _Reject(Exception):
    """Options that do not fit together (exit code 2, like bad data)."""


class _Failed(Exception):
    """The run itself failed, e.g. a non-finite loss (exit code 1)."""


# The signals that asked the run to stop (main() listens for SIGINT and SIGTERM, as revstudio train
# does): the loop ends after the step it is in, every rank at the same one, and writes its checkpoint.
_STOP: list[str] = []


def _ask_stop(signum: int, frame: Any) -> None:
    _STOP.append(signal.Signals(signum).name)


def start_distributed(device_name: str) -> tuple[int, int, int]:
    """(rank, world size, local rank); joins the process group when torchrun started this process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not torch.distributed.is_initialized():
        cuda = device_name != "cpu" and torch.cuda.is_available()
        torch.distributed.init_process_group("nccl" if cuda else "gloo")
    return int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0"))


def pick_device(name: str, local_rank: int) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise _Reject(f"--device {name}: CUDA is not available; use --device cpu")
        if device.index is None:
            device = torch.device("cuda", local_rank)
    elif device.type != "cpu":
        try:  # (mps, xpu, ...: a tensor on it is the test this machine has one)
            torch.empty(0, device=device)
        except (RuntimeError, AssertionError, NotImplementedError):
            raise _Reject(f"--device {name}: this torch build or machine has no {device.type} device; "
                          "use --device cpu") from None
    return device


def make_optimizer(config: dict[str, Any], params: Any) -> torch.optim.Optimizer:
    if config["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=config["lr"], momentum=config["momentum"],
                               weight_decay=config["weight_decay"])
    if config["optimizer"] == "adamw":
        return torch.optim.AdamW(params, lr=config["lr"], weight_decay=config["weight_decay"])
    return torch.optim.Adam(params, lr=config["lr"], weight_decay=config["weight_decay"])


def task_for(config: dict[str, Any]) -> dict[str, Any]:
    """The task facts of ``config["task"]``, as revstudio resolved them; one that does not fit
    the graph is refused with revstudio's reason."""
    facts = TASKS.get(config["task"])
    if not isinstance(facts, dict):
        raise _Reject(f"--task {config['task']}: {facts or 'not a task'}")
    return facts


def load_training_data(config: dict[str, Any], base_dir: str | None,
                       facts: dict[str, Any] | None = None) -> tuple[Any, Any, str]:
    """((inputs, targets), validation or None, task kind): the data revstudio would train on
    (``facts``: what ``load_splits`` says of uint8 inputs and a flow's levels)."""
    task = task_for(config)
    return load_splits(
        config["data"], INPUT_SPECS, kind=task["kind"], num_classes=task["num_classes"],
        output_id=task["output_id"], head_id=task["head_id"], out_shape=tuple(task["output_shape"]),
        auto=task["requested"] == "auto", val_spec=config["val_data"], val_fraction=config["val_fraction"],
        seed=config["seed"], base_dir=base_dir, sequence=task["sequence"],
        scale_uint8=config.get("scale_uint8", True), facts=facts)


def uint8_note(facts: dict[str, Any]) -> str | None:
    """What became of 8-bit inputs, and the arrays of a .npz / .pt not read (revstudio train's start
    says the same), or None."""
    return inputs_note(facts["uint8"], facts["scaled"], facts["pixels"], len(INPUT_SPECS), facts["unread"],
                       facts["scored"])


''' + FILE_HELPERS + '''

def diverged_text(warned: dict[str, Any], config: dict[str, Any], kind: str) -> str:
    """The warning of a loss that diverged (revstudio.training.divergence.diverged_message's words)."""
    unit = " bits per dimension" if kind == "flow" else ""
    clip = (f"a tighter --grad-clip (now {config['grad_clip']:g})" if config["grad_clip"] is not None
            else "--grad-clip 1.0")
    return (f"the loss diverged: {warned['loss']:.4g}{unit} at step {warned['step']}, against {warned['start']:.4g} "
            f"at the start (it rose by more than {FACTOR:g} times the start's size). The run goes on, as a spike "
            f"may come back down; stop it (Ctrl-C) if the loss stays up. Try a lower --lr (now {config['lr']:g}) "
            f"or {clip}{DIVERGED_ADVICE if kind == 'flow' else ''}")


def init_weights(path: str, model: Any) -> None:
    """Put the weights ``--init`` names into ``model``, as revstudio train --init: a state_dict file,
    a checkpoint (this script's or revstudio's) or a revstudio run folder (its last checkpoint)."""
    file = os.path.join(path, "checkpoints", "last.pt") if os.path.isdir(path) else path
    if not os.path.isfile(file):
        raise _Reject(no_init_file(path))
    try:
        data = torch.load(file, map_location="cpu", weights_only=True)
    except (OSError, pickle.UnpicklingError, EOFError, RuntimeError, ValueError, TypeError) as exc:
        # (torch's own message may advise weights_only=False, which would run the file's code: not repeated)
        raise _Reject(f"--init {file}: not a readable file of weights ({type(exc).__name__}); it is damaged "
                      "or cut short") from None
    weights = data.get("model") if isinstance(data, dict) and isinstance(data.get("model"), dict) \
        else bare_state_dict(file)
    if not weights:
        raise _Reject(f"--init {file}: not a checkpoint nor a state_dict (a dict of name -> tensor); {OWN_WEIGHTS}")
    why = state_mismatch(model.state_dict(), weights)
    if why:
        raise _Reject(init_misfit(path, why))
    model.load_state_dict(weights)


def train(config: dict[str, Any], out: str = "checkpoint.pt", base_dir: str | None = None,
          json_rows: bool = False, resume: str | None = None, init: str | None = None) -> Model:
    """Train ``Model`` with ``config`` (the TRAINING keys); write the checkpoint to ``out``; start
    from the weights ``init`` names instead of fresh ones (``--init``)."""
    if config.get("threads") is not None:  # (before any work, as revstudio train --threads: per process)
        torch.set_num_threads(config["threads"])
    t0 = time.perf_counter()
    rank, world, local_rank = start_distributed(config["device"])
    device = pick_device(config["device"], local_rank)
    facts: dict[str, Any] = {}
    (inputs, targets), val, kind = load_training_data(config, base_dir, facts)
    n, batch_size = len(next(iter(inputs.values()))), config["batch_size"]
    # (as revstudio's checkpoints: a run resumed on other data can tell)
    data_record = {"describe": f"{config['data']}: {n} train" + (f" / {len(next(iter(val[0].values())))} val"
                                                               if val is not None else ", no validation")
                   + (f", {facts['reading']}" if facts["reading"] else ""),
                   "digest": facts["digest"] or data_digest([(inputs, targets), val]),
                   "uint8_scaled": bool(facts["scaled"]) if facts["uint8"] else None}
    if rank == 0 and facts["reading"]:  # (mapped, read as used, or a large file read whole: revstudio's words)
        print(f"data: {data_record['describe']}", file=sys.stderr, flush=True)
    if rank == 0 and uint8_note(facts):
        print(f"note: {uint8_note(facts)}", file=sys.stderr, flush=True)
    if batch_size % world:
        raise _Reject(f"batch size {batch_size} does not split evenly over {world} processes; use a multiple "
                      f"of {world}")
    micro = config.get("accumulate", 1)  # micro-batches of batch_size per optimizer step, their gradients summed
    if micro > 1 and n < batch_size * micro:
        raise _Reject(f"accumulate {micro} micro-batches of batch size {batch_size} needs {batch_size * micro} "
                      f"training samples a step, and there are {n}; lower --accumulate or --batch-size")
    batch = min(batch_size, n)  # fewer samples than one batch: each step takes them all, as revstudio does
    local = batch // world
    if local < 1:
        raise _Reject(f"{n} training samples cannot feed {world} processes")
    per_epoch = max(1, n // (batch * micro))
    total = config["steps"] if config["steps"] is not None else int(config["epochs"]) * per_epoch
    torch.manual_seed(config["seed"])  # the same initial weights as revstudio.compile, on every rank
    float64 = any(dtype == "float64" for _, dtype in INPUT_SPECS.values())
    model = Model().to(device=device, dtype=torch.float64 if float64 else torch.float32)
    model.mode = config["mode"]
    model.track_inversion = False  # as revstudio train: no inversion error is measured, nothing reads it
    if init:
        init_weights(init, model)
    if config.get("memory_budget") is not None and rank == 0:
        print(f"note: the project's memory_budget is not applied here (choosing what it keeps needs "
              f"revstudio's memory estimate: use revstudio train); every region runs {config['mode']} mode",
              file=sys.stderr, flush=True)
    model.train()
    optimizer = make_optimizer(config, model.parameters())
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor(config["schedule"], config["warmup_steps"],
                                                                       total))
    if config["precision"] == "fp16" and device.type != "cuda":
        raise _Reject("precision fp16 needs a CUDA device; on the CPU use --precision bf16 or fp32")
    half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(config["precision"])
    scaler = torch.amp.GradScaler("cuda") if config["precision"] == "fp16" else None
    step = 0
    if rank:  # the same initial weights, then each rank's own dropout masks, as revstudio train
        torch.manual_seed((config["seed"] + rank * 0x9E3779B9) % 2**32)
    if resume:
        try:
            state = torch.load(resume, map_location="cpu", weights_only=True)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            if scaler is not None and state.get("scaler"):
                scaler.load_state_dict(state["scaler"])
            step = int(state["step"])
            mismatch = scale_mismatch(state, facts, resume)
        except OSError as exc:
            raise _Reject(f"--resume {resume}: cannot read the file ({exc.strerror or exc})") from None
        except (pickle.UnpicklingError, EOFError, RuntimeError, ValueError, KeyError, TypeError) as exc:
            raise _Reject(f"--resume {resume}: not a checkpoint of this model ({type(exc).__name__}); it is "
                          "damaged, cut short or another model's: pass the --out file of an earlier run of "
                          "this script") from None
        if mismatch:
            raise _Reject(mismatch)
    changed = data_changed(state, data_record) if resume else None  # (as revstudio train --resume)
    if changed is not None and rank == 0:
        print(f"note: {data_changed_note(changed)}", file=sys.stderr, flush=True)
    for note in ((threads_changed_note(state.get("threads"), torch.get_num_threads()),
                  device_changed_note(state.get("device"), str(device))) if resume and rank == 0 else ()):
        if note:  # (as revstudio train --resume: another thread count or device changes the last bits)
            print(f"note: {note}", file=sys.stderr, flush=True)
    stretched = schedule_note(state.get("config"), step, config["schedule"], config["warmup_steps"], config["lr"],
                              total, per_epoch) if resume else None
    if stretched is not None and rank == 0:  # (more --steps re-plan a cosine/onecycle schedule, as in revstudio)
        print(f"note: {stretched}", file=sys.stderr, flush=True)
    net: Any = model
    if world > 1:
        # the reversible runtime returns each parameter's gradient once per backward, so plain DDP works
        net = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    if resume:  # this rank's saved stream; a checkpoint without it: one from the seed, rank and step
        ranks = state.get("rng_ranks") or []
        if rank == 0 or rank < len(ranks):
            torch.set_rng_state((ranks[rank] if rank else state["rng"])["torch"])
        else:
            torch.manual_seed((config["seed"] + rank * 0x9E3779B9 + step) % 2**32)
    # a loss that grows by orders of magnitude while finite: warned of once (the start survives --resume)
    watch = DivergenceWatch(state.get("divergence") if resume else None)
    # a run whose loss does not fall, or whose accuracy stays at chance: told once, at learn_at
    learning = LearningWatch(state.get("learning") if resume else None)
    # the best validation so far ({"val_loss", "step"}), whose weights the best file holds, across --resume
    best: dict[str, Any] = dict(state["best"]) if resume and isinstance(state.get("best"), dict) else {}
    # early stopping's count of validations without improvement, across --resume (as revstudio train)
    patience = Patience(config.get("patience"), config.get("min_delta", 0.0), state if resume else None)
    early_then = early_stop_facts(state, config.get("patience"), config.get("min_delta", 0.0)) if resume else None
    if early_then is not None and step < total:  # (as revstudio train --resume: it would stop again at once)
        raise _Reject(f"--resume {resume}: {resume_refusal(early_then, early_then['waited'])}")
    learn_at = check_step(per_epoch, total)
    classes = task_for(config)["num_classes"] if kind == "classification" else None
    levels = facts["levels"] if kind == "flow" else None
    loss_fn = Loss(kind, levels)
    axes = len(task_for(config)["output_shape"]) - 1  # (a class per step: 1, pixel: 2, voxel: 3, position: 4+)
    scored = position_unit(axes) + "s_scored" if kind == "classification" and axes >= 1 else None

    def noisy(xs: list[torch.Tensor], seed: int) -> list[torch.Tensor]:  # as revstudio train's
        return xs if levels is None else [dequantize(x, levels, seed + i) for i, x in enumerate(xs)]
    index = task_for(config)["output_index"]

    def forward(module: Any, xs: list[torch.Tensor], ys: Any) -> tuple[torch.Tensor, Any]:
        context = torch.autocast(device.type, dtype=half) if half is not None else contextlib.nullcontext()
        with context:
            result = module(*xs)
            head = result[index] if isinstance(result, tuple) else result
            return loss_fn(head, ys, getattr(model, "logdet", None))

    metrics: dict[str, Any] = {}  # the latest of each, as revstudio's checkpoint keeps them

    def emit(row: dict[str, Any]) -> None:
        if row["kind"] != "event":  # (a diverged row's loss is one step's, not the latest figure)
            metrics.update({k: row[k] for k in ("loss", "accuracy", "val_loss", "val_accuracy",
                                                *((scored, "val_" + scored) if scored else ())) if k in row})
        if rank != 0:
            return
        if json_rows:  # the rows of `revstudio train --json`: "time" in seconds since the start
            print(json.dumps({**row, "time": round(time.perf_counter() - t0, 4)}), flush=True)
        elif row["kind"] == "step":
            acc = f"  accuracy {row['accuracy']:.4f}" if "accuracy" in row else ""
            print(f"step {row['step']:>6}  loss {row['loss']:.6f}{acc}  lr {row['lr']:.3g}", flush=True)
        elif row["kind"] == "val":
            acc = f"  val_accuracy {row['val_accuracy']:.4f}" if "val_accuracy" in row else ""
            print(f"val  {row['step']:>6}  val_loss {row['val_loss']:.6f}{acc}", flush=True)

    def warn(row: dict[str, Any]) -> None:  # a diverged or not_learning row; in text, a warning line
        if json_rows:  # the row of `revstudio train --json`
            emit(row)
        elif rank == 0:
            print(f"warning: {row['message']}", file=sys.stderr, flush=True)

    def validate() -> None:
        if val is None or rank != 0:
            return
        model.eval()
        loss_sum, correct, count = 0.0, 0.0, 0
        with torch.no_grad():
            for start in range(0, len(next(iter(val[0].values()))), batch_size):
                idx = torch.arange(start, min(start + batch_size, len(next(iter(val[0].values())))))
                xs = [x.to(device) for x in noisy([val[0][k][idx] for k in INPUT_SPECS],
                                                  noise_seed(config["seed"], -1 - start, 0))]
                ys = None if val[1] is None else val[1][idx].to(device)
                loss, hits = forward(model, xs, ys)
                counted = loss_fn.counted(ys, len(idx))  # (per-step labels: the scored steps)
                loss_sum += float(loss) * counted
                correct += float(hits) if hits is not None else 0.0
                count += counted
        model.train()
        row = {"kind": "val", "step": step, "epoch": round(step / per_epoch, 4), "val_loss": loss_sum / count}
        if kind == "classification":
            row["val_accuracy"] = correct / count
        if scored:
            row["val_" + scored] = int(count)
        emit(row)
        if math.isfinite(row["val_loss"]) and row["val_loss"] < best.get("val_loss", math.inf):
            best.update(val_loss=row["val_loss"], step=step)  # the lowest so far: its weights replace the best file
            save_now(best_file(out))
        patience.see(row["val_loss"])

    def stops_early() -> bool:  # rank 0 validated: its say goes to every rank, which all stop at this step
        if config.get("patience") is None:
            return False
        say = torch.tensor([1.0 if patience.stop else 0.0], dtype=torch.float64, device=device)
        if world > 1:
            torch.distributed.broadcast(say, 0)
        return bool(say.item() > 0)

    def save_now(path: str | None = None) -> None:  # (a best file: rank 0's, from validate, no collective)
        rng = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            rng["cuda"] = torch.cuda.get_rng_state_all()
        ranks: list[Any] = [rng]
        if world > 1 and path is None:  # every rank's stream, gathered before rank 0 alone goes on to write
            ranks = [None] * world
            torch.distributed.all_gather_object(ranks, rng)
        if rank != 0:
            return
        save_checkpoint(path or out, {
            "step": step, "epoch": step // per_epoch, "model": model.state_dict(),
            "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
            "scaler": scaler.state_dict() if scaler is not None else None, "rng": rng,
            **({"rng_ranks": ranks} if world > 1 and path is None else {}), "best": dict(best) or None,
            "data": {"epoch": step // per_epoch, "position": step % per_epoch, "steps_per_epoch": per_epoch,
                     "order_seed": config["seed"], "base_dir": base_dir, **data_record},
            "config": dict(config), "graph": REVSTUDIO_PROJECT, "device": str(device),
            "versions": {"revstudio": EXPORTED_BY, "torch": str(torch.__version__).split("+")[0],
                         "python": platform.python_version()},
            "window": {"loss": window[0], "correct": window[1], "count": window[2]}, "metrics": dict(metrics),
            "val_pending": False,  # (it validates before it saves: none is ever cut short here)
            "divergence": watch.state(), "learning": learning.state(), "patience": patience.state()})

    window = [0.0, 0.0, 0.0, time.perf_counter(), 0]  # loss, correct, counted, since, samples
    if resume and isinstance(state.get("window"), dict):  # the step rows' running means since the last row
        window[:3] = [float(state["window"].get(key, 0.0)) for key in ("loss", "correct", "count")]
    early = False
    if resume and state.get("val_pending") and step < total:  # revstudio train's, stopped mid-validation
        validate()
        early = stops_early()
    order_epoch, perm = -1, torch.empty(0, dtype=torch.int64)
    while step < total and not early:
        epoch, position = divmod(step, per_epoch)
        if epoch != order_epoch:  # epoch e visits the data in an order fixed by the seed and e alone
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(config["seed"] * 1_000_003 + epoch))
            order_epoch = epoch
        optimizer.zero_grad(set_to_none=True)
        sums, labels = [0.0, 0.0, 0.0], None  # the step's loss x counted, hits, counted; its labels' classes
        for part in range(micro):  # a step's micro-batches are consecutive in the epoch's order
            at = position * micro + part
            idx = perm[at * batch:(at + 1) * batch][rank * local:(rank + 1) * local]
            xs = [x.to(device) for x in noisy([inputs[k][idx] for k in INPUT_SPECS],
                                              noise_seed(config["seed"], step * micro + part, rank))]
            ys = None if targets is None else targets[idx].to(device)
            # under torchrun only a step's last micro-batch all-reduces the summed gradients
            with net.no_sync() if world > 1 and part < micro - 1 else contextlib.nullcontext():
                loss, hits = forward(net, xs, ys)
                counted = loss_fn.counted(ys, len(idx))  # (per-step labels: the scored steps)
                weighed = loss
                if scored and world > 1:  # each rank's mean over its own scored steps, weighed to the global's
                    everyone = torch.tensor([float(counted)], dtype=torch.float64, device=device)
                    torch.distributed.all_reduce(everyone)  # (every rank's scored steps)
                    weighed = loss * (counted * world / max(float(everyone), 1.0))
                if micro > 1:
                    weighed = weighed / micro  # the step's gradient: the micro-batches' mean
                (scaler.scale(weighed) if scaler is not None else weighed).backward()
            sums[0] += float(loss.detach()) * counted
            sums[1] += float(hits) if hits is not None else 0.0
            sums[2] += float(counted)
            if classes:  # each class's count among the (scored) labels
                counts = torch.bincount(ys[ys >= 0].long(), minlength=classes)
                labels = counts if labels is None else labels + counts
        # reversible mode rebuilds each layer's input with its inverse, which can give NaN from a finite
        # output (an AffineCoupling whose scale underflows): caught before the step writes it into the
        # weights (a GradScaler skips overflowing steps itself)
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        grads_bad = scaler is None and bool(grads) and config["mode"] == "reversible" and \
            not bool(torch.stack(torch._foreach_norm(grads)).isfinite().all())
        stats = torch.tensor([*sums, float(grads_bad), float(bool(_STOP)),
                              *(labels.tolist() if labels is not None else [])], dtype=torch.float64)
        if world > 1:
            stats = stats.to(device)
            torch.distributed.all_reduce(stats)
        wider = "" if config["precision"] == "fp32" else f", or --precision fp32 (now {config['precision']})"
        if not math.isfinite(float(stats[0])):
            raise _Failed(f"the loss became non-finite (NaN or Inf) at step {step + 1}; the last checkpoint "
                          f"stays. Try a lower --lr (now {config['lr']:g}), --grad-clip{wider}")
        if float(stats[3]) > 0:
            raise _Failed(f"the gradients became non-finite (NaN or Inf) at step {step + 1} while the loss stayed "
                          "finite: reversible mode rebuilt non-finite values with a layer's inverse (`revstudio "
                          "gradcheck` on the project names it); the last checkpoint stays. Try --mode checkpoint, "
                          f"a clamp on the AffineCoupling nodes, or a lower --lr (now {config['lr']:g})")
        if config["grad_clip"] is not None:
            if scaler is not None:
                scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), config["grad_clip"])
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        scheduler.step()
        step += 1
        if watch.see(step, float(stats[0]) / float(stats[2])) and watch.warned is not None:
            watch.warned["message"] = diverged_text(watch.warned, config, kind)
            warn({"kind": "event", "event": "diverged", "step": step, "loss": watch.warned["loss"],
                  "start": watch.warned["start"], "message": watch.warned["message"]})
        if learning.see(step, float(stats[0]) / float(stats[2]), float(stats[1]), float(stats[2]),
                        total + 1 if learn_at is None else learn_at,  # (a short run: followed, not judged)
                        classes, [float(v) for v in stats[5:]]) and learning.warned is not None:
            learning.warned["message"] = not_learning_message(learning.warned, config["lr"], per_epoch)
            warn({"kind": "event", "event": "not_learning", "step": step, "loss": learning.warned["loss"],
                  "start": learning.warned["start"], "accuracy": learning.warned["accuracy"],
                  "chance": learning.warned["chance"], "message": learning.warned["message"]})
        window[0] += float(stats[0])
        window[1] += float(stats[1])
        window[2] += float(stats[2])
        window[4] += batch * micro
        if step % config["log_every"] == 0 or step == total:
            elapsed = max(time.perf_counter() - window[3], 1e-9)
            row = {"kind": "step", "step": step, "epoch": round(step / per_epoch, 4), "loss": window[0] / window[2],
                   "lr": float(optimizer.param_groups[0]["lr"]), "samples_per_s": round(window[4] / elapsed, 2)}
            if kind == "classification":
                row["accuracy"] = window[1] / window[2]
            if scored:
                row[scored] = int(window[2])
            emit(row)
            window = [0.0, 0.0, 0.0, time.perf_counter(), 0]
        if config["val_every"] and step % config["val_every"] == 0 and step != total:
            validate()
            early = stops_early()
            if early:
                break
        if config["checkpoint_every"] and step % config["checkpoint_every"] == 0 and step != total:
            save_now()
        if float(stats[4]) > 0:  # Ctrl+C or SIGTERM (on any rank): stop here, resumable
            break
    stopped = step < total and not early
    if not stopped and not early:
        validate()
    save_now()
    if stopped:
        emit({"kind": "event", "event": "stopped", "step": step, "checkpoint": out})
        if rank == 0 and not json_rows:
            print(f"stopped at step {step}; checkpoint {out}; continue it with the same options and "
                  f"--resume {shlex.quote(out)}", flush=True)
    for warned in (watch.warned, learning.warned):
        if rank == 0 and not json_rows and warned is not None:  # said again where a reader looks last
            print(f"warning: {warned['message']}", file=sys.stderr, flush=True)
    if rank == 0 and learn_at is None and not stopped and not learning.plainly_learns():  # (stderr, beside --json's rows)
        print(f"note: {unchecked_note(step)}", file=sys.stderr, flush=True)
    if rank == 0 and early:  # why it ended before its steps, and where the best weights are
        early_row = {"step": step, "patience": patience.patience, "min_delta": patience.min_delta,
                     "best_step": best.get("step"), "best_val_loss": best.get("val_loss")}
        print(early_words(early_row, best_file(out)), file=sys.stderr if json_rows else sys.stdout, flush=True)
    if rank == 0 and not json_rows and not stopped:
        print(f"saved the checkpoint to {out} (Model().load_state_dict(torch.load(path, map_location='cpu', "
              "weights_only=True)['model']))" + (f"; the lowest val_loss's weights (step {best['step']}) to "
                                                 f"{best_file(out)}" if best else ""))
    if world > 1:
        # The DDP wrapper (a reference cycle) must not outlive the group's registration: freeing
        # its Reducer later, with the GIL held, would destroy the gloo group there, whose join of
        # its worker threads waits on a thread that needs the GIL (a hang seen under torchrun).
        import gc

        del net
        gc.collect()
        torch.distributed.barrier()  # no rank tears gloo down while a peer still talks to it
        torch.distributed.destroy_process_group()  # frees the group with the GIL released
    return model

''' + OPTIONS_AND_MAIN
