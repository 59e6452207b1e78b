"""The words of ``--init`` (a run from weights of one's own): revstudio train says them, and the
exported training script copies these functions verbatim so it says the same. No torch here, so the
CLI refuses a bad path at once."""
from __future__ import annotations

# What a file of weights of one's own is, and how to make one (gradcheck --checkpoint, train --init).
OWN_WEIGHTS = ("weights of another model (plain PyTorch, MemCNN, RevLib) load into rs.compile's model with "
               "rs.load_weights, and torch.save(model.state_dict(), path) then writes a file this takes")


def no_init_file(path: str) -> str:
    """The words for an ``--init`` path that is not there (revstudio train's and the exported script's)."""
    return (f"--init {path}: no such file or folder; give a state_dict file "
            "(torch.save(model.state_dict(), path)), a checkpoint or a run folder")


def init_misfit(source: str, why: str) -> str:
    """The words for ``--init`` weights that do not fit the model (revstudio train's and the script's)."""
    return f"--init {source}: the weights do not fit the run's graph ({why}); {OWN_WEIGHTS}"


INIT_AND_RESUME = ("--init starts a new run from given weights and --resume continues a run from its own; "
                   "give one of them")
INIT_HELP = ("start a new run from these weights instead of fresh ones: a state_dict file "
             "(torch.save(model.state_dict(), path)), a checkpoint or a run folder (its weights only)")
