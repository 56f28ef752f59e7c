"""The lemma checks as tests: ``pytest --pyargs theory`` runs these from an installed package.

Every registered check must hold on its default case and fail on its
negative control (a check that cannot fail proves nothing).
"""

import pytest

from theory.registry import CHECKS, run_case
from theory.testing import assert_check_fails, assert_check_holds


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_check_holds_at_default_sizes(name: str) -> None:
    assert_check_holds(run_case(name, "default", rng=0))


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_negative_control_fails(name: str) -> None:
    assert_check_fails(run_case(name, "control", rng=0))
