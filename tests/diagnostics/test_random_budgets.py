"""A memory budget on random reversible networks (``benchmarks/random_revnets.py``): every cut
of a region (the budget that keeps each number of its first steps), the estimated peak against
the measured one, and the bytes kept beyond reversible mode's within the budget. Before these
were measured, cuts of networks no rule was tuned on were -9.4 % to +14.7 % off (see
benchmarks/README.md, "A budget's cuts of random networks")."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

torch = pytest.importorskip("torch")

from bench_budget import random_cuts  # noqa: E402


@pytest.fixture
def priced_steps_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Budgets reach cuts right after a Squeeze or Split as they did before such a step stopped
    counting as one worth keeping (every step with a price counts, the check's and the runtime's
    choice alike): the estimate's rules these tests guard are checked at the cuts they were found
    at, which a budget no longer takes (the cut before the Squeeze keeps as many rebuilds for less)."""
    from revstudio.diagnostics import budget, budget_prices

    monkeypatch.setattr(budget, "step_worth", lambda graph, regions: None)
    monkeypatch.setattr(budget_prices, "step_worth", lambda graph, regions: None)


def _cuts_hold(seed: int, cuts: set[int], batch: int = 8) -> list[int]:
    """The ``cuts`` (steps kept) of random network ``seed`` its budgets make, each checked: the
    estimated peak within 0.5 % of the measured one, and no more kept beyond reversible mode's
    than the budget."""
    found = random_cuts(range(seed, seed + 1), batch, cuts)
    assert found
    for _seed, _rid, kept, budget, peak, estimated, beyond, _steps in found:
        assert abs(estimated - peak) <= 0.005 * peak, (seed, kept, estimated, peak)
        assert beyond <= budget, (seed, kept, beyond, budget)
    return [c[2] for c in found]


def test_a_cut_between_a_repeats_copies_prices_each_copy_as_it_keeps() -> None:
    """Seed 20: a Repeat (x2) of an AdditiveCoupling node first in the region. Its copies were
    priced an equal share of the Repeat, the first with the second's output: the budget that
    keeps the first copy put the peak 8.3 % over (1,286,440 B against 1,188,144 measured)."""
    assert 1 in _cuts_hold(20, {0, 1, 2})


def test_a_cut_between_the_copies_of_a_repeat_after_other_steps() -> None:
    """Seed 0: Glow steps, a Squeeze, then a Repeat (x2) of a wired block. The first copy, kept,
    holds the Squeeze's output through its Split's view of it, the rest samples the value the
    copy hands it, and the kept copy's weights' gradients appear in the head's backward: the
    cut after it was 3.6 % under, then 4.8 % under once the copies were priced as they keep."""
    assert 6 in _cuts_hold(0, {5, 6, 7})


def test_kept_copies_free_their_activations_one_copy_at_a_time() -> None:
    """Seed 14: Repeats of wired blocks one after another; cuts after one and two of the second
    Repeat's three copies. Each kept copy's backward frees its activations before the gradients
    of the copy before it appear: walked as one unit, the two copies held both copies' weights'
    gradients beside all their activations (4.3 % over)."""
    assert {10, 11} <= set(_cuts_hold(14, {10, 11}))


def test_the_rest_releases_only_a_value_that_is_its_storages_whole() -> None:
    """Seed 4: a cut between the F and G couplings of a wired block after a Squeeze. The rest
    reads the block's x2, a half of the Squeeze's output the kept F saved as a view: it cannot
    release that storage (9.4 % under when the walk released it). Seed 21: the same cut after an
    AdditiveCoupling node, whose halves the runtime hands on as tensors of their own: released.
    (Its rest ends with another node, whose F's backward was priced with its graph and its
    weights' gradients at once: 4.3 % over, until the halves were walked layer by layer.)"""
    assert 7 in _cuts_hold(4, {7})
    assert 3 in _cuts_hold(21, {3, 4})


