"""Checkpoints: everything a run needs to continue, saved atomically, loaded safely.

A checkpoint is a ``torch.save`` of a plain dict (CONTRACTS section 4) made of
tensors, numbers, strings, lists and dicts only, so ``torch.load(...,
weights_only=True)`` reads it and no pickled code ever runs. It is written to
a temporary file beside the target, fsynced and renamed over it: a kill at any
moment leaves either the previous checkpoint or the new one, never half of one.
The RNG states (torch CPU and CUDA, plus the data order's generator) are saved
so that a resumed run draws the very numbers the uninterrupted one would have.
Under DDP every rank draws from its own stream (its own dropout masks on its own
shard): ``rng`` is rank 0's, ``rng_ranks`` every rank's, gathered to rank 0.
"""
from __future__ import annotations

import io
import os
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from revstudio.core.project_format import reads_as_project

from .init_words import OWN_WEIGHTS, init_misfit
from .parts import lr_factor
from .runs import write_atomic

if TYPE_CHECKING:
    from .config import TrainConfig

FORMAT = "revstudio-checkpoint"
VERSION = 1


class CheckpointError(Exception):
    """A checkpoint that cannot be read or does not belong to this run; the message names the file."""


def rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        cuda = list(state["cuda"])
        if len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda)


def rank_seed(seed: int, rank: int) -> int:
    """Rank ``rank``'s seed for what it draws after the shared initial weights: rank 0 keeps the
    run's seed (a 1-process run draws what it always did), the others get distinct ones. Within
    32 bits, which is all torch's CPU generator keeps: an odd stride makes every rank's differ."""
    return (int(seed) + int(rank) * 0x9E3779B9) % 2**32


def seed_rank(seed: int, rank: int) -> None:
    """Give this rank its own random stream (rank 0's is left as it is)."""
    if rank:
        torch.manual_seed(rank_seed(seed, rank))


def gather_rng(rank: int, world: int) -> list[dict[str, Any]]:
    """Every rank's RNG state, in rank order (a collective: every rank calls it at the same step)."""
    if world <= 1:
        return [rng_state()]
    import torch.distributed as tdist

    states: list[Any] = [None] * world
    tdist.all_gather_object(states, rng_state())
    return states


def resume_rng(resume: dict[str, Any], rank: int, seed: int) -> None:
    """Put back this rank's saved RNG state. A checkpoint without this rank's (written before
    they were saved, or by a run of fewer processes) gives ranks above 0 a stream of their own
    from the seed, the rank and the step: such a resume cannot repeat an uninterrupted run."""
    states = resume.get("rng_ranks")
    if rank == 0:
        set_rng_state(resume["rng"])
    elif isinstance(states, list) and rank < len(states) and isinstance(states[rank], dict):
        set_rng_state(states[rank])
    else:
        torch.manual_seed((rank_seed(seed, rank) + int(resume["step"])) % 2**32)


def save(path: str, payload: dict[str, Any]) -> None:
    """Write ``payload`` (with the format header and the CPU thread count it was trained on added) to
    ``path`` atomically."""
    data = {"format": FORMAT, "version": VERSION, "threads": torch.get_num_threads(), **payload}
    buffer = io.BytesIO()
    torch.save(data, buffer)
    write_atomic(path, buffer.getvalue())


RESUMABLE = {"step": int, "model": dict, "optimizer": dict, "scheduler": dict, "rng": dict}


def require_resumable(data: dict[str, Any], path: str) -> None:
    """A CheckpointError naming the first part a run needs to continue that ``data`` lacks."""
    for key, kind in RESUMABLE.items():
        if not isinstance(data.get(key), kind):
            raise CheckpointError(f"{path}: a revstudio checkpoint without its {key!r}, so the run cannot "
                                  "continue from it; it was cut down or written by another tool")
    if not isinstance(data["rng"].get("torch"), torch.Tensor):
        raise CheckpointError(f"{path}: a revstudio checkpoint without its random state ('rng'), so the run "
                              "cannot continue from it exactly")
    ranks = data.get("rng_ranks")
    if ranks is not None and not (isinstance(ranks, list) and
                                  all(isinstance(r, dict) and isinstance(r.get("torch"), torch.Tensor)
                                      for r in ranks)):
        raise CheckpointError(f"{path}: a revstudio checkpoint whose ranks' random states ('rng_ranks') are "
                              "damaged, so the run cannot continue from it exactly")


