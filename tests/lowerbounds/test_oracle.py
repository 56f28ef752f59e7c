"""SQOracle answers, adversaries, counting; the simulator's slopes and its negative control."""

from itertools import combinations

import numpy as np
import pytest

from learner import enumerate_cube
from lowerbounds import (
    CharacterQuery,
    SparseLinearTarget,
    SQOracle,
    correlational_search,
    fit_slope,
    simulate_queries,
    sq_hard_instance,
)


def _cube(d):
    return np.concatenate(list(enumerate_cube(2, d)))


@pytest.mark.parametrize("variant", ["interpolation", "steps"])
def test_character_answers_equal_enumeration(variant):
    # The closed-form Fourier coefficients against brute force over all 4^6 inputs.
    inst = sq_hard_instance(6, 3, subset=(1, 3), variant=variant)
    X = _cube(6)
    Y = inst.layer(X)
    oracle = SQOracle(inst, tolerance=0.01)
    for size in range(4):
        for U in combinations(range(1, 6), size):
            q = CharacterQuery(U)
            brute = q.evaluate(X, Y, t=inst.t, o=inst.o, bound=oracle.label_bound).mean()
            assert oracle.exact_value(q)[0] == pytest.approx(brute, abs=1e-13), U
    assert np.abs(Y[:, 0, inst.o]).max() <= oracle.label_bound + 1e-12


def test_reference_adversary_hides_everything_but_the_subset():
    inst = sq_hard_instance(10, 3, subset=(2, 7))
    oracle = SQOracle(inst, tolerance=0.05)
    answers = {U: oracle.query(CharacterQuery(U)) for U in combinations(range(1, 10), 2)}
    assert answers.pop((2, 7)) == pytest.approx(0.25)
    assert set(answers.values()) == {0.0}
    assert oracle.queries == 36
    oracle.reset()
    assert oracle.queries == 0
    # With τ above the signal the adversary answers the reference everywhere.
    blind = SQOracle(inst, tolerance=0.3)
    assert blind.query(CharacterQuery((2, 7))) == 0.0


def test_random_adversary_stays_within_tolerance():
    inst = sq_hard_instance(8, 2, subset=(3,))
    oracle = SQOracle(inst, tolerance=0.05, adversary="random", rng=0)
    q = CharacterQuery((3,))
    truth = oracle.exact_value(q)[0]
    vals = np.array([oracle.query(q) for _ in range(200)])
    assert np.all(np.abs(vals - truth) <= 0.05) and vals.std() > 0.01


def test_callable_queries_exact_by_enumeration():
    inst = sq_hard_instance(6, 2, subset=(4,))
    oracle = SQOracle(inst, tolerance=0.01)
    X = _cube(6)

    def phi(X, Y):  # a non-correlational query: the sign of the label
        return np.sign(Y[:, 0, 0])

    truth, ref = oracle.exact_value(phi)
    assert truth == pytest.approx(phi(X, inst.layer(X)).mean(), abs=1e-15)
    # The reference draws h independently: S-independent, so equal for another subset.
    assert ref == pytest.approx(SQOracle(sq_hard_instance(6, 2, subset=(2,)), tolerance=0.01).exact_value(phi)[1])
    with pytest.raises(ValueError, match=r"in \[−1, 1\]"):
        oracle.query(lambda X, Y: 3 * np.ones(X.shape[0]))


def test_bad_input():
    inst = sq_hard_instance(6, 2, subset=(4,))
    with pytest.raises(ValueError, match="`tolerance` must be finite and positive; got tolerance=0.0"):
        SQOracle(inst, tolerance=0.0)
    with pytest.raises(ValueError, match="`tolerance` must be finite and positive"):
        SQOracle(inst, tolerance=-0.1)
    with pytest.raises(ValueError, match="`adversary` must be one of"):
        SQOracle(inst, tolerance=0.1, adversary="kind")
    with pytest.raises(TypeError, match="ParityInstance .sq_hard_instance. or SparseLinearTarget"):
        SQOracle(inst.layer, tolerance=0.1)
    with pytest.raises(ValueError, match="reader t=0"):
        SQOracle(inst, tolerance=0.1).query(CharacterQuery((0,)))
    with pytest.raises(ValueError, match="`ms` must be at least 2; got ms=1"):
        simulate_queries([8, 16], [1])


