"""parity_heads_check: the SQ family's m heads sign-represent the parity of m − 1 bits on every bit pattern, against
Python's own parity; the negative controls fail; one input per pattern stands for every Boolean input; bad arguments
are refused by name; the related-work page quotes the check through its build-time substitutions."""

import re
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from learner import enumerate_cube
from lowerbounds import parity_heads_check, sq_hard_instance
from lowerbounds.parity import CONTROLS, MAX_PARITY_HEADS

ROOT = Path(__file__).resolve().parents[2]
# The interpolation variant is built up to m = 7 (sq_hard_instance refuses m = 8: FORMULA_ACCURACY), steps to any m.
MEMBERS = [("interpolation", m) for m in range(2, 8)] + [("steps", m) for m in range(2, 9)]


def python_parity(bits):
    """The reference, independent of numpy: +1 for an even number of ones, −1 for an odd one."""
    return 1 if sum(int(b) for b in bits) % 2 == 0 else -1


class TestParityHeadsCheck:
    @pytest.mark.parametrize(("variant", "m"), MEMBERS, ids=[f"{v}-m{m}" for v, m in MEMBERS])
    def test_the_member_sign_represents_the_parity_on_every_pattern(self, variant, m):
        check = parity_heads_check(m, variant=variant)
        n = m - 1
        assert (check.heads, check.n_bits, check.patterns) == (m, n, 2**n)
        assert check.heads_per_bit == m / n
        # Every pattern once, in lexicographic order: the enumeration is itertools.product's.
        assert [tuple(b) for b in check.bits.tolist()] == list(product((0, 1), repeat=n))
        reference = [python_parity(b) for b in check.bits.tolist()]
        assert check.parity.tolist() == reference
        assert [int(np.sign(v)) for v in check.values] == reference
        assert check.success and check.agree == 2**n and check.margin > 0
        # The readout is the formula's ±1: the constructor bounds the float64 layer's error by FORMULA_ACCURACY
        # = 1e-9 in F, i.e. 5e-10 in the readout (F/2); the forward pass adds rounding of ~1e-16 times the
        # largest |c_i| (about 1e6 at m = 7), so 1e-9 is a bound with room.
        np.testing.assert_allclose(check.values, reference, rtol=0, atol=1e-9)
        assert check.message.startswith(f"a layer of {m} heads sign-represents the parity of n = {n} bit")

    @pytest.mark.parametrize("control", CONTROLS)
    @pytest.mark.parametrize(("variant", "m"), MEMBERS, ids=[f"{v}-m{m}" for v, m in MEMBERS])
    def test_the_controls_fail(self, variant, m, control):
        check = parity_heads_check(m, variant=variant, control=control)
        reference = [python_parity(b) for b in check.bits.tolist()]
        wrong = sum(int(np.sign(v)) != r for v, r in zip(check.values, reference, strict=True))
        assert wrong >= 1 and wrong == check.patterns - check.agree
        assert not check.success and check.margin < 0
        assert check.heads == (m - 1 if control == "drop-head" else m)
        assert check.message.startswith(f"control {control} ") and "misses the parity's sign" in check.message

    @pytest.mark.parametrize("m", [3, 4])
    @pytest.mark.parametrize("variant", ["interpolation", "steps"])
    def test_one_input_per_pattern_stands_for_every_boolean_input(self, variant, m):
        # Every two-token Boolean input of d = m + 1 (4^(m+1) of them) where the formula is claimed and the reader
        # entries differ: the readout's sign is Python's parity of the bits b_S, as for the check's inputs.
        d = m + 1
        S = tuple(range(1, m))
        inst = sq_hard_instance(d, m, S, variant=variant, offset=m if variant == "steps" else None)
        X = np.concatenate(list(enumerate_cube(2, d)))
        keep = (X[:, 0, 0] != X[:, 1, 0]) & inst.on_signal_half(X)
        X = X[keep]
        C = float(inst.layer.ws[:, 0, 0].sum())
        readout = (inst.layer(X)[:, 0, 0] - C * X[:, 1, 0]) / (X[:, 0, 0] - X[:, 1, 0])
        bits = (X[:, 0, list(S)] != X[:, 1, list(S)]).astype(int)
        assert [int(np.sign(v)) for v in readout] == [python_parity(b) for b in bits.tolist()]
        assert len(X) == 4**d // (2 if variant == "interpolation" else 4)  # half kept, a quarter with p
        check = parity_heads_check(m, variant=variant)
        assert readout.min() == pytest.approx(check.values.min(), abs=1e-9)

    def test_the_interpolation_variant_is_refused_from_m_8(self):
        with pytest.raises(ValueError, match=r"misses its formula by .* > FORMULA_ACCURACY"):
            parity_heads_check(8)

    @pytest.mark.parametrize(("kwargs", "error", "message"), [
        pytest.param({"m": 1}, ValueError, "`m` must be at least 2; got m=1.", id="one-head"),
        pytest.param({"m": MAX_PARITY_HEADS + 1}, ValueError, f"`m` must be at most {MAX_PARITY_HEADS}",
                     id="too-many-heads"),
        pytest.param({"m": 2.5}, TypeError, "`m` must be an integer", id="fractional-heads"),
        pytest.param({"m": 3, "variant": "exact"}, ValueError, "`variant` must be one of", id="unknown-variant"),
        pytest.param({"m": 3, "control": "drop"}, ValueError,
                     "`control` must be None or one of ('drop-head', 'flip-sign'); got control='drop'.",
                     id="unknown-control"),
    ])
    def test_bad_arguments_are_refused_by_name(self, kwargs, error, message):
        with pytest.raises(error, match=re.escape(message)):
            parity_heads_check(**kwargs)


class TestRelatedWorkPage:
    def test_the_page_quotes_the_check_through_its_substitutions(self):
        page = (ROOT / "docs" / "related-work.md").read_text(encoding="utf-8")
        for name in ("parity_heads_interpolation", "parity_heads_steps", "parity_heads_summary"):
            assert f"{{{{ {name} }}}}" in page, name
        assert "related-work" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8").split()

    def test_the_substitutions_are_the_checks_own(self, monkeypatch):
        monkeypatch.syspath_prepend(str(ROOT / "docs" / "_ext"))
        figures = pytest.importorskip("figures")
        subs = figures.parity_heads(heads=(3, 8))
        steps = subs["parity_heads_steps"].splitlines()
        assert len(steps) == 4  # header, rule, m = 3 and m = 8
        check = parity_heads_check(8, variant="steps")
        assert steps[3].startswith(f"| 8 | 7 | {8 / 7:.3g} | 128 | sign-represents: 128 of 128 right")
        assert f"margin {check.margin:.3g}" in steps[3] and steps[3].count("fails: ") == 2
        assert "refused: its float64 layer misses its formula by" in subs["parity_heads_interpolation"]
        assert subs["parity_heads_summary"].startswith("3 of the 3 members built sign-represent the parity")
        assert "6 of their 6 controls fail; refused: interpolation at $m = 8$" in subs["parity_heads_summary"]