def test_the_rest_releases_a_value_laid_out_channels_outermost() -> None:
    """Seed 25: Glow steps (ActNorm, InvConv1x1, AffineCoupling x2), then a wired block; the cut
    between its F and G. The rest reads x2, an AffineCoupling's half computed from an
    InvConv1x1's mix, whose layout is (C, N, H, W): dense, but neither contiguous nor
    channels_last, and the runtime kept it (1.9 % over the estimate, which releases it)."""
    from revstudio.compiler.runtime_function import _owns_storage

    assert _owns_storage(torch.empty_strided((8, 2, 8, 8), (64, 512, 8, 1)))
    assert not _owns_storage(torch.empty_strided((8, 2, 8, 8), (64, 1024, 8, 1)))  # (gaps)
    assert not _owns_storage(torch.empty(4, 8, 8).expand(8, 4, 8, 8))
    assert 6 in _cuts_hold(25, {6})


def test_a_budget_releases_the_regions_input_once_its_head_has_read_it() -> None:
    """Seed 10: ActNorm, InvConv1x1, AffineCoupling, then a Group of an AdditiveCoupling. With the
    first three kept, the region's input (a stem layer's output, read by the head alone) stayed
    alive while the rest ran forward, the peak then (723,340 B measured, 4.1 % over the
    estimate). The head's graph holds what its backward needs; the rest no longer waits."""
    assert 3 in _cuts_hold(10, {3})


def test_a_rest_that_starts_with_a_squeeze_peaks_at_its_inverse() -> None:
    """Seed 4 at batch 1, the cut after the first wired block's G: the rest starts with its
    Concat and a Squeeze. The Squeeze's inverse, the last step backward runs, makes a new pair
    from the rebuilt one with every weight's gradient made: the peak, which the walk did not
    have (4.4 % under; seed 17's same cut, 2.0 %)."""
    assert 3 in _cuts_hold(4, {3}, batch=1)
    assert 3 in _cuts_hold(17, {3}, batch=1)


@pytest.mark.usefixtures("priced_steps_count")
def test_a_rest_in_channels_last_peaks_as_autograd_reorders_a_weights_gradient() -> None:
    """Seed 19, cut after its Squeeze: the rest (an AffineCoupling, then a wired block of 32
    channels at 4x4) runs channels_last, and once its backward returns, autograd copies each 3x3
    weight's gradient into the parameter's layout while all of them exist. The walk had that
    moment (``Unit.work_after``) but lost it when a unit was copied into a namespace
    (``peak_inline._copy``): 4.8 % under at batch 1 (277,744 B against 291,608), 1.7 % at batch 2."""
    assert 6 in _cuts_hold(19, {6}, batch=1)
    assert 7 in _cuts_hold(19, {7}, batch=2)


def test_a_storage_an_affine_step_left_half_used_is_held_by_the_steps_after() -> None:
    """Seed 19 at batch 1, cuts after the first AffineCoupling: the rest's backward rebuilds the
    later AffineCoupling's x2 as a new pair while x1's view keeps the Squeeze's storage, x2's old
    part included, and the wired blocks backward runs next hold both (1.6 % under)."""
    assert {1, 2} <= set(_cuts_hold(19, {1, 2}, batch=1))


def test_kept_copies_are_walked_as_the_layers_they_run() -> None:
    """A cut between the copies of a Repeat of an AdditiveCoupling after a Squeeze. The kept
    copies were one priced unit each, all their activations and weights' gradients at once.
    Seed 62 at batch 8, cut 8: the first copy splits the Squeeze's output into views itself and
    its F saves x2, so it holds that whole output, not the half the price gave it (2.36 % under:
    173,944 B against 178,144). Seed 87, cuts 10 and 11: a copy's backward frees its activations
    layer by layer as its weights' gradients appear (2.70 % and 0.58 % over). Walked as standard
    mode's layers, each copy keeps what it runs."""
    assert 8 in _cuts_hold(62, {8})
    assert {10, 11} <= set(_cuts_hold(87, {10, 11}))


