"""The correlational search's rules (order, threshold, stopping, budget) and the slope fit, against references."""

from itertools import combinations
from math import sqrt
from types import SimpleNamespace

import numpy as np
import pytest

from lowerbounds import CharacterQuery, SparseLinearTarget, SQOracle, correlational_search, fit_slope, sq_hard_instance
from lowerbounds.simulate import SearchOutcome

TAU = 0.05
# Coefficients recovered from exact oracle answers: one float64 division and one product, so a few ulps.
COEF_TOL = 1e-12


def _asking_order(seed, coords, max_degree):
    """The documented order: per degree, the candidate sets in a random permutation drawn from ``seed``."""
    gen = np.random.default_rng(seed)
    order = []
    for degree in range(1, max_degree + 1):
        cands = list(combinations(coords, degree))
        order.append([cands[i] for i in gen.permutation(len(cands))])
    return order


class _Scripted:
    """A duck-typed oracle with label bound 1: fixed answers for a few characters, 0 elsewhere; logs what is asked."""

    def __init__(self, d, answers, tolerance=TAU):
        self.target = SimpleNamespace(d=d, t=0)
        self.tolerance, self.label_bound, self.queries = tolerance, 1.0, 0
        self.answers = {frozenset(U): a for U, a in answers.items()}
        self.asked = []

    def query(self, q):
        self.queries += 1
        self.asked.append(tuple(sorted(q.subset)))
        return self.answers.get(q.subset, 0.0)


class _EdgeOracle(SQOracle):
    """The truth shifted by exactly +τ: an answer the SQ model allows (within τ of the truth)."""

    def query(self, query):
        truth, _ = self.exact_value(query)
        self.queries += 1
        return truth + self.tolerance


@pytest.mark.parametrize("seed", [0, 7])
def test_hard_member_found_after_the_seeded_order(seed):
    # Interpolation member: g = χ_S exactly, so every degree-1 answer is the shared 0 and the search asks all d − 1
    # of them, then degree-2 sets in the seeded order until S; its coefficient ĝ(S) = 1.
    d, S = 12, (4, 9)
    oracle = SQOracle(sq_hard_instance(d, 3, subset=S), tolerance=TAU)
    out = correlational_search(oracle, max_degree=2, rng=seed)
    first, second = _asking_order(seed, list(range(1, d)), 2)
    assert out.queries == len(first) + second.index(S) + 1 == oracle.queries
    assert out.found == (S,) and out.complete
    assert out.coefficients == pytest.approx((1.0,), abs=COEF_TOL)


@pytest.mark.parametrize("earlier", [0, 3])
def test_search_never_goes_past_max_degree(earlier):
    # S has degree 2; a search capped at degree 1 asks the d − 1 singletons, finds nothing and is incomplete.
    # Queries asked before the search are not counted as its own.
    d = 10
    oracle = SQOracle(sq_hard_instance(d, 3, subset=(2, 6)), tolerance=TAU)
    for _ in range(earlier):
        oracle.query(CharacterQuery((2,)))
    out = correlational_search(oracle, max_degree=1, rng=0)
    assert out == SearchOutcome((), (), d - 1, False)


def test_degree_finished_with_partial_mass_is_complete():
    # Only (4,) answers above τ (0.5, mass 0.25 < 1): the search asks every singleton, keeps (4,) with B a = 0.5,
    # and stops after the degree in which it found something, without asking degree 2.
    oracle = _Scripted(8, {(4,): 0.5})
    oracle.queries = 5  # queries asked before the search are not its own
    out = correlational_search(oracle, max_degree=2, rng=0)
    assert out == SearchOutcome(((4,),), (0.5,), 7, True)
    assert sorted(oracle.asked) == [(j,) for j in range(1, 8)]


def test_max_degree_is_validated_by_name():
    oracle = SQOracle(SparseLinearTarget(8, (2,)), tolerance=TAU)
    with pytest.raises(ValueError, match="`max_degree` must be at least 1; got max_degree=0"):
        correlational_search(oracle, max_degree=0)


def _control_case(seed, d=20, S=(3, 9, 14)):
    order = _asking_order(seed, list(range(1, d)), 1)[0]
    positions = sorted(order.index((j,)) for j in S)
    return SparseLinearTarget(d, S), order, positions


