"""Profile sections: recorded only inside a recording, with their time, calls and counted operations."""

import time

import pytest

from learner.profiling import recording, section


def test_nothing_is_recorded_outside_a_recording():
    with recording() as profile:
        pass
    with section("outside", flops=5) as count:
        assert count.flops == 5
    assert profile == {}


def test_time_calls_and_operations_add_up():
    with recording() as profile:
        for _ in range(3):
            with section("step", flops=10):
                time.sleep(0.01)
        with section("later") as count:
            count.flops = 7  # known only at the end
    assert list(profile) == ["step", "later"]
    assert profile["step"].calls == 3 and profile["step"].flops == 30
    assert profile["step"].seconds >= 0.03 and profile["later"].flops == 7


def test_nested_sections_both_count_and_an_error_is_recorded_and_raised():
    with recording() as profile:
        with pytest.raises(KeyError), section("outer"), section("inner", flops=2):
            time.sleep(0.01)
            raise KeyError("x")
    assert profile["outer"].seconds >= profile["inner"].seconds >= 0.01
    assert profile["inner"].calls == profile["outer"].calls == 1


def test_an_inner_recording_keeps_its_own_sections():
    with recording() as outer:
        with recording() as inner, section("a"):
            pass
        with section("b"):
            pass
    assert list(inner) == ["a"] and list(outer) == ["b"]
