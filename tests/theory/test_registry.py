"""theory.registry: the registered checks, their cases, and run_case."""

import numpy as np
import pytest

import theory.minnorm as minnorm
from learner import random_layer
from theory.registry import CHECKS, get, run_case

NAMES = ["local_clt", "min_norm_orthogonality", "one_step", "softmax_concentration", "yield_prediction"]


class TestGet:
    @pytest.mark.parametrize("name", NAMES)
    def test_returns_the_spec_of_that_name(self, name):
        assert get(name) is CHECKS[name] and get(name).name == name

    def test_unknown_name_lists_the_known_ones(self):
        with pytest.raises(ValueError, match="unknown check 'no_such_check'; known: ") as info:
            get("no_such_check")
        listed = str(info.value).split("known: ", 1)[1].removesuffix(".").split(", ")
        assert sorted(listed) == NAMES


class TestCheckSpec:
    @pytest.mark.parametrize(("which", "function"), [
        ("default", minnorm.default_min_norm_orthogonality),
        ("control", minnorm.control_min_norm_orthogonality),
    ])
    def test_case_resolves_the_builder(self, which, function):
        assert get("min_norm_orthogonality").case(which) is function

    def test_check_function(self):
        assert get("min_norm_orthogonality").check_function is minnorm.check_min_norm_orthogonality

    def test_unknown_case(self):
        with pytest.raises(ValueError, match="`which` must be 'default' or 'control'; got which='other'"):
            get("min_norm_orthogonality").case("other")


class TestRunCase:
    def test_seed_sequence_is_used_as_given(self):
        # A spawned child has its parent's entropy but its own stream: the case must draw from the child itself.
        child = np.random.SeedSequence(11).spawn(1)[0]
        result = run_case("min_norm_orthogonality", "control", rng=child, m=2, d=3)
        thetas = random_layer(2, 3, rng=np.random.SeedSequence(11).spawn(1)[0]).thetas
        expected = minnorm.check_min_norm_orthogonality(thetas, point=thetas.mean(axis=0))
        assert result.details["inner_products"] == expected.details["inner_products"]
        assert result.seed_entropy == 11

    @pytest.mark.parametrize("which", ["default", "control"])
    def test_int_seed_is_recorded_and_replays(self, which):
        first, again = (run_case("min_norm_orthogonality", which, rng=5, m=2, d=3) for _ in range(2))
        assert first.seed_entropy == again.seed_entropy == 5
        assert first.details["inner_products"] == again.details["inner_products"]

    def test_no_seed_records_fresh_entropy(self):
        result = run_case("min_norm_orthogonality", rng=None, m=2, d=3)
        assert isinstance(result.seed_entropy, int)

    def test_unknown_parameter_names_what_the_case_takes(self):
        # The min-norm cases take m and d (rng is run_case's own argument, not a case parameter).
        with pytest.raises(ValueError, match=r"takes no parameter 'k'; it takes m, d\.$"):
            run_case("min_norm_orthogonality", "control", k=1)

    def test_case_without_parameters(self, monkeypatch):
        original = minnorm.default_min_norm_orthogonality

        def bare(*, rng=None):
            return original(m=2, d=3, rng=rng)

        monkeypatch.setattr(minnorm, "default_min_norm_orthogonality", bare)
        with pytest.raises(ValueError, match=r"takes no parameter 'm'; it takes none\.$"):
            run_case("min_norm_orthogonality", m=2)
        assert run_case("min_norm_orthogonality", rng=1).parameters["m"] == 2

    def test_case_with_keyword_catch_all_takes_anything(self, monkeypatch):
        original, seen = minnorm.default_min_norm_orthogonality, {}

        def loose(*, rng=None, **params):
            seen.update(params)
            return original(m=2, d=3, rng=rng)

        monkeypatch.setattr(minnorm, "default_min_norm_orthogonality", loose)
        run_case("min_norm_orthogonality", anything=1)
        assert seen == {"anything": 1}