def load(path: str, map_location: Any = "cpu") -> dict[str, Any]:
    """Read a checkpoint with ``weights_only=True``; a bad file is a CheckpointError naming it. Read onto
    the CPU (the default), a file a GPU machine wrote loads on any machine, and ``saved_on`` lists the
    devices its tensors were saved from (what :func:`trained_on` falls back on)."""
    if not os.path.isfile(path):
        raise CheckpointError(f"{path}: no checkpoint there (the run saved none yet?)")
    seen: set[str] = set()

    def onto_cpu(storage: Any, location: str) -> Any:
        seen.add(str(location))
        return storage  # (torch made it on the CPU; returning it keeps it there)

    try:
        with warnings.catch_warnings():
            # torch warns about a file's pickle protocol on its way to refusing it: a stray
            # "UserWarning ... return Unpickler(file ...)" above our own one-line message
            warnings.simplefilter("ignore", UserWarning)
            data = torch.load(path, map_location=onto_cpu if map_location == "cpu" else map_location,
                              weights_only=True)
    except Exception as exc:  # truncated, not a torch file, or holding objects we refuse to unpickle
        # Only torch's first sentence: the rest of its weights-only message advises weights_only=False,
        # which would run the file's pickled code.
        first = str(exc).splitlines()[0].split(". ")[0].rstrip(".") if str(exc) else ""
        what = f"{type(exc).__name__}: {first}" if first else ("an empty file" if os.path.getsize(path) == 0
                                                              else type(exc).__name__)
        if reads_as_project(path):
            raise CheckpointError(f"{path}: is a project, not trained weights; give a run folder or a checkpoint "
                                  f"file (RUN/checkpoints/last.pt), after training it ('revstudio train {path}') "
                                  "where it has no run yet") from None
        raise CheckpointError(f"{path}: not a readable checkpoint ({what}); it is "
                              "damaged, cut short, or was not written by revstudio train") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a revstudio checkpoint (no 'format': '{FORMAT}')")
    if data.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint version {data.get('version')!r}; this revstudio reads "
                              f"version {VERSION}")
    if seen:
        data["saved_on"] = sorted(seen)
    return data


def trained_on(data: dict[str, Any]) -> str | None:
    """The device a checkpoint's run last trained on: its ``device`` (recorded since checkpoints cross
    machines), else the one its tensors were saved from (``saved_on``: a GPU's where any was), else None."""
    device = data.get("device")
    if isinstance(device, str) and device:
        return device
    saved = [d for d in data.get("saved_on") or () if isinstance(d, str)]
    return next((d for d in saved if d != "cpu"), saved[0] if saved else None)


def device_changed_note(then: object, now: str) -> str | None:
    """Words for a resume on another device than the one the checkpoint's run last trained on (``then``;
    None for a checkpoint that does not tell), else None. Weights and optimizer moments are moved to the
    run's device; a random state of the other device cannot be put back here. (Copied verbatim into an
    exported training script.)"""
    if not isinstance(then, str) or not then:
        return None
    first = [d if ":" in d or d == "cpu" else f"{d}:0" for d in (then, now)]  # (a bare "cuda" is cuda:0)
    if first[0] == first[1]:
        return None
    was, kind = then.split(":")[0], now.split(":")[0]
    if was == kind:
        return (f"the run trained on {then} before and goes on on {now}: its weights and optimizer state are "
                f"moved there; the losses from here may differ in their last bits from those of a run that "
                f"stayed on {then}")
    lost = (f"its {was.upper()} random state cannot be restored on {now}" if was != "cpu" else
            f"the checkpoint holds no {kind.upper()} random state")
    return (f"the run trained on {then} before and goes on on {now}: its weights, optimizer moments and schedule "
            f"are moved there and go on, but {lost}, so dropout masks and other random draws from here are not "
            f"those of an uninterrupted run on {then} (nor are the last bits of its arithmetic): the resumed run "
            "is not reproducible bit for bit")


