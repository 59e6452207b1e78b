"""The estimate on random reversible sequence models (``benchmarks/random_revnets.py``'s
``random_seqnet``: 1-D convolutions, BiRNNs in F and G, Glow steps on sequences), and on the
single-layer F they found wrong; that they are valid is ``test_random_revnets``'s."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from random_revnets import random_seqnet  # noqa: E402

from revstudio.core.generate import Builder, wired_block  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402


def _single_layer_f(shape: list[int]) -> Graph:
    """A Conv stem, then one wired block whose F and G are a single Conv each, then a head."""
    b = Builder("single-layer-f")
    b.node("Input", "x", shape=shape)
    src = b.chain("x.out", b.node("Conv", "stem", out_channels=16, kernel_size=3, padding="same"))
    src = wired_block(b, src, "w", 16, lambda bb, s, prefix, c: bb.chain(
        s, bb.node("Conv", f"{prefix}_0", out_channels=c, kernel_size=3, padding="same")))
    b.chain(src, b.node("Flatten", "flat"), b.node("Linear", "head", out_features=5), b.node("Output", "logits"))
    return b.done()


@pytest.mark.parametrize(("shape", "before"), [([12, 8], 0.0932), ([12, 8, 8], 0.0345)])
def test_a_single_layer_f_lets_go_of_its_input_before_x2s_gradient_is_summed(shape: list[int],
                                                                              before: float) -> None:
    """F is one Conv: the gradient of its output is y1's, which x1's gradient shares, so it is
    not gone when x2's two gradients are summed into a new buffer. The Conv's saved input (the
    stem's output, which x2 views) is: autograd releases a node's saved tensors before it hands
    on its gradients. Counting it there put standard mode ``before`` over (random sequence
    models 100 and 104 at batch 8: +4.0 % and +0.7 %)."""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    assert abs(estimate_errors(_single_layer_f(shape), 8, ("standard",))["standard"]) < 0.002, before


@pytest.mark.parametrize(("seed", "before"), [(57, -0.1053), (91, -0.0795)])
def test_a_region_keeps_the_gradient_a_flattening_linear_hands_it(seed: int, before: float) -> None:
    """Random sequence models 57 and 91 at batch 8: the region ends in a Reshape the head's Linear
    flattens, so the gradient autograd hands the region is a view of the matrix product's; the
    runtime releases only a gradient that owns its storage, so this one lives through the
    region's backward. Counted as released, reversible mode was ``before`` under."""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    assert abs(estimate_errors(random_seqnet(seed), 8, ("reversible",))["reversible"]) < 0.005, before


@pytest.mark.parametrize(("cell", "before"), [("rnn_tanh", 0.3659), ("gru", 0.2339)])
def test_a_loop_of_cells_birnn_keeps_its_input_itself_at_a_batch_of_one(cell: str, before: float) -> None:
    """A GRU or plain RNN runs as a loop of cells on the CPU; its two time-major copies of the
    input are views of it at a batch of one, so it keeps the input itself and its backward reads
    no copies. Counted as copies, standard mode was ``before`` over (16 steps of 12 features)."""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    b = Builder("loop-cell")
    b.node("Input", "x", shape=[12, 16])
    b.chain("x.out", b.node("BiRNN", "rnn", hidden_size=4, cell=cell), b.node("Flatten", "flat"),
            b.node("Linear", "head", out_features=5), b.node("Output", "logits"))
    assert abs(estimate_errors(b.done(), 1, ("standard",))["standard"]) < 0.025, before


def test_a_loop_of_cells_birnn_in_f_ends_its_backward_beside_y1s_gradient() -> None:
    """Random sequence model 59 at batch 1: F is a lone plain RNN on x2, a view of the stem's
    output. At its backward's end torch makes the stacked projection gradients, the input
    weights' and the input's gradient (the step's peak), then frees the stack and the stem's
    output, then sums the two directions' input gradients. The gradient of F's output is y1's,
    handed on to x1, so it is not gone there. The figure held the stack and the sum at one moment
    with that gradient gone: standard and checkpoint mode were 1.5 % under, reversible 1.9 %."""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    errors = estimate_errors(random_seqnet(59), 1, ("standard", "reversible", "checkpoint"))
    assert all(0 <= e < 0.005 for e in errors.values()), errors


@pytest.mark.parametrize(("cell", "before"), [("gru", 0.0568), ("rnn_tanh", 0.0717)])
def test_a_recompute_stops_inside_a_loop_of_cells_birnn(cell: str, before: float) -> None:
    """A wired block whose F and G are a lone GRU or plain RNN, in checkpoint mode at batch 8:
    the recompute stops at the BiRNN's last saved tensor, in its last direction's last step,
    before the second direction's outputs are stacked and joined. Counted with its whole forward
    work and outputs, the estimate was ``before`` over. (With a Conv after it, which saves the
    BiRNN's output, the recompute runs the BiRNN whole: that stays as it was.)"""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    for conv in (False, True):
        assert abs(estimate_errors(_loop_cell_f(cell, conv), 8, ("checkpoint",))["checkpoint"]) < 0.002, (conv, before)


@pytest.mark.parametrize(("batch", "before"), [(1, -0.0169), (2, -0.0204), (8, -0.0260)])
def test_a_wired_fs_rebuild_holds_its_forward_work(batch: int, before: float) -> None:
    """Reversible mode of a wired block whose F and G are a lone GRU: a step's backward rebuilds
    F with its graph, and the GRU's forward holds its input projections and its directions'
    stacks beside that graph, more than the update after it holds. The moment was priced as F's
    graph and the update's temporaries: ``before`` under."""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    assert abs(estimate_errors(_loop_cell_f("gru", False), batch, ("reversible",))["reversible"]) < 0.002, before



@pytest.mark.parametrize(("f", "g", "before"), [("conv", "gru", -0.0277), ("gru", "conv", -0.0260)])
def test_a_coupling_nodes_body_rebuild_holds_its_forward_work(f: str, g: str, before: float) -> None:
    """As for a wired F, an AdditiveCoupling node's F or G that is a lone GRU holds its input
    projections and its directions' stacks as its rebuild runs forward, more than its update:
    reversible mode at batch 8 was ``before`` under (random sequence models 22, 41 and 119,
    -2.5 to -3.1 %)."""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    from revstudio.core.generate import _body

    b = Builder("coupling-node-gru")
    b.node("Input", "x", shape=[12, 16])
    src = b.chain("x.out", b.node("Conv", "stem", out_channels=16, kernel_size=3, padding="same"))
    src = b.chain(src, b.node("AdditiveCoupling", "c1", f="f1", g="g1"))
    b.chain(src, b.node("Flatten", "flat"), b.node("Linear", "head", out_features=5), b.node("Output", "logits"))
    graph = b.done()
    for name, kind in (("f1", f), ("g1", g)):
        def make(bb: Builder, s: str, name: str = name, kind: str = kind) -> str:
            if kind == "gru":
                return bb.chain(s, bb.node("BiRNN", f"{name}_0", hidden_size=4, cell="gru"))
            return bb.chain(s, bb.node("Conv", f"{name}_0", out_channels=8, kernel_size=3, padding="same"),
                            bb.node("Activation", f"{name}_1", fn="relu"),
                            bb.node("Conv", f"{name}_2", out_channels=8, kernel_size=3, padding="same"))
        graph.groups[name] = _body(name, make)
    assert abs(estimate_errors(graph, 8, ("reversible",))["reversible"]) < 0.002, before


@pytest.mark.parametrize(("seed", "before"), [(6, -0.0445), (42, -0.0540), (103, -0.0378)])
def test_a_regions_backward_ends_with_its_first_split_gathering_the_halves(seed: int, before: float) -> None:
    """Random sequence models whose F and G are a Linear over the whole sequence (their weights'
    gradients most of the step), at batch 32: the region's backward ends with its first split's
    (a wired block's Split, an AdditiveCoupling node's, a spliced Group's first), which gathers
    the rebuilt halves into one stream beside them and joins their gradients into the input's,
    with every weight's gradient made. Uncounted, reversible mode was ``before`` under."""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    assert abs(estimate_errors(random_seqnet(seed), 32, ("reversible",))["reversible"]) < 0.002, before

def _loop_cell_f(cell: str, conv: bool) -> Graph:
    """A Conv stem, a wired block whose F and G are a BiRNN of ``cell`` (then a 1x1 Conv), a head."""
    b = Builder("loop-cell-f")
    b.node("Input", "x", shape=[12, 16])
    src = b.chain("x.out", b.node("Conv", "stem", out_channels=16, kernel_size=3, padding="same"))

    def body(bb: Builder, s: str, prefix: str, c: int) -> str:
        nodes = [bb.node("BiRNN", f"{prefix}_0", hidden_size=4, cell=cell)]
        if conv:
            nodes.append(bb.node("Conv", f"{prefix}_1", out_channels=c, kernel_size=1))
        return bb.chain(s, *nodes)

    src = wired_block(b, src, "w", 16, body)
    b.chain(src, b.node("Flatten", "flat"), b.node("Linear", "head", out_features=5), b.node("Output", "logits"))
    return b.done()


def test_a_budget_is_priced_at_the_batch_that_runs() -> None:
    """Random sequence model 0 at batch 8 under 22,924 B: the check's choice keeps the region's
    first three steps. The compiled model priced batch 8 from batches 1 and 2, where reversible
    mode keeps a bare output at one sample, so it took the whole region for cheaper than it is
    and kept 26,948 B, over the budget. It now prices the batch itself: the same choice, and
    within the budget as measured."""
    torch = pytest.importorskip("torch")
    from revstudio.clicmd.memory import measure_modes
    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.budget import budget_choice

    graph, batch, budget = random_seqnet(0), 8, 22_924
    (chosen,) = budget_choice(graph, full_check(graph, batch=batch), budget, batch=batch).regions.values()
    model = compile_graph(graph, mode="reversible")
    model.memory_budget = budget
    assert model._root.kept_steps(batch) == {chosen.region: chosen.kept_steps} == {chosen.region: 3}
    got = measure_modes(graph, batch, torch.device("cpu"), budget=budget)
    assert got["budget"]["kept_bytes"] - got["reversible"]["kept_bytes"] <= budget


def test_a_budgets_kept_head_runs_its_nested_regions_as_standard_mode_does() -> None:
    """Random sequence model 4 at batch 8 under 7,168 B keeps its first step, a coupling node
    whose F and G end in a Reshape (a region of their own). The head ran those nested regions
    reversibly, keeping their streams' pairs and error samples beside its activations: 13,312 B
    kept beyond reversible mode's, the peak 6 % above the estimate. They now run as standard
    mode runs them: 5,120 B, the step's price, and the estimated peak."""
    torch = pytest.importorskip("torch")
    from revstudio.clicmd.memory import measure_modes
    from revstudio.diagnostics.budget import budget_peak

    graph, batch, budget = random_seqnet(4), 8, 7_168
    got = measure_modes(graph, batch, torch.device("cpu"), budget=budget)
    assert got["budget"]["kept_bytes"] - got["reversible"]["kept_bytes"] <= budget
    estimate = budget_peak(graph, full_check(graph, batch=batch), budget, batch=batch)
    assert abs(estimate / got["budget"]["peak_bytes"] - 1) < 0.005


def test_a_cuts_refund_is_read_at_the_batch_that_runs() -> None:
    """Random sequence model 19 at batch 8, its first step kept: an AffineCoupling whose output
    the Repeat after it saves at one sample (a loop-of-cells BiRNN keeps its input there), not
    at eight. The cut's refund was read at batch 1 and scaled, giving back 16,384 B the head
    keeps: priced 26,692 B, it kept 40,928 B. Read at batch 8, the price holds what it keeps."""
    torch = pytest.importorskip("torch")
    from revstudio.clicmd.memory import measure_modes
    from revstudio.compiler.budget import prefix_cost
    from revstudio.diagnostics.budget import budget_choice
    from revstudio.diagnostics.budget_prices import step_prices

    graph, batch = random_seqnet(19), 8
    report = full_check(graph, batch=batch)
    costs, refunds, fixed = step_prices(graph, report, batch=batch)
    ((rid, steps),) = costs.items()
    budget = prefix_cost(steps, refunds[rid], 1, fixed[rid])
    assert budget_choice(graph, report, budget, batch=batch).regions[rid].kept_steps == 1
    got = measure_modes(graph, batch, torch.device("cpu"), budget=budget)
    kept = got["budget"]["kept_bytes"] - got["reversible"]["kept_bytes"]
    assert 0.9 * budget <= kept <= budget


def test_a_nested_region_that_only_rearranges_runs_as_standard_mode() -> None:
    """Random sequence model 99: an AdditiveCoupling node whose F and G are a Linear over the
    whole sequence and a Reshape back, that Reshape a region of its own. Run reversibly inside
    the coupling's rebuild, it kept its streams' pair and inversion-error samples there, with
    nothing to rebuild: at batch 32 the step's peak was 7.9 % above the estimate. It now runs as
    standard mode (a view), with the same gradients."""
    torch = pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    from revstudio.compiler import compile as compile_graph
    from revstudio.diagnostics.gradcheck import random_inputs

    graph = random_seqnet(99)
    assert abs(estimate_errors(graph, 32, ("reversible",))["reversible"]) < 0.005
    torch.manual_seed(0)
    model = compile_graph(graph, mode="standard").double()
    (x,) = random_inputs(graph, 4, torch.float64, requires_grad=False)
    grads = {}
    for mode in ("standard", "reversible"):
        model.mode = mode
        model.zero_grad()
        model(x)[0].square().sum().backward()
        grads[mode] = [p.grad.clone() for p in model.parameters()]
    for a, b in zip(grads["standard"], grads["reversible"]):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("seed", "before"), [(31, 0.0784), (97, 0.0662)])
