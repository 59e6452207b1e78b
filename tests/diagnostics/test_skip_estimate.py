"""Skip connections that read a reversible region's values: the estimate against the measured peak.

Drawn from the examples by ``benchmarks/bench_estimate_skips.py``: a Merge (add) of a
value before a block and the block's output, taking the output's place. The add hands each
operand the same gradient. Before the rules these hold, the estimate was off in three ways:

- around revnet_wired's region, checkpoint mode ran the skip in a segment of its own whose
  backward gives its two inputs one buffer, counted as one each: 12-18 % over;
- around glow_flow's flow, the region's second output, its Squeeze of the image, was counted
  with a correction it does not have (reversible, 5-7 % over), and the region's last segment was
  seeded with a gradient buffer where the loss's is handed on as a view (checkpoint, 5-9 % over);
- from glow_flow's first ActNorm to its first coupling's output, the region gets that ActNorm's
  output as a second output, whose gradient was counted as a stream its last step passes on:
  reversible mode 5-6 % under at batches 1 and 2.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.core.project import load  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.diagnostics.estimate import MODES, estimate_peak  # noqa: E402
from revstudio.diagnostics.gradcheck import random_inputs  # noqa: E402
from revstudio.diagnostics.memory import measure_step  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_estimate_skips import variant  # noqa: E402

VARIANTS = {
    "around-wired-region": ("revnet_wired", "stem.out", "block1_cat.out"),
    "around-glow-flow": ("glow_flow", "squeeze.out", "coupling1.out"),
    "into-glow-flow": ("glow_flow", "actnorm0.out", "coupling0.out"),
}


def _errors(graph: Graph, batch: int, modes: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """(estimated, measured) peak per mode of ``graph`` at ``batch``, one set of weights."""
    report = full_check(graph, batch=batch)
    torch.manual_seed(0)
    model = compile_graph(graph, mode="standard")
    inputs = random_inputs(graph, batch, torch.float32, requires_grad=False)
    if hasattr(model, "initialize"):
        model.initialize(*inputs)
    found = {}
    for mode in modes:
        model.mode = mode
        found[mode] = (estimate_peak(graph, report, batch=batch, mode=mode),
                       measure_step(model, inputs, timing_runs=0)["peak_bytes"])
    return found


def _budget_figures(seed: int, batch: int, budget: int) -> tuple[int, int]:
    """(estimated, measured) peak of random skip network ``seed`` in reversible mode under ``budget``."""
    from random_revnets import random_skipnet

    from revstudio.diagnostics.budget import budget_peak

    graph = random_skipnet(seed)
    report = full_check(graph, batch=batch)
    torch.manual_seed(0)
    model = compile_graph(graph, mode="standard")
    model.train()
    inputs = random_inputs(graph, batch, torch.float32, requires_grad=False)
    model.mode, model.memory_budget = "reversible", budget
    return (budget_peak(graph, report, budget, batch=batch),
            measure_step(model, inputs, timing_runs=0)["peak_bytes"])


@pytest.mark.parametrize("batch", [2, 8])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_a_skip_is_estimated_as_measured(tmp_path: Path, name: str, batch: int) -> None:
    graph = load(variant(tmp_path, *VARIANTS[name], "add"))
    for mode, (estimated, measured) in _errors(graph, batch, MODES).items():
        assert abs(estimated / measured - 1) < 0.005, (mode, estimated, measured)


# Random skip networks (``random_revnets.random_skipnet``) each rule was traced on, and the mode
# it fixed: 21, a skip from a wired block's F to its G, which splits the region after a coupling
# node's Split (standard mode held the joined value the Split undoes to the end of the next
# region: 7 % over); 28, a skip around one coupling node (checkpoint mode held the node's input
# through the segment's backward, which torch's checkpoint lets go of once the first layer that
# saves has run its backward: 13 % over); 26, a skip from an ActNorm around the flow step it
# starts, at batch 1 (the InvConv1x1's copy of its input is that input, which the skip keeps
# alive: counted twice, 7 % over in standard mode); 25, whose first region ends with a Split of
# an AffineCoupling's output (reversible mode counted that storage once per part: 10 % over); 7,
# whose skip leaves a region of one add, a checkpoint segment that saves nothing and so keeps
# nothing (its input counted through the next segment's backward: 7 % over); 15 and 4, whose
# skip leaves a region of one add with G's output read from outside as a side input (reversible
# mode counted that input's gradient from the start of the region's backward and again in its
# step's: 6.5 and 5.7 % over at batch 8); 21 at batch 1, where that side input is read by F's add
# and again by G's body (its gradient exists once G's backward has run: 1.3 % under if counted
# unmade up to F's step); 15 in checkpoint mode, where that one-add region is a segment whose
# backward hands its inputs views of its output's gradient, which the walk counted as a new buffer
# (9.8 % over at batch 8, 4.8 % at batch 1). 52 in reversible mode: its first region hands out a
# Split's part that F reads and no step updates, copied apart, and keeps real zeros as its residual
# (4.9 % under at batch 8, 3.4 % at batch 1, the streams channels_last there). 91 in reversible
# mode: its second region has a Squeeze, so it keeps its input's layout, channels_last from the
# region before it through the skip add: its 32x32x3x3 weight gradients come channels_last and
# autograd copies one at the peak (8.0 % under at batch 1 taken for channels-first). 94, 65 and 48
# in checkpoint mode: see the test after this one (3.3 to 5.0 % under). 95 and 97 in reversible mode:
# the region copies its channels-first input into channels_last streams of its own and slices them
# apart into copies, so a Split's part handed out is a storage of its own, not a view of the input
# the layer before it keeps (95: 2.7 / 2.9 % under at batches 1 / 8; 97, 5.8 % over at 8, where
# the input was counted whole as the parts' copies beside their zeros' room). 13 and 57 in
# reversible mode: a region output a later step of the region takes as its stream (a coupling's
# output the skip reads past the wired block after it) goes, with its correction, once the rebuild
# has it back; counted through the whole backward, 13 was 15.1 / 6.7 % over at batches 1 / 8 (its
# peak in the wrong region) and 57 7.5 % at batch 1. 21 in reversible mode at batch 8: at the
# Squeeze's inverse before the wired block, the gradient of F's output (a side input the skip add in
# G reads) is not made yet; counted there, 4.1 % over. 46, 31 and 37 in reversible mode: a region
# output a later step takes as its stream (a Concat's, a Split's part's, an AffineCoupling's, which a
# skip add reads beside the last output) is no stream of its own, its gradient summed into the
# streams': counted as one more stream's gradient, 11.6 / 10.9 % (46 at batches 8 / 1), 5.8 % (31) and
# 4.8 % (37) over; 57 and 94, whose such output is a flow layer's (it comes back bare, its zero
# correction taken over as a real one in backward), went 7.7 and 5.3 % under when counted so too.
@pytest.mark.parametrize(("seed", "mode", "batch"), [(21, "standard", 8), (28, "checkpoint", 8), (26, "standard", 1),
                                                     (13, "reversible", 1), (13, "reversible", 8),
                                                     (57, "reversible", 1),
                                                     (25, "reversible", 8), (7, "checkpoint", 8),
                                                     (15, "reversible", 8), (4, "reversible", 8),
                                                     (21, "reversible", 1), (15, "checkpoint", 8),
                                                     (15, "checkpoint", 1), (52, "reversible", 8),
                                                     (52, "reversible", 1), (91, "reversible", 1),
                                                     (94, "checkpoint", 1), (94, "checkpoint", 8),
                                                     (65, "checkpoint", 8), (48, "checkpoint", 8),
                                                     (95, "reversible", 1), (95, "reversible", 8),
                                                     (97, "reversible", 8), (21, "reversible", 8),
                                                     (46, "reversible", 8), (46, "reversible", 1),
                                                     (31, "reversible", 8), (37, "reversible", 8),
                                                     (57, "reversible", 8), (94, "reversible", 1)])
def test_a_random_skip_network_is_estimated_as_measured(seed: int, mode: str, batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(seed), batch, (mode,)).values()
    assert abs(estimated / measured - 1) < 0.005, (estimated, measured)


# Checkpoint mode's segments of a region run their steps owning nothing, so an AffineCoupling
# node makes y2 anew and hands on x1 as a view of its input: a segment cut right after one on an
# InvConv1x1's output keeps that output's whole storage and y2 (94, 65: 5 % under at batch 8 in the
# peak, 11 % and 9 % in what is kept after forward, where the cut was counted as the output's size).
# 65's region output an1.out lives on in the recompute, which its segment returns; 48's recompute
# starts inside an InvConv1x1's backward, beside its copy of its output's gradient.
@pytest.mark.parametrize("seed", [94, 65])
def test_a_segment_cut_after_an_affine_coupling_keeps_the_storage_x1_views(seed: int) -> None:
    from random_revnets import random_skipnet

    graph, batch = random_skipnet(seed), 8
    report = full_check(graph, batch=batch)
    torch.manual_seed(0)
    model = compile_graph(graph, mode="checkpoint")
    inputs = random_inputs(graph, batch, torch.float32, requires_grad=False)
    measured = measure_step(model, inputs, timing_runs=0)["kept_bytes"]
    from revstudio.diagnostics.estimate import estimate

    kept = estimate(graph, report, batch=batch).activation_bytes("checkpoint")
    assert abs(kept / measured - 1) < 0.005, (kept, measured)


def test_a_region_output_another_region_reads_keeps_its_correction() -> None:
    """Skip network 95: its first region (a wired block on its input) hands out y1, made out of
    place as a new pair, and the next region reads it. Kept after forward in reversible mode counts
    it with its correction: it was taken for that next region's input moved about (no correction),
    as the regions' moved inputs were pooled."""
    from random_revnets import random_skipnet

    from revstudio.diagnostics.estimate import estimate

    graph = random_skipnet(95)
    report = full_check(graph, batch=1)
    y1 = estimate(graph, report, batch=1).nodes["w1_add1"].activation_bytes["reversible"]
    assert y1 == 2 * 2 * 16 * 16 * 4  # (2x16x16 float32 and its float32 correction)


