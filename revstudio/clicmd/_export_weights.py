"""Trained weights beside an export: ``revstudio export RUN_DIR -o model.py`` (or ``--weights W``)
writes ``model.pt``, a plain ``state_dict`` the exported ``Model`` loads with ``weights_only=True``.

A run's ``checkpoints/last.pt`` also holds the optimizer, the RNG states, the data's paths and the
project: what a resume needs, not what a service shipping the model should carry. The weights are
read by the loader ``train --init`` uses (:func:`revstudio.training.checkpoint.weights_of`) and
checked against the graph before anything is written. An export of a run's weights is recorded in
the run folder (:mod:`revstudio.training.run_exports`).
"""
from __future__ import annotations

import os
from typing import Any

from revstudio.cli import CliError

from ._paths import folder_problem


def sources(file: str, weights: str | None) -> tuple[str, str | None, str]:
    """(the project to export, where its weights come from or None, the words that name them in a
    message): a run folder given as FILE is its ``project.revs`` and its last checkpoint's weights
    (``--weights`` names other ones). Anything else that is no project is refused as before."""
    from revstudio.training.runs import CHECKPOINT, SNAPSHOT, is_run_dir

    if file and os.path.isdir(file) and is_run_dir(file) and os.path.isfile(os.path.join(file, SNAPSHOT)):
        project = os.path.join(file, SNAPSHOT)
        if weights is not None:
            return project, weights, "--weights"
        if not os.path.isfile(os.path.join(file, CHECKPOINT)):
            raise CliError(f"{file}: this run has saved no checkpoint yet, so it has no trained weights to "
                           f"export (a run writes one every checkpoint_every steps and when it ends); export its project "
                           f"alone with revstudio export {project} -o OUT.py")
        return project, file, ""
    problem = folder_problem(file)
    if problem is not None:
        raise CliError(problem)
    if weights is not None and not weights:
        raise CliError("--weights: the path is empty; give a run folder, a checkpoint or a state_dict file")
    return file, weights, "--weights"


def weights_path(output: str) -> str:
    """Where the weights go: beside the code, its name with ``.pt`` (``model.py`` -> ``model.pt``)."""
    root, ext = os.path.splitext(output)
    return (root if ext == ".py" else output) + ".pt"


def refuse_output(output: str, target: str, source: str, project: str) -> None:
    """A CliError, before anything is read or written, where the weights cannot go to ``target``."""
    if os.path.exists(output) and not os.path.isfile(output):
        raise CliError(f"-o {output}: the trained weights are written beside the code, as NAME.pt, and "
                       f"{output} is no file in a folder; write the code to a file (-o model.py)")
    from revstudio.training.runs import CHECKPOINT

    for other in (source, os.path.join(source, CHECKPOINT), project):
        if os.path.realpath(target) == os.path.realpath(other):
            raise CliError(f"-o {output}: its weights would go to {target}, over the file they are read "
                           "from; choose another -o path")
    if os.path.isfile(target) and not os.access(target, os.W_OK):
        raise CliError(f"{target}: the file is read-only (the weights beside -o {output}); make it writable "
                       "(chmod u+w) or choose another -o path")


def fitting_weights(graph: Any, source: str, flag: str, project: str) -> tuple[dict[str, Any], int | None]:
    """The weights ``source`` holds as ``graph``'s model holds them once loaded (under the names of
    renamed nodes, in its number type), and the step of the checkpoint they came from (None for a
    state_dict); a CliError (exit 2) naming the file and the keys that do not fit."""
    import revstudio
    from revstudio.diagnostics.gradcheck import state_mismatch
    from revstudio.training import checkpoint as ckpt
    from revstudio.training.init_words import OWN_WEIGHTS

    try:  # (the loader train --init uses: a GPU machine's checkpoint is read onto the CPU)
        state, data = ckpt.weights_of(ckpt.weights_file(source))
    except ckpt.CheckpointError as exc:
        raise CliError(f"{flag} {exc}".strip()) from None
    step = (data or {}).get("step")
    model = revstudio.compile(graph, device="cpu")
    try:  # (the model's own loading: keys saved before a node was renamed move to its new name)
        model.load_state_dict(state)
    except RuntimeError as exc:
        why = state_mismatch(model.state_dict(), state) or str(exc).splitlines()[0]
        raise CliError(f"{flag} {source}: the weights do not fit the graph of {project} ({why}); nothing was "
                       "written. Export the project they were trained from (its run folder: revstudio export "
                       f"runs/NAME -o OUT.py), or: {OWN_WEIGHTS}".lstrip()) from None
    return model.state_dict(), step if isinstance(step, int) else None


def write(state: dict[str, Any], target: str) -> None:
    """``torch.save(state)`` to ``target`` atomically (the whole file or the old one); raises OSError."""
    import io

    import torch

    from revstudio.core.tempfiles import write_atomic

    buffer = io.BytesIO()
    torch.save({key: value.detach().cpu().contiguous() for key, value in state.items()}, buffer)
    write_atomic(target, buffer.getvalue())


def use_line(module: str, target: str) -> str:
    """The line that puts the weights into the exported ``Model``, run beside the code (where its
    ``import`` finds it, so the weights are named as they lie there)."""
    return (f"import torch; from {module} import Model; model = Model(); "
            f"model.load_state_dict(torch.load({os.path.basename(target)!r}, weights_only=True)); model.eval()")
