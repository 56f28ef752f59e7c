"""theory.testing: strategies produce valid objects; assertions explain themselves."""

import numpy as np
import pytest
from hypothesis import given

from learner import AttentionLayer, check_inputs
from theory._core import finish
from theory.testing import assert_check_fails, assert_check_holds, boolean_inputs, layers, slices


def _result(holds):
    return finish(name="demo", claim="x is small", source="ours", parameters={"x": 1},
                  measured=0.5 if holds else 2.0, bound=1.0, seed_entropy=42)


class TestAssertions:
    def test_holds_passes_and_fails_with_claim(self):
        assert_check_holds(_result(True))
        with pytest.raises(AssertionError, match=r"(?s)x is small.*measured 2.*<= 1.*FAILS.*seed entropy: 42"):
            assert_check_holds(_result(False))

    def test_fails_passes_and_fails_with_claim(self):
        assert_check_fails(_result(False))
        with pytest.raises(AssertionError, match="negative control unexpectedly held"):
            assert_check_fails(_result(True))


class TestStrategies:
    @given(layers(max_m=3, max_d=4))
    def test_layers_are_valid(self, layer):
        """Generated layers are AttentionLayers with 1 <= m <= 3, 2 <= d <= 4."""
        assert isinstance(layer, AttentionLayer) and 1 <= layer.m <= 3 and 2 <= layer.d <= 4

    @given(boolean_inputs(3, 2))
    def test_inputs_are_boolean(self, X):
        """Generated inputs pass the Boolean validation."""
        assert check_inputs(X, k=3, d=2, boolean=True).shape[1:] == (3, 2)

    @given(slices(max_n=8, integer=True))
    def test_slices(self, a_weight):
        """Slices have 0 <= weight <= n and integer coefficients when asked."""
        a, weight = a_weight
        assert 0 <= weight <= len(a) and np.all(a == np.round(a))