# 37 in reversible mode at batch 1: its backward ends (the first wired block's Split gathering the
# rebuilt halves and joining their gradients) after the region output a later step took as its stream
# (an AffineCoupling's, which the skip reads beside the last) and its correction are gone; counted there,
# 2.2 % over. Its region's moments were then all below what the walk counts at the unit's start (its
# kept outputs with their corrections, the input's gradient), floored at it: 1.1 % over; 258 and 299 at
# batch 1 the same, 3.7 % and 0.9 % over.
@pytest.mark.parametrize("seed", [37, 258, 299])
def test_a_region_ends_its_backward_without_the_output_a_later_step_took(seed: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(seed), 1, ("reversible",)).values()
    assert abs(estimated / measured - 1) < 0.005, (estimated, measured)


# 245 at batch 2: its region reads a side input whose gradient G's relu makes (the skip's sum, which the
# add hands on as a view that lives on); no step's moment prices the end of F's backward beside it,
# which the floor under the moments stands for (0.43 % under without it).
def test_a_region_with_a_side_input_keeps_the_floor_under_its_moments() -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(245), 2, ("reversible",)).values()
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# 4 in reversible mode at batch 1: the skip add sits in the second block's G and reads F's first
# Conv's output, a side input of the region; G's backward hands it the stream's own gradient (an add
# passes its gradient on as is), so F's backward, the peak, holds no buffer of it until F sums its
# own into it at the end: counted as one from G on, 3.9 % over.
# 195 the same (3.8 / 4.6 % over at batches 1 / 2).
@pytest.mark.parametrize(("seed", "batch"), [(4, 1), (195, 2)])
def test_a_side_input_a_skip_add_hands_on_has_no_gradient_of_its_own_in_fs_backward(seed: int, batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(seed), batch, ("reversible",)).values()
    assert abs(estimated / measured - 1) < 0.005, (estimated, measured)


