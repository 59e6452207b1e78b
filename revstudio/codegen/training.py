"""The optional training script of an export (``--with-training``).

It trains ``Model`` on synthetic data of the Input shapes: a frozen, randomly
initialised copy of the same network is the teacher, so the task is learnable
and needs no download. Steps, learning rate, batch size, device, mode and seed
are argparse options; the result is a ``state_dict`` checkpoint.
"""
from __future__ import annotations

from collections.abc import Sequence

_TRAINING = '''

def synthetic_batch(batch_size: int, generator: torch.Generator, device: str) -> tuple[torch.Tensor, ...]:
    """One batch of standard-normal inputs with the shapes of the Input nodes."""
    return tuple(
        torch.randn(batch_size, *shape, generator=generator, dtype=dtype).to(device)
        for shape, dtype in INPUTS.values()
    )


def train(
    steps: int = 100,
    lr: float = 1e-3,
    batch_size: int = 16,
    device: str = "cpu",
    mode: str = "reversible",
    seed: int = 0,
    out: str = "checkpoint.pt",
) -> Model:
    """Fit ``Model`` to a frozen random teacher of the same architecture; save a state_dict."""
    torch.manual_seed(seed)
    teacher = Model().to(device).eval()
    teacher.mode = "standard"
    model = Model().to(device).train()
    model.mode = mode
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    for step in range(1, steps + 1):
        inputs = synthetic_batch(batch_size, generator, device)
        with torch.no_grad():
            targets = _as_tuple(teacher(*inputs))
        outputs = _as_tuple(model(*inputs))
        loss = sum(F.mse_loss(o, t) for o, t in zip(outputs, targets))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step == 1 or step % max(1, steps // 10) == 0 or step == steps:
            print(f"step {step:>6}  loss {loss.item():.6f}")
    torch.save(model.state_dict(), out)
    print(f"saved the trained weights to {out} (load with Model().load_state_dict(torch.load(path)))")
    return model


def _as_tuple(value: torch.Tensor | tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    return value if isinstance(value, tuple) else (value,)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="optimizer steps (default 100)")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    parser.add_argument("--batch", type=int, default=16, help="batch size (default 16)")
    parser.add_argument(
        "--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cpu, cuda, cuda:1, ..."
    )
    parser.add_argument("--mode", choices=MODES, default="reversible", help="how to run the reversible parts")
    parser.add_argument("--seed", type=int, default=0, help="random seed for weights and data")
    parser.add_argument("--out", default="checkpoint.pt", help="where to save the trained state_dict")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.batch < 1 or args.lr <= 0:
        parser.error("--steps and --batch must be at least 1 and --lr positive")
    train(args.steps, args.lr, args.batch, args.device, args.mode, args.seed, args.out)
'''

MAIN_GUARD = '''

if __name__ == "__main__":
    main()
'''


def inputs_constant(inputs: Sequence[tuple[str, Sequence[int], str]]) -> str:
    """``INPUTS = {node id: (shape, dtype)}``: ids through ``repr``, dtypes from a closed set."""
    allowed = {"float32", "float64", "float16", "bfloat16"}
    rows = []
    for node_id, shape, dtype in inputs:
        dt = dtype if dtype in allowed else "float32"
        rows.append(f"    {node_id!r}: ({tuple(int(s) for s in shape)!r}, torch.{dt}),")
    return "INPUTS = {\n" + "\n".join(rows) + "\n}\n"


def training_source() -> str:
    """The functions ``synthetic_batch``, ``train`` and ``main`` (needs ``INPUTS`` and ``MODES``)."""
    return _TRAINING.lstrip("\n")
