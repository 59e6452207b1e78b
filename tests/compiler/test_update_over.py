"""A coupling's backward writes its pair update over F's output where nothing else holds it.

``runtime_streams.sole`` says whether F's output is memory its caller alone holds (no view,
nothing F's graph saved, no module's buffer, no second name); ``update_over`` then uses it as
one of TwoSum's temporaries. The update must be the usual one bit for bit, and the runtime
must never take that path for an output somebody else can still read (see also
tests/diagnostics/test_fresh_estimate.py: F ending in each kind of layer).
"""
from __future__ import annotations

import hashlib

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.compiler import runtime_steps  # noqa: E402
from revstudio.compiler.runtime_streams import Pair, _update, over_rows, sole, update_over  # noqa: E402
from revstudio.core.generate import revnet_chain  # noqa: E402
from revstudio.diagnostics.memory import LiveTensorTracker  # noqa: E402

SHAPES = [(1, (4, 16, 16)), (2, (8, 4, 4)), (16, (4, 16, 16)), (32, (8, 8, 8)), (7, (16, 32, 32)),
          (64, (4, 16, 16)), (128, (32, 16, 16))]


def _pair(shape: tuple[int, ...], seed: int) -> Pair:
    g = torch.Generator().manual_seed(seed)
    hi = torch.randn(*shape, generator=g) * 3
    lo = (torch.randn(*shape, generator=g) * 1e-8).float()
    return Pair(hi, lo)


@pytest.mark.parametrize("batch,shape", SHAPES)
@pytest.mark.parametrize("sign", [1, -1])
def test_the_update_over_f_is_the_usual_update_bit_for_bit(batch: int, shape: tuple[int, ...], sign: int) -> None:
    full = (batch, *shape)
    a, b = _pair(full, 0), _pair(full, 0)
    f = torch.randn(*full, generator=torch.Generator().manual_seed(1)) * 5
    _update(a, f.clone(), sign, True)
    update_over(b, f.clone(), sign)
    assert torch.equal(a.hi, b.hi) and torch.equal(a.lo, b.lo)


def test_the_update_over_f_reads_channels_last_streams_as_they_are() -> None:
    full = (16, 8, 8, 8)
    a, b = _pair(full, 2), _pair(full, 2)
    b = Pair(b.hi.contiguous(memory_format=torch.channels_last), b.lo.contiguous(memory_format=torch.channels_last))
    f = torch.randn(*full)
    _update(a, f.clone(), -1, True)
    update_over(b, f.contiguous(memory_format=torch.channels_last), -1)
    assert torch.equal(a.hi, b.hi) and torch.equal(a.lo, b.lo)


@pytest.mark.parametrize("batch,shape", SHAPES)
def test_the_update_over_f_takes_no_more_than_fs_bytes(batch: int, shape: tuple[int, ...]) -> None:
    """Two temporaries of at most half the batch each (one piece where the usual update takes
    one, and then fewer bytes than its three)."""
    y = _pair((batch, *shape), 3)
    f = torch.randn(batch, *shape)
    with LiveTensorTracker() as tracker:
        before = tracker.live_bytes()
        update_over(y, f, -1)
        extra = tracker.peak_bytes - before
    row = f[0].numel() * 4
    assert extra == 2 * over_rows(y.hi) * row
    assert extra <= max(f.numel() * 4, 2 * batch * row if over_rows(y.hi) == batch else 0)


def test_sole_knows_who_else_holds_an_output() -> None:
    x = torch.randn(4, 3, 8, 8, requires_grad=True)
    conv = torch.nn.Conv2d(3, 3, 3, padding=1)
    assert sole(conv(x))  # a convolution saves its input, not its output
    assert not sole(torch.relu(conv(x)))  # ReLU's backward reads its result
    assert not sole(torch.sigmoid(conv(x)))
    kept = conv(x)
    alias = kept.detach()
    assert not sole(kept)  # another tensor shares its memory
    del alias
    view = conv(x)[1:]
    assert not sole(view)  # a view
    assert not sole(conv.weight) and not sole(x)  # a parameter, a leaf the caller passed
    held = conv(x)
    holder = [held]
    assert not sole(held)  # a second name
    del holder

    class SavesOutput(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):  # type: ignore[no-untyped-def, override]
            out = a * 2
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):  # type: ignore[no-untyped-def, override]
            return g * 2

    assert not sole(SavesOutput.apply(conv(x)))


def test_saved_tensor_hooks_decide_by_what_they_keep() -> None:
    """A user's hooks that keep a copy of what autograd saves leave the output unheld; hooks
    that keep the tensor itself (save_on_cpu on a CPU tensor) hold it."""
    x = torch.randn(4, 3, 8, 8, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        assert sole(torch.relu(x * 1.0))
    with torch.autograd.graph.save_on_cpu():
        assert not sole(torch.relu(x * 1.0))


def _grad_hash(model: torch.nn.Module) -> str:
    h = hashlib.sha1()
    for p in model.parameters():
        assert p.grad is not None
        h.update(p.grad.numpy().tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("channels,size,batch", [(8, 8, 32), (4, 4, 2), (8, 16, 16)])
def test_a_revnet_takes_the_path_and_its_gradients_do_not_change(monkeypatch: pytest.MonkeyPatch,
                                                                 channels: int, size: int, batch: int) -> None:
    torch.manual_seed(0)
    model = compile_graph(revnet_chain(3, channels=channels, size=size), device="cpu")
    model.train()
    x = torch.randn(batch, channels, size, size)
    w = torch.randn(batch, 10)  # the chain's classifier
    taken = []
    real = runtime_steps.update_over

    def counted(*args: object) -> object:
        taken.append(1)
        return real(*args)  # type: ignore[arg-type]

    hashes = []
    for over in (True, False):
        monkeypatch.setattr(runtime_steps, "update_over", counted)
        if not over:
            monkeypatch.setattr(runtime_steps, "sole", lambda f: False)
        model.zero_grad(set_to_none=True)
        (model(x) * w).sum().backward()
        hashes.append(_grad_hash(model))
        if over:
            assert taken, "the backward never wrote over F's output"
            taken.clear()
        else:
            assert not taken
    assert hashes[0] == hashes[1]
