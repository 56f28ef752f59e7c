"""The sequential stopping rule on its own, on a stream of known values: the standard error of the running mean is
computed here by hand (``statistics``), and the batch where the rule must stop is found by a plain scan of those
figures; the stop at a target equal to a batch's figure, the cap, the stages, the bar and the not-finite stop."""

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from learner.phases.stopping import StopRecord, sample_until_precise

# Batches of a stream of scalars, each batch twice the size of the one before (as the phases' batches grow).
# The relative standard error of the running mean, SE/|mean| = stdev/√n/mean, after each batch:
#   [1, 3]        n = 2:  mean 2, variance 2,        SE = √(2/2)/2    = 0.5
#   + [2, 2]      n = 4:  mean 2, variance 2/3,      SE = √(2/3/4)/2  ≈ 0.204
#   + [2] * 4     n = 8:  mean 2, variance 2/7,      SE = √(2/7/8)/2  ≈ 0.0945
#   + [2] * 8     n = 16: mean 2, variance 2/15,     SE = √(2/15/16)/2 ≈ 0.0456
BATCHES = [[1.0, 3.0], [2.0, 2.0], [2.0] * 4, [2.0] * 8]
BY_HAND = [0.5, math.sqrt(2 / 3 / 4) / 2, math.sqrt(2 / 7 / 8) / 2, math.sqrt(2 / 15 / 16) / 2]


def _relative_se(values):
    return statistics.stdev(values) / math.sqrt(len(values)) / abs(statistics.fmean(values))


class Bar:
    def __init__(self):
        self.postfix, self.closed = [], False

    def set_postfix_str(self, s):
        self.postfix.append(s)

    def close(self):
        self.closed = True


class Stream:
    """The phase's side of the loop: lazy batches (it records how many were formed), the running sample, and its
    relative standard error."""

    def __init__(self, batches=BATCHES):
        self.batches, self.formed, self.values, self.estimates = batches, 0, [], []

    def chunks(self):
        for b in self.batches:
            self.formed += 1
            yield b

    def absorb(self, batch):
        self.values.extend(batch)
        return len(batch)

    def estimate(self, n):
        assert n == len(self.values)  # the examples taken in so far
        self.estimates.append(_relative_se(self.values))
        return self.estimates[-1]

    def run(self, se_target, **kw):
        bar = Bar()
        out = sample_until_precise(self.chunks(), self.absorb, self.estimate, se_target=se_target, progress=bar, **kw)
        return out, bar


def _first_met(ses, target):
    """The reference rule: the index of the first batch whose figure is at most the target (None: never)."""
    return next((i for i, se in enumerate(ses) if se <= target), None)


def test_the_by_hand_figures_are_the_streams():
    values = []
    for batch, se in zip(BATCHES, BY_HAND, strict=True):
        values += batch
        assert _relative_se(values) == pytest.approx(se, rel=1e-12)
    assert BY_HAND == sorted(BY_HAND, reverse=True)  # falling: a target between two figures is met once


@pytest.mark.parametrize("met", range(4))
def test_stops_at_the_batch_where_a_target_between_figures_is_first_met(met):
    # A target just above batch `met`'s figure and below the one before: batches 0..met are drawn, no more.
    target = BY_HAND[met] * 1.001
    assert _first_met(BY_HAND, target) == met
    stream = Stream()
    out, bar = stream.run(target)
    assert out.stopped == "standard error"
    assert out.examples == 2 ** (met + 1) == len(stream.values)
    assert out.standard_error == pytest.approx(BY_HAND[met], rel=1e-12)
    assert stream.formed == met + 1  # the next batch is never formed (nor drawn)
    assert len(out.stages) == met + 1 and len(bar.postfix) == met + 1 and bar.closed


@pytest.mark.parametrize("met", range(4))
def test_a_figure_equal_to_the_target_stops(met):
    # The target is the figure itself (bit for bit): "at most" stops there; "below" would draw one more batch.
    target = _relative_se(sum(BATCHES[:met + 1], []))
    out, _ = Stream().run(target)
    assert out.stopped == "standard error" and out.examples == 2 ** (met + 1) and out.standard_error == target