# The same network with a skip Merge that does not pass the gradient on as is (a product's partials,
# a difference's negated one): G's backward makes the side input a buffer of its own, which F's
# backward holds (measured 2,048 B more at batch 1); taken off as for the add, 3.8 % under.
@pytest.mark.parametrize("mode", ["mul", "sub"])
def test_a_side_input_another_merge_hands_on_keeps_its_gradient_buffer(mode: str) -> None:
    from random_revnets import random_skipnet

    graph = random_skipnet(4)
    graph.set_param("skip", "mode", mode)
    ((estimated, measured),) = _errors(graph, 1, ("reversible",)).values()
    assert abs(estimated / measured - 1) < 0.005, (estimated, measured)


# 62 in reversible mode: the next region's backward hands its input w3_add1.out a gradient of its own
# (the stream's, summed anew with G's); the wired block's F add outside the regions hands that tensor
# itself to the Split's part it reads and to F's output, and once F's Conv has run backward, the region
# reading the part holds it alone and releases it with its outputs' others. Counted as a view (kept to
# the end), 0.9 / 2.6 % over at batches 1 / 8; 72 at 1 (1.3 %) and 205 (2.5-5.4 % at 1-32) the same.
@pytest.mark.parametrize(("seed", "batch"), [(62, 1), (62, 8), (72, 1), (205, 1), (205, 8)])
def test_a_gradient_an_add_hands_on_is_released_by_the_region_that_alone_holds_it(seed: int, batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(seed), batch, ("reversible",)).values()
    assert abs(estimated / measured - 1) < 0.005, (estimated, measured)