@pytest.mark.parametrize("earlier", [0, 2])
def test_control_search_stops_when_the_mass_is_complete(earlier):
    # Control g = Σ_{j∈S} z_j / √3: each found coefficient is 1/√3, the mass reaches 1 at the third, and the
    # search stops right there rather than finishing the degree.
    seed = 0
    target, order, positions = _control_case(seed)
    assert positions[-1] < len(order) - 1  # the stop is visible: candidates remain after the last of S
    oracle = SQOracle(target, tolerance=TAU)
    for _ in range(earlier):
        oracle.query(CharacterQuery((1,)))
    out = correlational_search(oracle, max_degree=3, rng=seed)
    assert out.complete and out.queries == positions[-1] + 1
    assert out.found == tuple(order[i] for i in positions)
    assert out.coefficients == pytest.approx((1 / sqrt(3),) * 3, abs=COEF_TOL)


@pytest.mark.parametrize("earlier", [0, 4])
def test_budget_counts_this_search_only_and_reports_partial_results(earlier):
    # Budget = the position just after the second element of S: two found (mass 2/3), then the budget is spent.
    seed = 3
    target, order, positions = _control_case(seed)
    budget = positions[1] + 1
    oracle = SQOracle(target, tolerance=TAU)
    for _ in range(earlier):  # queries asked before the search started are not its own
        oracle.query(CharacterQuery((1,)))
    out = correlational_search(oracle, max_degree=1, rng=seed, max_queries=budget)
    assert out.queries == budget and oracle.queries == earlier + budget
    assert out.complete is False
    assert out.found == (order[positions[0]], order[positions[1]])
    assert isinstance(out.coefficients, tuple)
    assert out.coefficients == pytest.approx((1 / sqrt(3),) * 2, abs=COEF_TOL)


def test_answer_of_exactly_tau_is_not_kept():
    # An adversary shifting every answer by +τ answers exactly τ for the zero correlations: such an answer is
    # consistent with a zero coefficient, so only S may be kept (its answers exceed τ by ĝ/B).
    seed, d, S = 1, 12, (2, 5)
    order = _asking_order(seed, list(range(1, d)), 1)[0]
    assert max(order.index((j,)) for j in S) > 1  # a zero character is asked before S is complete
    target = SparseLinearTarget(d, S)
    out = correlational_search(_EdgeOracle(target, tolerance=TAU), max_degree=1, rng=seed)
    assert set(out.found) == {(2,), (5,)} and out.complete
    B = target.label_bound
    assert out.coefficients == pytest.approx((1 / sqrt(2) + B * TAU,) * 2, abs=COEF_TOL)


def test_stops_when_the_mass_is_exactly_the_threshold():
    # 0.125² + c² evaluates (in either order) to exactly 1 − 1e-6 in float64: the stated rule Σ (B a)² >= 1 − 1e-6
    # stops there, before the remaining zero characters.
    c = 0.9921562376964628
    assert 0.125**2 + c**2 == 1.0 - 1e-6 and c**2 + 0.125**2 == 1.0 - 1e-6
    oracle = _Scripted(10, {(3,): 0.125, (6,): c})
    order = _asking_order(2, list(range(1, 10)), 1)[0]
    last = max(order.index((3,)), order.index((6,)))
    assert last < len(order) - 1
    out = correlational_search(oracle, max_degree=1, rng=2)
    assert out.complete and out.queries == last + 1 and oracle.asked == order[:last + 1]


class TestFitSlope:
    def test_exact_slopes_of_two_points(self):
        # Through two points the least-squares slope is Δlog(count)/Δlog(d); d = 1 and count = 1 (log 0) are valid.
        assert fit_slope([1, 10], [1, 10]) == pytest.approx(1.0, abs=1e-12)
        assert fit_slope([1, 100], [7, 7000]) == pytest.approx(1.5, abs=1e-12)

    def test_python_integers_beyond_int64(self):
        # Exact counts such as C(d − 1, m − 1) outgrow int64; they are read as floats.
        assert fit_slope([10**19, 10**20], [5, 50]) == pytest.approx(1.0, abs=1e-12)
        assert fit_slope([10, 100], [10**19, 10**21]) == pytest.approx(2.0, abs=1e-12)

    @pytest.mark.parametrize(("ds", "counts"), [([0, 10], [1, 5]), ([-10, 10], [1, 5]), ([10, 100], [0, 5]),
                                                ([10, 100], [-1, 5]), ([10], [3])])
    def test_refuses_non_positive_or_single_points(self, ds, counts):
        with pytest.raises(ValueError, match="need at least two positive"):
            fit_slope(ds, counts)