def test_a_target_never_reached_runs_to_the_cap_and_records_every_stage():
    # The control: below every figure, so every batch is drawn and the chunks (the cap) end the loop.
    target = BY_HAND[-1] / 2
    assert _first_met(BY_HAND, target) is None
    stream = Stream()
    out, bar = stream.run(target)
    assert out.stopped == "cap" and out.examples == 16 and stream.formed == 4
    assert [s["examples"] for s in out.stages] == [2, 4, 8, 16]
    assert [s["standard_error"] for s in out.stages] == pytest.approx(BY_HAND, rel=1e-12)
    assert out.stages[-1]["standard_error"] == out.standard_error
    assert len(bar.postfix) == 4 and bar.closed
    assert bar.postfix[0] == f"standard error {0.5:.3g} (target {target:g})"


def test_a_target_above_the_first_figure_draws_one_batch():
    out, _ = Stream().run(1.0)
    assert out.stopped == "standard error" and out.examples == 2 and out.standard_error == pytest.approx(0.5)


def test_without_a_target_every_batch_is_drawn_and_the_reason_is_the_phases():
    stream = Stream()
    out, bar = stream.run(None, without_target="fixed")
    assert out.stopped == "fixed" and out.examples == 16 and stream.formed == 4 and len(out.stages) == 4
    assert bar.postfix == [] and bar.closed  # nothing to show against
    assert Stream().run(None)[0].stopped == "cap"  # the default name
    assert Stream().run(1e-9, without_target="fixed")[0].stopped == "cap"  # with a target the cap is the cap


def test_stages_carry_the_phases_fields_after_the_estimate():
    stream = Stream()
    out, _ = stream.run(BY_HAND[1], record=lambda: {"mean": statistics.fmean(stream.values),
                                                    "estimates": len(stream.estimates)})
    assert out.stages == [{"examples": 2, "standard_error": stream.estimates[0], "mean": 2.0, "estimates": 1},
                          {"examples": 4, "standard_error": stream.estimates[1], "mean": 2.0, "estimates": 2}]
    assert [list(s) for s in out.stages] == [["examples", "standard_error", "mean", "estimates"]] * 2


def test_a_not_finite_estimate_stops_at_once_and_keeps_the_last_figure():
    stream = Stream()
    figures = iter([0.5, None, 0.0])

    def estimate(n):
        stream.estimate(n)
        return next(figures)

    bar = Bar()
    out = sample_until_precise(stream.chunks(), stream.absorb, estimate, se_target=1e-9, progress=bar)
    # The second batch was taken in (its examples count) but gave no estimate: no stage, the first batch's figure.
    assert out == StopRecord("not finite", 0.5, 4, [{"examples": 2, "standard_error": 0.5}])
    assert stream.formed == 2 and len(bar.postfix) == 1 and bar.closed
    # Without a target too: the overflow stops the loop, not the cap.
    stream = Stream()
    out = sample_until_precise(stream.chunks(), stream.absorb, lambda n: None, se_target=None, progress=Bar())
    assert out == StopRecord("not finite", math.inf, 2, []) and stream.formed == 1


def test_no_chunk_is_a_cap_with_no_estimate():
    out = sample_until_precise([], lambda c: 1, lambda n: 0.0, se_target=0.1, progress=Bar())
    assert out == StopRecord("cap", math.inf, 0, [])


@given(ses=st.lists(st.floats(0.0, 10.0), min_size=1, max_size=8), target=st.floats(0.0, 10.0),
       sizes=st.lists(st.integers(1, 5), min_size=8, max_size=8))
def test_matches_the_reference_scan(ses, target, sizes):
    # Any figures (not only falling ones) and any batch sizes: the stop is the reference's first index.
    sizes = sizes[:len(ses)]
    last_taken = []

    def absorb(chunk):
        index, size = chunk
        last_taken.append(index)
        return size

    out = sample_until_precise(list(enumerate(sizes)), absorb, lambda n: ses[last_taken[-1]], se_target=target,
                               progress=Bar())
    met = _first_met(ses, target)
    last = len(ses) - 1 if met is None else met
    assert out.stopped == ("cap" if met is None else "standard error")
    assert last_taken == list(range(last + 1))
    assert out.examples == sum(sizes[:last + 1]) and out.standard_error == ses[last]
    assert out.stages == [{"examples": sum(sizes[:i + 1]), "standard_error": ses[i]} for i in range(last + 1)]