# 31: the add's gradient goes to a Split's part the first wired block's G update takes as its stream;
# backward reads it on until it reaches that block, past the release (5.4 / 5.8 % under at batches 1 / 8
# when released with the others').
@pytest.mark.parametrize("batch", [1, 8])
def test_a_gradient_an_add_hands_an_output_a_later_step_takes_is_read_on(batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(31), batch, ("reversible",)).values()
    assert abs(estimated / measured - 1) < 0.005, (estimated, measured)


# Skip network 1 under a 64 KiB budget at batch 8: the rest's region releases the same kind of gradient
# (2.3 % over).
def test_a_budgets_rest_releases_a_gradient_an_add_hands_on() -> None:
    estimated, measured = _budget_figures(1, 8, 1 << 16)
    assert abs(estimated / measured - 1) < 0.005, (estimated, measured)


# 112 and 341 in reversible mode: a skip add takes the place of a wired block's G output, so the
# block's Split part that G's add read becomes a region output nothing after the region reads. Autograd
# hands the region's backward a gradient of zeros for it, the stream's until the skip add's coupling
# sums its own into it, and the region keeps that output as a storage of its own (a Split part of a
# coupling's output in 112, of the region's input in 341) beside its correction: neither was counted,
# 6.6 / 6.7 % under at batches 1 / 2 (112) and 2.9 % (341 at 1).
@pytest.mark.parametrize(("seed", "batch"), [(112, 1), (112, 2), (341, 1)])
def test_a_region_output_nothing_reads_has_a_gradient_of_zeros_and_a_kept_storage(seed: int, batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(seed), batch, ("reversible",)).values()
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# 361: the same unread Split part in a region that ends with a Concat, whose inverse copies the
# output pair apart as backward starts; the unread output and its correction are no part of that
# pair (counted in it, batch 2 went from 1.6 to 4.6 % over; the rest of the 1.6 % is not traced).
def test_a_region_output_nothing_reads_is_no_part_of_the_pair_a_concat_copies_apart() -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(361), 2, ("reversible",)).values()
    assert 0 <= estimated / measured - 1 < 0.02, (estimated, measured)


# Skip network 77 under a 64 KiB budget at batch 8: the rest's region hands back a value the kept steps
# before it made (its input an1.out); that is no output of its steps, and no gradient of zeros comes
# for it (counted as one, with a kept storage, 11.3 % over).
def test_a_budgets_rest_has_no_gradient_of_zeros_for_what_the_kept_steps_made() -> None:
    estimated, measured = _budget_figures(77, 8, 1 << 16)
    assert abs(estimated / measured - 1) < 0.005, (estimated, measured)


# A flow region's per-sample log-determinant sums live to its backward: each AffineCoupling's own, the
# region's log-determinant output and the gradient of zeros autograd hands back for it. 341 in reversible
# mode at batches 2 and 8 (2 AffineCouplings) was 0.08 / 0.09 % under without them, and 25 under a 64 KiB
# budget at batch 8 0.12 %.
@pytest.mark.parametrize("batch", [2, 8])
def test_a_flow_regions_log_determinant_sums_are_counted(batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(341), batch, ("reversible",)).values()
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