def restore(resume: dict[str, Any], cfg: TrainConfig, model: Any, optimizer: Any, scheduler: Any,
            scaler: Any, source: str) -> None:
    """Put a checkpoint's states into the run's objects; a TrainError (exit 2) naming what does not
    fit when the checkpoint was written for another graph or another optimizer. A learning rate,
    weight decay or momentum given for the resumed run replaces the checkpoint's from here on."""
    from revstudio.diagnostics.gradcheck import state_mismatch

    from .parts import TrainError

    saved = resume.get("config") or {}
    if saved.get("optimizer", cfg.optimizer) != cfg.optimizer:
        raise TrainError(f"{source}: the run trained with --optimizer {saved['optimizer']}, whose state the "
                         f"checkpoint holds; resume it with {saved['optimizer']} (or start a new run to use "
                         f"{cfg.optimizer})", 2)
    why = state_mismatch(model.state_dict(), resume["model"])
    if why:
        raise TrainError(f"{source}: the checkpoint does not fit the run's graph ({why}); was it copied from "
                         "another run?", 2)
    model.load_state_dict(resume["model"])
    try:
        optimizer.load_state_dict(resume["optimizer"])
        scheduler.load_state_dict(resume["scheduler"])
        if scaler is not None and resume.get("scaler"):
            scaler.load_state_dict(resume["scaler"])
    except (ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise TrainError(f"{source}: the checkpoint's optimizer or schedule state does not fit this run ({exc}); "
                         "resume with the run's own --optimizer, or start a new run", 2) from None
    if saved.get("lr") != cfg.lr:  # (left alone otherwise: the resumed steps stay bit for bit the same)
        scheduler.base_lrs = [cfg.lr for _ in optimizer.param_groups]
        for group, factor in zip(optimizer.param_groups, scheduler.lr_lambdas):
            group["initial_lr"] = cfg.lr
            group["lr"] = cfg.lr * factor(scheduler.last_epoch)
        scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]
    for key in ("weight_decay", "momentum"):
        if saved.get(key) != getattr(cfg, key):
            for group in optimizer.param_groups:
                if key in group:
                    group[key] = getattr(cfg, key)


def changed_settings(resume: dict[str, Any] | None, cfg: TrainConfig) -> dict[str, list[Any]]:
    """``{key: [the checkpoint's value, this run's]}`` for each setting a resumed run changes (a new
    --lr, more --steps): the ``started`` row records it, since config.json then holds only the new."""
    saved = (resume or {}).get("config")
    if not isinstance(saved, dict):
        return {}
    now = cfg.full_section()
    return {k: [saved[k], now[k]] for k in now if k != "version" and k in saved and saved[k] != now[k]}


def schedule_note(saved: Any, step: int, schedule: str, warmup: int, lr: float, total: int,
                  steps_per_epoch: int) -> str | None:
    """Why a resumed run's losses will not be those of a run started with its new length: a ``cosine`` or
    ``onecycle`` schedule spans the run's total steps, and a resume that changes them (more ``--steps``)
    re-plans it from the next step, so the learning rate jumps. ``saved``: the checkpoint's config, ``step``
    its step; None where the schedule is unchanged. (Copied verbatim into an exported training script.)"""
    if not isinstance(saved, dict) or schedule not in ("cosine", "onecycle") or saved.get("schedule") != schedule:
        return None
    try:
        steps, epochs = saved.get("steps"), saved.get("epochs")
        before = int(steps) if steps is not None else int(epochs or 1) * steps_per_epoch
        then = float(saved.get("lr", lr)) * lr_factor(schedule, warmup, before)(step)
    except (TypeError, ValueError):
        return None
    if before == total:
        return None
    now = lr * lr_factor(schedule, warmup, total)(step)
    return (f"the {schedule} schedule spans the run's total steps, which this resume changes ({before} -> "
            f"{total}): step {step + 1} trains at lr {now:.3g} where the {before}-step schedule had it at "
            f"{then:.3g}, so the losses from here are not those of a run started with {total} steps")