def test_an_lu_invconvs_rerun_multiplies_a_copy_of_its_rebuilt_input() -> None:
    """Seed 1 at batch 2, cuts 4 and 6: the rest's peak is an LU InvConv1x1's backward. Its
    inverse rebuilds the input as a dense buffer (``flows._mix_channels_dense``), and the rerun's
    einsum multiplies a channels-first copy of it beside it (2.3 % under when the copy was the
    input itself, as it is at a batch of one)."""
    assert {4, 6} <= set(_cuts_hold(1, {4, 6}, batch=2))


def test_a_plain_invconvs_log_determinant_backward_holds_its_factors() -> None:
    """Seed 104, cuts 10 and 11: the rest's peak is an InvConv1x1 with a plain 64 x 64 weight at
    4x4. Its log-determinant's backward runs before the 1x1 convolution's and holds the LU
    factors and two C x C more beside the rerun's graph (1.3 % under at batch 2, 2.1 % at 1).
    Seed 72's cut 8 at batch 2 (32 channels): the 1x1 convolution's backward holds the rebuilt
    input beside the copy its rerun multiplies (1.8 % under once the outputs' gradients were
    released after the AffineCoupling last in the region, as the runtime does)."""
    assert {10, 11} <= set(_cuts_hold(104, {10, 11}, batch=2))
    assert {10, 11} <= set(_cuts_hold(104, {10, 11}, batch=1))
    assert 8 in _cuts_hold(72, {8}, batch=2)


@pytest.mark.usefixtures("priced_steps_count")
def test_a_wired_block_before_a_flow_layer_rebuilds_its_inputs_with_corrections() -> None:
    """Seed 72 at batch 2, cut 3: the rest's wired block is followed by an ActNorm, whose inverse
    hands both halves back with no correction; each coupling's rebuild gives the input it
    rebuilds a correction of its own beside its F's graph and weights' gradients (2.1 % under).
    Seed 47, cut 4: the same for a Group of an AdditiveCoupling node before an ActNorm (1.9 %)."""
    assert 3 in _cuts_hold(72, {3}, batch=2)
    assert 4 in _cuts_hold(47, {4}, batch=2)


@pytest.mark.usefixtures("priced_steps_count")
def test_a_spliced_blocks_first_coupling_makes_its_x2s_gradient() -> None:
    """Seed 56 at batch 2, cut 7: the rest is a Group whose body is one wired block, spliced into
    the region. Its body was walked as a graph of its own whose input needs no gradient, so its
    F's backward made none for x2; the runtime makes one for every stream not a region input
    itself (2.07 % under, the peak at that backward). Seed 91 at batch 8, cut 3 (0.77 %)."""
    assert 7 in _cuts_hold(56, {7}, batch=2)
    assert 3 in _cuts_hold(91, {3})


def test_a_rest_that_joins_its_inputs_hands_their_gradients_as_views() -> None:
    """Seed 72 at batch 2, cut 6: the rest starts with a wired block's Concat, then an ActNorm,
    whose backward makes the joined gradient; the Concat's hands the head y1's and y2's as views
    of it, and the block's G adds into a new buffer beside y1's view (2.2 % under when each was a
    buffer of its own, summed in place). Cut 5 at batch 1 starts with the block's G: x2's
    gradient passes through its update, a view of the joined buffer (1.4 % under). Seed 98's cut
    6 starts with a Concat before a coupling node, which takes the halves apart in the streams:
    a buffer each; seed 4's cut 2 with a G before a Squeeze, whose inverse, the rest's peak, comes
    before the G's backward makes y1's buffer."""
    assert 6 in _cuts_hold(72, {6}, batch=2)
    assert 5 in _cuts_hold(72, {5}, batch=1)
    assert 6 in _cuts_hold(98, {6}, batch=2)
    assert 2 in _cuts_hold(4, {2}, batch=2)


def test_a_squeeze_inside_the_rest_makes_a_new_pair_beside_the_rebuilt_one() -> None:
    """Seed 443 at batch 32, cut 3 (of networks 300-449, measured only after stop 38's other
    rules): the rest starts with a wired block's G and its Concat, then a Squeeze. The Squeeze's
    inverse makes a new pair from the rebuilt one while both are alive, the gradients of the steps
    after it made: the walk counted that moment only for a region that starts with the Squeeze
    (3.6 % under)."""
    assert 3 in _cuts_hold(443, {3}, batch=32)