def test_a_budgets_rest_counts_its_log_determinant_sums() -> None:
    estimated, measured = _budget_figures(25, 8, 1 << 16)
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# Skip network 86 under a 1 MiB budget at batch 8: the rest of its first region (a Repeat of couplings,
# an ActNorm and an InvConv1x1 that ends the region) peaks as its last copy is rebuilt. The InvConv1x1's
# output is a channels-first view, which the ActNorm's inverse hands on in that layout, so the runtime
# does not own the stream the copy's coupling rebuilds and updates it out of place, TwoSum's temporaries
# beside the whole new pair (11.2 % under, 1,711,048 of 1,926,140 B, pricing the in-place update).
def test_a_repeats_last_copy_before_an_actnorm_and_invconv_is_rebuilt_anew() -> None:
    estimated, measured = _budget_figures(86, 8, 1 << 20)
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# Skip networks 65 (batch 1) and 51 (batch 8) under a 64 KiB budget: the budget keeps the flow steps a
# skip add reads past the region (an ActNorm's output), and the rest hands that value back untouched.
# The runtime takes it in as an input of the rest: a stream copy of its own, copied again in backward,
# and an inversion-error sample. In 65 the InvConv1x1 after the ActNorm keeps its input itself (a batch
# of one), so the copy is beside it: 8.2 % under without both; in 51 the copy takes the place of the
# ActNorm's output, which nothing else keeps: 1.2 % under without the sample.
@pytest.mark.parametrize(("seed", "batch"), [(65, 1), (51, 8)])
def test_a_budgets_rest_keeps_a_copy_and_a_sample_of_what_it_hands_back(seed: int, batch: int) -> None:
    estimated, measured = _budget_figures(seed, batch, 1 << 16)
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# Skip network 265 at batch 1 (reversible): its first region ends with an AffineCoupling, an ActNorm and
# an InvConv1x1, and a skip add reads the Squeeze's output inside it, which the region hands out as an
# output of its own. The coupling's output comes back from the flow layers' inverses with no correction
# of its own, which its step stood against a correction the region keeps; but the one the region keeps is
# the Squeeze output's, whose pair (the copy backward rebuilds in and its correction) lives until the
# ActNorm after the Squeeze takes it back: 5.7 % under (134,568 of 142,696 B) where it stood for both.
def test_a_mid_outputs_correction_stands_for_no_missing_one_of_a_later_step() -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(265), 1, ("reversible",)).values()
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# Skip network 361 at batches 8 and 32 (reversible): the skip add takes the place of a wired block's G
# and adds to the block's first half as its F's add does, so F's update finds that half read again
# and makes its sum anew, and the runtime owns the half no more, so the skip's update is made anew too:
# the region's forward, its peak, holds the streams' pairs, F's new pair, G's output and TwoSum's seven
# temporaries (4.8 / 5.3 % under priced as a step's outputs' worth).
@pytest.mark.parametrize("batch", [8, 32])
def test_a_stream_value_two_couplings_update_is_updated_anew_in_forward(batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(361), batch, ("reversible",)).values()
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# Skip network 313 (reversible): its region is a wired block's F alone (the skip add takes the place of
# G's input), and the block's two halves are region outputs too. The first backward step's streams'
# gradients are views of the outputs' no wider than the input's gradient the walk counts (the outputs,
# three halves, are wider than the input: 6 % under subtracting all three), and the half F's add updates
# is read on, so the runtime owns it no more and backward makes its correction of zeros real beside its
# copy (6 % more under without it): 11.9-13.3 % under at batches 1-32 before.
@pytest.mark.parametrize("batch", [1, 8])
def test_a_region_wider_in_outputs_than_its_input_counts_its_first_steps_gradients_and_cloned_zeros(batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(313), batch, ("reversible",)).values()
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# Skip network 385 (reversible): a skip add reads the output of the first of two AdditiveCoupling nodes
# in one region, so the second finds its input handed out and makes both halves anew in forward (its
# peak): 3.0 / 1.5 % under at batches 1 / 2 priced as a step's outputs' worth.
@pytest.mark.parametrize("batch", [1, 2])
def test_a_coupling_nodes_input_the_region_hands_out_is_updated_anew_in_forward(batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(385), batch, ("reversible",)).values()
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# A region's side input that is a Split's part (a wired block's half the skip add's F reads, skip networks
# 262 and 127) is no input the region rebuilds, so it keeps no inversion-error sample of it; found through the
# storage it views, the part was not known as a side input and got one: 262 0.8 / 0.6 % over at batches
# 1 / 2, 127 10.8 % at 2 (3.6 % left there, not traced).
@pytest.mark.parametrize("batch", [1, 2])
def test_a_side_input_that_is_a_splits_part_keeps_no_sample(batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(262), batch, ("reversible",)).values()
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# Skip network 384 (reversible): a skip add reads an InvConv1x1's output that the AffineCoupling after it
# takes as its stream. That output comes back bare, and the zero correction backward makes real for it is
# gone with it once the coupling's rebuild has it back; counted through the whole backward it put the
# first coupling's rerun 5.9 / 6.9 % over at batches 1 / 2.
@pytest.mark.parametrize("batch", [1, 2])
def test_a_bare_output_a_later_step_takes_goes_with_its_real_zeros(batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(384), batch, ("reversible",)).values()
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# Skip network 165 (checkpoint): the skip add, in the region's second segment, reads the Split's half the
# block's G add reads after the region, whose output a Concat reads. As that segment's backward starts the
# half's gradient is a slice of the Concat's, so the skip's gradient for it is summed into a new buffer
# that lives through the segment's recompute: 7.0 / 7.5 % under at batches 2 / 8 counted as the skip's.
# Skip network 326's G add feeds a reversible region instead: its gradient is summed in place.
@pytest.mark.parametrize(("seed", "batch"), [(165, 2), (165, 8), (326, 1)])
def test_a_segment_input_a_later_concat_views_is_summed_into_a_new_gradient_in_its_recompute(
        seed: int, batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(seed), batch, ("checkpoint",)).values()
    assert -0.0007 <= estimated / measured - 1 < 0.005, (estimated, measured)