class TestSuccessIsTheWholeHiddenSet:
    """simulate_queries counts a trial as a success only when the search completed and found exactly the hidden set
    (``{S}`` for the hard family, the singletons of ``S`` for the control): never part of it, never more."""

    @staticmethod
    def _spied(monkeypatch, change=None):
        """Replace the simulator's search by the real one followed by ``change``; log (hidden set, outcome)."""
        import lowerbounds.simulate as simulate

        real, log = simulate.correlational_search, []

        def search(oracle, **kwargs):
            out = real(oracle, **kwargs)
            out = out if change is None else change(out, oracle.target)
            log.append((oracle.target, out))
            return out

        monkeypatch.setattr(simulate, "correlational_search", search)
        return log

    @staticmethod
    def _whole_set(target):
        S = tuple(target.subset)
        return {(j,) for j in S} if isinstance(target, SparseLinearTarget) else {S}

    @staticmethod
    def _part(out, target):
        """A proper part of the hidden set: the control's singletons but the last; for the hard family, whose hidden
        set is the one character ``S``, the character of ``S`` without its last coordinate."""
        if isinstance(target, SparseLinearTarget):
            return SearchOutcome(out.found[:-1], out.coefficients[:-1], out.queries, True)
        return SearchOutcome((tuple(target.subset[:-1]),), (1.0,), out.queries, True)

    @pytest.mark.parametrize("adversary", ["reference", "random"])
    @pytest.mark.parametrize("family", ["hard", "control"])
    @pytest.mark.parametrize("change", [
        pytest.param(lambda out, target: TestSuccessIsTheWholeHiddenSet._part(out, target), id="part-of-the-set"),
        pytest.param(lambda out, target: SearchOutcome((), (), out.queries, True), id="nothing-yet-complete"),
        # the character of every coordinate but t: never the hidden set (|S| = m − 1 < d − 1)
        pytest.param(lambda out, target: SearchOutcome(out.found + (tuple(range(1, target.d)),),
                                                       out.coefficients + (0.5,), out.queries, True),
                     id="more-than-the-set"),
        pytest.param(lambda out, target: SearchOutcome(out.found, out.coefficients, out.queries, False),
                     id="not-complete"),
    ])
    def test_constructed_outcomes_that_are_not_successes(self, monkeypatch, family, adversary, change):
        from lowerbounds import simulate_queries

        log = self._spied(monkeypatch, change)
        run = simulate_queries([8, 12], [3, 4], tolerance=0.05, adversary=adversary, trials=4, family=family, rng=0)
        assert len(log) == 16
        assert not any(out.complete and set(out.found) == self._whole_set(t) for t, out in log)  # by construction
        assert [c["successes"] for c in run["cells"]] == [0, 0, 0, 0]

    @pytest.mark.parametrize("adversary", ["reference", "random"])
    @pytest.mark.parametrize("family", ["hard", "control"])
    def test_control_the_whole_set_is_a_success(self, monkeypatch, family, adversary):
        """Control: the unchanged search at τ = 0.05 finds the whole set in most trials (every one against the
        reference adversary), and each of those is counted."""
        from lowerbounds import simulate_queries

        log = self._spied(monkeypatch)
        run = simulate_queries([8, 12], [3, 4], tolerance=0.05, adversary=adversary, trials=4, family=family, rng=0)
        whole = [out.complete and set(out.found) == self._whole_set(t) for t, out in log]
        assert [c["successes"] for c in run["cells"]] == [sum(whole[i:i + 4]) for i in range(0, 16, 4)]
        assert all(whole) if adversary == "reference" else sum(whole) >= 12

    @pytest.mark.parametrize("tolerance", [0.1, 0.2])
    def test_the_random_adversary_stops_searches_early(self, monkeypatch, tolerance):
        """At τ = 0.1 and 0.2 the random adversary's noisy coefficients (up to B·τ too large) fill the unit mass
        before the last coordinate of the control is found: such complete but partial searches are failures, and
        the successes are exactly the searches that found the whole set."""
        from lowerbounds import simulate_queries

        log = self._spied(monkeypatch)
        run = simulate_queries([8, 16], [3, 4], tolerance=tolerance, adversary="random", trials=10, family="control",
                               rng=0)
        whole = [out.complete and set(out.found) == self._whole_set(t) for t, out in log]
        partial = [out.complete and set(out.found) < self._whole_set(t) for t, out in log]
        assert sum(partial) >= 5  # the case at hand: many complete searches with part of S (measured 18 and 28)
        assert [c["successes"] for c in run["cells"]] == [sum(whole[i:i + 10]) for i in range(0, 40, 10)]