class TestSimulator:
    DS = (16, 24, 32, 48, 64)

    @pytest.mark.slow  # simulated searches at five d
    def test_slopes_follow_m_minus_one(self):
        run = simulate_queries(self.DS, [2, 3, 4], tolerance=0.05, trials=25, rng=0)
        assert all(c["successes"] == c["trials"] for c in run["cells"])
        for m in (2, 3, 4):
            assert abs(run["slopes"][m] - (m - 1)) < 0.5, run["slopes"]

    def test_negative_control_is_easy(self):
        hard = simulate_queries(self.DS, [4], trials=25, rng=1)
        control = simulate_queries(self.DS, [4], trials=25, family="control", rng=1)
        assert all(c["successes"] == c["trials"] for c in control["cells"])
        assert control["slopes"][4] < 1.5
        assert control["slopes"][4] < hard["slopes"][4] - 1.0
        assert control["cells"][-1]["median"] < hard["cells"][-1]["median"] / 100

    def test_random_adversary_still_recovers(self):
        run = simulate_queries([16, 32], [3], adversary="random", trials=5, rng=2)
        assert all(c["successes"] == c["trials"] for c in run["cells"])

    def test_search_finds_the_control_coordinates(self):
        target = SparseLinearTarget(20, (3, 9, 14))
        out = correlational_search(SQOracle(target, tolerance=0.05), max_degree=3, rng=0)
        assert out.complete and sorted(out.found) == [(3,), (9,), (14,)] and out.queries <= 19

    def test_fit_slope(self):
        assert fit_slope([10, 100], [5, 500]) == pytest.approx(2.0)
        with pytest.raises(ValueError, match="two positive"):
            fit_slope([10], [1])


def test_cli_simulate(tmp_path, capsys):
    from lowerbounds.cli import main

    assert main(["sq-simulate", "--d", "16", "32", "--m", "2", "3", "--trials", "5",
                 "--json", str(tmp_path / "r.json"), "--plot", str(tmp_path / "r.png")]) == 0
    out = capsys.readouterr().out
    assert "slope" in out and "control" in out and (tmp_path / "r.png").stat().st_size > 0


def test_cli_simulate_with_one_d_keeps_its_results(tmp_path, capsys):
    """One d gives no slope: the table shows a dash, says why, and the JSON record is written."""
    import json

    from lowerbounds.cli import main

    path = tmp_path / "r.json"
    assert main(["sq-simulate", "--d", "16", "--m", "2", "3", "--trials", "3", "--json", str(path),
                 "--plot", str(tmp_path / "r.png")]) == 0
    out = capsys.readouterr().out
    assert "a slope in d needs at least two values of --d" in out
    runs = json.loads(path.read_text())["runs"]
    assert runs["hard"]["slopes"]["2"] is None and len(runs["hard"]["cells"]) == 2
    assert (tmp_path / "r.png").stat().st_size > 0


class TestCoordinatesAreIndices:
    """Coordinates are indices: a float is refused, never truncated; one beyond d is refused, never answered 0."""

    @pytest.mark.parametrize(
        ("make", "error", "match"),
        [
            (lambda: CharacterQuery((2.9,)), TypeError, r"`subset` must hold integer coordinates; got 2.9"),
            (lambda: CharacterQuery((2.0,)), TypeError, r"`subset` must hold integer coordinates; got 2.0"),
            (lambda: CharacterQuery((-1,)), ValueError, r"`subset` must hold coordinates >= 0; got -1"),
            (lambda: CharacterQuery(3), TypeError, r"`subset` must be an iterable of coordinates"),
            (lambda: sq_hard_instance(8, 3, subset=(2.5, 5)), TypeError, r"got 2.5 in subset=\(2.5, 5\)"),
            (lambda: SparseLinearTarget(8, (1.5, 3)), TypeError, r"got 1.5 in subset"),
            (lambda: SQOracle(sq_hard_instance(8, 3, subset=(2, 5)), tolerance=0.05).query(CharacterQuery((99,))),
             ValueError, r"must lie in \[0, d\) with d=8; got subset=\[99\]"),
        ],
        ids=["float", "integral float", "negative", "not iterable", "instance subset", "control subset",
             "beyond d"],
    )
    def test_bad_coordinates(self, make, error, match):
        with pytest.raises(error, match=match):
            make()

    def test_numpy_integers_are_coordinates(self):
        assert CharacterQuery(np.array([3, 1])).subset == frozenset({1, 3})