def data_record(data: Any) -> dict[str, Any]:
    """What a checkpoint keeps of the data a run trains on: its one-line description and a digest
    of every training and validation tensor (``sources.data_digest``)."""
    from .sources import data_digest

    splits = [None if split is None else (split.inputs, split.targets)
              for split in (getattr(data, "train", None), getattr(data, "val", None))]
    describe = data.describe() if hasattr(data, "describe") else str(getattr(data, "source", ""))
    uint8 = getattr(data, "uint8", None)  # (None: no uint8 inputs, so no scale to keep to on resume)
    digest = getattr(data, "digest", None)  # (mapped data: made by the pass that checked them, not read again)
    return {"describe": describe, "digest": digest or data_digest(splits),
            "uint8_scaled": bool(getattr(data, "scaled", True)) if uint8 else None}


def scale_mismatch(resume: dict[str, Any] | None, data: Any) -> str | None:
    """Why a checkpoint cannot go on with these data's uint8 inputs: the run learned them at the other
    scale (``training.scale_uint8`` changed, or a run from before uint8 inputs were scaled, which
    trained on raw 0..255), else None. The weights of a network tuned to inputs in [0, 1] fed
    values 255 times larger (or the reverse) do not continue the run; they start it over badly."""
    if resume is None or not getattr(data, "uint8", None):
        return None
    record = resume.get("data")
    saved: dict[str, Any] = record if isinstance(record, dict) else {}
    was = saved.get("uint8_scaled", False)  # (a checkpoint without the key predates the scaling: raw)
    if was is None or bool(was) == bool(data.scaled):
        return None
    then, now = ("scaled to [0, 1]", "raw 0..255") if was else ("raw 0..255", "scaled to [0, 1]")
    flag = "--scale-uint8" if was else "--no-scale-uint8"
    older = "" if "uint8_scaled" in saved else " (it predates revstudio's scaling of uint8 inputs)"
    return (f"the run trained on its uint8 inputs {then}{older}, this resume would feed them {now}; its weights "
            f"learned the other scale: resume with {flag} (training.scale_uint8 "
            f"{'true' if was else 'false'}), or start a new run")


def data_changed(resume: dict[str, Any] | None, record: dict[str, Any]) -> list[str] | None:
    """``[the data the checkpoint's run trained on, this run's]`` when a resumed run's data differ
    (the file was rewritten, or other data named), else None (also for checkpoints from before
    the digest was kept)."""
    saved = ((resume or {}).get("data") or {})
    if not isinstance(saved, dict) or "digest" not in saved or saved["digest"] == record["digest"]:
        return None
    old, new = str(saved.get("describe", "")), record["describe"]
    return [old, new + (" (the same sizes, other values)" if old == new else "")]


def start_facts(resume: dict[str, Any] | None, record: dict[str, Any], cfg: TrainConfig,
                device: str) -> dict[str, Any]:
    """The ``started`` row's ``data_changed`` (:func:`data_changed`), ``threads`` (the CPU threads of
    each process), ``threads_notes`` (a resume on another count, a count above the CPUs: words) and
    ``device_notes`` (a resume on another ``device`` than the run's last: :func:`device_changed_note`)."""
    from .threads import over_note, threads_changed_note

    now = torch.get_num_threads()
    notes = [threads_changed_note((resume or {}).get("threads"), now) if resume is not None else None,
             over_note(cfg.threads)]
    moved = device_changed_note(trained_on(resume), device) if resume is not None else None
    return {"data_changed": data_changed(resume, record), "threads": now,
            "threads_notes": [n for n in notes if n], "device_notes": [moved] if moved else []}


def data_changed_note(changed: list[str]) -> str:
    """The words for ``data_changed``'s pair: ``revstudio train``'s ``note:`` line, and the exported
    script's (which copies this function)."""
    then, now = changed
    return (f"the data are not those the run trained on before (then: {then}; now: {now}); "
            "the epochs and the validation set from here on are not the ones it had")