@pytest.mark.usefixtures("priced_steps_count")
def test_an_additive_step_before_a_bare_affine_coupling_holds_its_dead_part() -> None:
    """Seed 311 at batch 1, cut 3 (held out): a Group of an AdditiveCoupling node after a
    Squeeze, then an AffineCoupling that a flow layer's inverse hands its output bare. At one
    sample the AffineCoupling's halves are views of one storage whose y2 part is dead once x2 is
    rebuilt; the node's first update makes x1 a correction again beside it, so its F backward
    holds that part too (1.9 % under, the peak once the cut keeps the steps before it)."""
    assert 3 in _cuts_hold(311, {3}, batch=1)


def test_an_affine_couplings_x1_gradient_is_summed_beside_every_weights_gradient() -> None:
    """Seed 428 at batch 1, cut 4 (held out): the rest starts with an AffineCoupling after a
    Squeeze, at 4x4 positions, whose net's weights' gradients are larger than its activations.
    Once the net's backward is done, x1's gradient from it is summed into the one the region's
    output handed on, a new buffer, while s, t and every weight's gradient still exist: the walk
    took the net's own peak for the step's (1.6 % under)."""
    assert 4 in _cuts_hold(428, {4}, batch=1)


def test_a_squeeze_before_a_flow_layer_hands_the_affine_coupling_a_new_gradient() -> None:
    """Seed 494 (held out): Glow steps, then an AffineCoupling before a Squeeze and an ActNorm.
    Its output comes back rebuilt with no correction, through the Squeeze, and the Squeeze's
    backward hands it its output's gradient as a new tensor beside its net's backward, as a flow
    layer right after it does: cuts 3-5 at batch 1 were 2.7 % under (at batch 2, its halves
    copies, 0.4 %)."""
    assert {3, 5} <= set(_cuts_hold(494, {3, 5}, batch=1))
    assert 3 in _cuts_hold(494, {3}, batch=2)


def test_a_group_before_a_squeeze_and_a_flow_layer_rebuilds_bare_streams() -> None:
    """Seed 601 (held out): a Group of an AdditiveCoupling node, then a Squeeze and an ActNorm.
    The Group's body was told only of the Squeeze after it, so its streams were priced as
    corrected: at one sample each half's update makes a correction of zeros and updates in
    place with three temporaries, 1.8 % under in reversible mode and the cuts that keep its peak.
    From two samples, its halves copies, the update is TwoSum alone over the copy, which its new
    pair replaces (0.6 % over when priced as at one sample)."""
    assert {0, 4} <= set(_cuts_hold(601, {0, 4}, batch=1))
    assert 0 in _cuts_hold(601, {0}, batch=2)


def test_a_coupling_node_before_a_flow_layer_sums_y1s_gradient_anew() -> None:
    """Seed 665 at batch 1, cut 5 (held out): the rest starts with an AdditiveCoupling node
    before an ActNorm. The ActNorm's backward hands the node its output's gradient as one new
    tensor, and G's backward sums y1's into a new buffer beside it, both alive at F's update:
    1.1 % under, as a wired block there was until stop 38."""
    assert 5 in _cuts_hold(665, {5}, batch=1)


def test_a_priced_copy_holds_the_whole_value_it_splits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a Repeat is not walked as its copies, each kept copy is one priced unit: the first,
    a coupling node splitting a value nothing joins (seed 62's Squeeze output), holds all of it."""
    from revstudio.diagnostics import estimate_units

    monkeypatch.setattr(estimate_units, "_kept_copies", lambda *args: None)
    assert 8 in _cuts_hold(62, {8})


def test_bench_budget_random_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench_budget import main

    assert main(["--random", "1", "--first", "24", "--batch", "8"]) == 0  # (one coupling node)
    out = capsys.readouterr().out
    assert "| 24 | 0/1 |" in out and "| 24 | 1/1 |" in out and "2 cuts: 2 within 0.5 %" in out
