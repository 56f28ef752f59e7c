"""Error messages of the LWR family's checks: each names the argument and what it got (checked word for word)."""

import re

import numpy as np
import pytest

from lowerbounds.attacks import exhaustive_search, linear_algebra_attack
from lowerbounds.lwr import LWRParams, PublicSamples, attention_samples, lwr_predictor


def _params():
    return LWRParams(n=3, q=7)


class TestSecret:
    def test_not_a_sequence(self):
        with pytest.raises(TypeError, match=re.escape("`secret` must be a sequence of integers; got secret=5.")):
            _params().check_secret(5)

    def test_empty(self):
        with pytest.raises(ValueError, match=re.escape("`secret` must have n >= 1 entries; got an empty secret.")):
            _params().check_secret([])


class TestSamples:
    def test_labels_of_another_length_name_the_rows_of_b(self):
        B = np.zeros((5, 3))  # 5 rows of n = 3: the labels must have 5 entries
        with pytest.raises(ValueError, match=re.escape("`labels` must have shape (5,); got (3,).")):
            PublicSamples(_params(), B, np.zeros(3))

    @pytest.mark.parametrize("attack", [exhaustive_search, linear_algebra_attack])
    def test_attacks_name_what_they_got(self, attack):
        with pytest.raises(TypeError, match=re.escape("`samples` must be PublicSamples (the attacker's view); "
                                                      "got list.")):
            attack([1, 2])

    def test_layout_names_what_it_got(self):
        samples = PublicSamples(_params(), np.zeros((2, 3)), np.zeros(2))
        with pytest.raises(TypeError, match=re.escape("`layout` must be an LWRLayout (LWRInstance.layout); got "
                                                      "dict.")):
            attention_samples(samples, {})
        with pytest.raises(TypeError, match=re.escape("got str.")):
            lwr_predictor(lambda X: X, "layout")