def bare_state_dict(path: str) -> dict[str, Any] | None:
    """The file's tensors where it holds a bare state_dict (``torch.save(model.state_dict(), path)``),
    else None; read with ``weights_only=True`` (call it after :func:`load` refused the file as not
    a revstudio checkpoint, so it is a readable torch file)."""
    data = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(data, dict) and data and all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                               for k, v in data.items()):
        return data
    return None


def weights_of(path: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the model weights, the checkpoint or None) of a file of weights: a revstudio checkpoint
    (its ``model``) or a bare state_dict; a CheckpointError naming the file otherwise."""
    try:
        data = load(path)
    except CheckpointError as exc:
        if "not a revstudio checkpoint" not in str(exc):
            raise
        plain = bare_state_dict(path)
        if plain is None:
            raise CheckpointError(f"{exc} nor a state_dict (a dict of name -> tensor); {OWN_WEIGHTS}") from None
        return plain, None
    model = data.get("model")
    if not isinstance(model, dict) or not model:
        raise CheckpointError(f"{path}: a revstudio checkpoint without model weights; it may be damaged")
    return model, data


class Best:
    """The run's best validation so far (``{"val_loss", "step"}``), which ``checkpoints/best.pt`` holds the
    weights of: carried in every checkpoint, so a resumed run goes on comparing with the best before it.
    best.pt is rank 0's alone, written without gathering the ranks' random states (last.pt's collective):
    it holds rank 0's ``rng`` and no ``rng_ranks``."""

    def __init__(self, resume: dict[str, Any] | None) -> None:
        saved = (resume or {}).get("best")
        self.val_loss: float | None = None
        self.step: int | None = None
        if isinstance(saved, dict) and isinstance(saved.get("val_loss"), (int, float)):
            self.val_loss, self.step = float(saved["val_loss"]), saved.get("step")

    def record(self, val_loss: Any, step: int) -> bool:
        """Keep ``val_loss`` (at ``step``) where it beats the best so far (a first finite one does, NaN
        never); whether it did, so that best.pt is written."""
        import math

        better = isinstance(val_loss, (int, float)) and math.isfinite(val_loss) and (
            self.val_loss is None or val_loss < self.val_loss)
        if better:
            self.val_loss, self.step = float(val_loss), int(step)
        return bool(better)

    def fields(self, best: bool) -> dict[str, Any]:
        """A ``checkpoint`` row's ``best`` (whether it wrote best.pt) and, for best.pt, its ``val_loss``."""
        return {"best": True, "val_loss": self.val_loss} if best else {"best": False}

    def state(self) -> dict[str, Any] | None:
        return None if self.val_loss is None else {"val_loss": self.val_loss, "step": self.step}


def weights_file(path: str) -> str:
    """The file of weights ``path`` names: a run folder's last checkpoint (``--init RUN`` and ``evaluate
    RUN`` take its last weights, not its best), else the file itself."""
    return os.path.join(path, "checkpoints", "last.pt") if os.path.isdir(path) else path


def start_from(weights: dict[str, Any], model: Any, source: str,
               misfit: Callable[[str, str], str] = init_misfit) -> None:
    """Put the weights a new run starts from (``--init``; a run ``revstudio evaluate`` scores) into its
    model; a TrainError (exit 2) naming what does not fit (``misfit(source, why)``'s words) where they
    are another graph's or another model's."""
    from revstudio.diagnostics.gradcheck import state_mismatch

    from .parts import TrainError

    why = state_mismatch(model.state_dict(), weights)
    if why:
        raise TrainError(misfit(source, why), 2)
    model.load_state_dict(weights)


def run_training(data: dict[str, Any]) -> dict[str, Any] | None:
    """The ``training`` section of the project snapshot a checkpoint carries (the settings its run
    trained with: ``--data`` and the other overrides included, data paths absolute), or None."""
    import json

    try:
        section = json.loads(str(data.get("graph"))).get("training")
    except (ValueError, AttributeError):
        return None
    return section if isinstance(section, dict) else None