# Skip network 353 (reversible): the skip add reads the wired block's F sum and the half it updates, both
# region outputs, and hands them one gradient tensor. The F sum's backward passes its gradient into that
# half's slot, which holds the same tensor, so the sum is a new buffer, no view of the outputs' gradients,
# through the affine coupling's rerun before it: 3.1 / 4.0 % under at batches 1 / 8. Skip network 392's
# skip reads two AdditiveCoupling nodes' outputs instead, the second's input: each stream's is still a view.
@pytest.mark.parametrize(("seed", "batch"), [(353, 1), (353, 8), (392, 1)])
def test_a_gradient_an_add_hands_a_merge_step_and_its_input_is_summed_anew_into_the_stream(
        seed: int, batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(seed), batch, ("reversible",)).values()
    assert -0.001 <= estimated / measured - 1 < 0.005, (estimated, measured)


# Skip networks 178 and 330 (reversible): an additive step (a coupling node, a Repeat of them) whose output a
# flow layer rebuilds bare makes the stream's correction real as it updates it, and that lives through the
# steps backward runs next up to a flow layer's inverse; in a region ending with flow layers, which keeps no
# correction, nothing counted it: 178 1.8 / 1.5 % under at batches 1 / 2 (at its AffineCoupling's rerun),
# 330 1.8 % at 1. Skip network 160's region keeps a correction standing for it (7 % over counted twice).
@pytest.mark.parametrize(("seed", "batch"), [(178, 1), (178, 2), (330, 1), (160, 2)])
def test_a_correction_an_additive_step_makes_real_after_a_bare_flow_rebuild_lives_on(seed: int, batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(seed), batch, ("reversible",)).values()
    assert -0.001 <= estimated / measured - 1 < 0.005, (estimated, measured)


# Skip networks 103 and 308 (checkpoint, batch 2): a segment ending in an LU InvConv1x1 whose output's
# gradient a skip add shares. Its backward first copies that gradient channels-first, which starts the
# recompute; the copy is the einsum backward's own input, so it lives on beside the input's and the
# weight's gradients that backward makes, above the recompute's start: 1.37 % (103) and 0.23 % (308)
# under with the copy gone once the recompute had run. At batch 8 the recompute's start stays the peak.
@pytest.mark.parametrize(("seed", "batch"), [(103, 2), (308, 2), (103, 8)])
def test_a_gradient_copy_that_starts_a_recompute_lives_through_its_layers_backward(seed: int, batch: int) -> None:
    from random_revnets import random_skipnet

    ((estimated, measured),) = _errors(random_skipnet(seed), batch, ("checkpoint",)).values()
    assert -0.001 <= estimated / measured - 1 < 0.005, (estimated, measured)