def test_a_wired_f_ending_in_an_activation_hands_its_update_what_its_rebuild_holds(seed: int,
                                                                                   before: float) -> None:
    """Random sequence models 31 and 97: wired blocks whose F and G are a Linear, a tanh and a
    Reshape. The tanh keeps its result for its backward, and that result is what the update
    reads: counted again beside the rebuild as an output of F's own, reversible mode was
    ``before`` over at batch 32."""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    assert abs(estimate_errors(random_seqnet(seed), 32, ("reversible",))["reversible"]) < 0.005, before


@pytest.mark.parametrize(("seed", "batch", "before"), [(4, 32, 0.0135), (77, 32, -0.0096), (15, 32, 0.1428),
                                                       (41, 8, 0.0234), (225, 8, -0.0112)])
def test_checkpoint_mode_walks_a_coupling_bodys_runs_of_layers_as_torch_recomputes_them(
        seed: int, batch: int, before: float) -> None:
    """Coupling nodes of random sequence models in checkpoint mode, each ``before`` off:
    - 4: F is a Linear, a tanh and a Reshape, the Reshape a region of its own; the body's module
      checkpoints the run of layers before it, which the estimate walked layer by layer.
    - 77: G is such a body; the gradient of that run's output is the Reshape's, a view of the
      coupling's output gradient, which lives on after the run's backward.
    - 15 and 41: G is a BiRNN, an Activation and a Conv, checkpointed inside the coupling's
      recompute; torch hands that run its input once, and it is gone once the run's own
      recompute has made what the run keeps.
    - 225 (with that third rule alone): F, an LSTM, reads its coupling's x2, a part of the
      enclosing segment's input handed on unjoined, which that segment keeps."""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    assert abs(estimate_errors(random_seqnet(seed), batch, ("checkpoint",))["checkpoint"]) < 0.005, before


@pytest.mark.parametrize(("seed", "before"), [(44, 0.0192), (17, 0.0159)])
def test_a_checkpoint_recompute_stops_inside_a_fused_lstm(seed: int, before: float) -> None:
    """Random sequence models 44 and 17: a coupling node whose G is (or ends its run with) an
    LSTM, the last layer of its coupling's recompute that saves. Torch stops that recompute as
    the LSTM's last direction returns, before the directions are joined into its output: counted
    beside what it keeps, checkpoint mode was ``before`` over at batch 32."""
    pytest.importorskip("torch")
    from estimate_errors import estimate_errors

    assert abs(estimate_errors(random_seqnet(seed), 32, ("checkpoint",))["checkpoint"]) < 0.005, before
