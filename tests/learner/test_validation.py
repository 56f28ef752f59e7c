"""Every validation rule at the public boundary of learner, in one table.

Each row calls a public function with one bad argument and checks the exception
type and that the message names the parameter and the bad value, as written in
learner/validation.py and the modules' own checks.
"""

import re

import numpy as np
import pytest

from learner import (
    AttentionLayer,
    assumptions,
    check_inputs,
    enumerate_cube,
    match_heads,
    random_layer,
    relative_error,
    sample_inputs,
    save_layer,
)

GOOD = np.zeros((1, 2, 2))


def _layer():
    return AttentionLayer(np.zeros((1, 2, 2)), np.eye(2)[None])


def _with(value, index=(0, 0, 0), dtype=float):
    a = np.zeros((1, 2, 2), dtype=dtype)
    a[index] = value
    return a


def _lit(text):
    """Match ``text`` literally (messages contain backticks, brackets and dots)."""
    return re.escape(text)


CASES = [
    # AttentionLayer construction
    pytest.param(lambda: AttentionLayer(np.zeros((2, 2)), np.zeros((2, 2))), ValueError,
                 _lit("`thetas` must have 3 dimensions; got shape (2, 2)"), id="layer-thetas-2d"),
    pytest.param(lambda: AttentionLayer(GOOD, np.zeros((2, 2, 2))), ValueError,
                 _lit("`ws` must have the same shape as `thetas` (1, 2, 2); got (2, 2, 2)"), id="layer-shape-mismatch"),
    pytest.param(lambda: AttentionLayer(np.zeros((1, 2, 3)), np.zeros((1, 2, 3))), ValueError,
                 _lit("`thetas` must have shape (m, d, d) with d >= 1; got (1, 2, 3)"), id="layer-non-square"),
    pytest.param(lambda: AttentionLayer(np.zeros((0, 2, 2)), np.zeros((0, 2, 2))), ValueError,
                 _lit("a layer needs at least one head; got m=0"), id="layer-m=0"),
    pytest.param(lambda: AttentionLayer(_with(np.nan), GOOD), ValueError,
                 _lit("`thetas` must be finite; it contains nan"), id="layer-thetas-nan"),
    pytest.param(lambda: AttentionLayer(GOOD, _with(-np.inf)), ValueError,
                 _lit("`ws` must be finite; it contains -inf"), id="layer-ws-inf"),
    pytest.param(lambda: AttentionLayer(_with(1j, dtype=complex), GOOD), TypeError,
                 _lit("`thetas` must hold real numbers; got dtype complex128"), id="layer-complex"),
    pytest.param(lambda: AttentionLayer(GOOD, _with(1.0, dtype=object)), TypeError,
                 _lit("`ws` must hold real numbers; got dtype object"), id="layer-object"),
    # AttentionLayer.__call__ / attention
    pytest.param(lambda: _layer()(np.zeros((3, 4, 3))), ValueError,
                 _lit("`X` must have token dimension d=2; got shape (3, 4, 3)"), id="call-wrong-d"),
    pytest.param(lambda: _layer()(np.full((4, 2), np.nan)), ValueError,
                 _lit("`X` must be finite; it contains nan"), id="call-X-nan"),
    pytest.param(lambda: _layer()(np.zeros((1, 1, 4, 2))), ValueError,
                 _lit("`X` must have 2 dimensions or 3 dimensions; got shape (1, 1, 4, 2)"), id="call-X-4d"),
    pytest.param(lambda: _layer()(np.zeros((1, 4, 2)), batch=0), ValueError,
                 _lit("`batch` must be at least 1; got batch=0"), id="call-batch=0"),
    pytest.param(lambda: _layer().attention(np.zeros((1, 4, 2)), batch=1.5), TypeError,
                 _lit("`batch` must be an integer; got batch=1.5"), id="attention-batch-float"),
    pytest.param(lambda: _layer().attention(np.zeros((3, 4, 3))), ValueError,
                 _lit("`X` must have token dimension d=2; got shape (3, 4, 3)"), id="attention-wrong-d"),
    # sample_inputs
    pytest.param(lambda: sample_inputs(0, 2, 2), ValueError,
                 _lit("`n_samples` must be at least 1; got n_samples=0"), id="sample-n_samples=0"),
    pytest.param(lambda: sample_inputs(3, 0, 2), ValueError,
                 _lit("`k` must be at least 1; got k=0"), id="sample-k=0"),
    pytest.param(lambda: sample_inputs(3, 2, -1), ValueError,
                 _lit("`d` must be at least 1; got d=-1"), id="sample-d=-1"),
    pytest.param(lambda: sample_inputs(3, 2.5, 2), TypeError,
                 _lit("`k` must be an integer; got k=2.5"), id="sample-k=2.5"),
    pytest.param(lambda: sample_inputs(3, True, 2), TypeError,
                 _lit("`k` must be an integer; got k=True"), id="sample-k=True"),
    pytest.param(lambda: sample_inputs(3, 2, 2, distribution="uniform"), ValueError,
                 _lit("`distribution` must be one of ('boolean', 'gaussian'); got distribution='uniform'"),
                 id="sample-distribution-uniform"),
    # check_inputs
    pytest.param(lambda: check_inputs(np.full((1, 2, 2), 0.5), boolean=True), ValueError,
                 # the message uses repr(), which numpy 2 spells np.float64(0.5)
                 _lit("`X` must be Boolean (entries -1 or +1); it contains ") + r"(np\.float64\()?0\.5",
                 id="check-not-boolean"),
    pytest.param(lambda: check_inputs(np.ones((1, 2, 2)), k=3), ValueError,
                 _lit("`X` must have k=3 tokens per sequence; got shape (1, 2, 2)"), id="check-wrong-k"),
    pytest.param(lambda: check_inputs(np.ones((1, 0, 2))), ValueError,
                 _lit("`X` must have at least one token of dimension >= 1; got shape (1, 0, 2)"), id="check-no-tokens"),
    pytest.param(lambda: check_inputs([[1.0, 2.0], [3.0]]), ValueError,
                 _lit("`X` could not be converted to an array"), id="check-ragged"),
    # enumerate_cube (a generator: validation happens on the first next())
    pytest.param(lambda: next(enumerate_cube(0, 2)), ValueError,
                 _lit("`k` must be at least 1; got k=0"), id="cube-k=0"),
    pytest.param(lambda: next(enumerate_cube(2, 2, batch=0)), ValueError,
                 _lit("`batch` must be at least 1; got batch=0"), id="cube-batch=0"),
    # random_layer
    pytest.param(lambda: random_layer(0, 4), ValueError,
                 _lit("`m` must be at least 1; got m=0"), id="random-m=0"),
    pytest.param(lambda: random_layer(1, 4, logit_scale=-1), ValueError,
                 _lit("`logit_scale` must be finite and non-negative; got logit_scale=-1.0"),
                 id="random-logit_scale=-1"),
    pytest.param(lambda: random_layer(1, 4, logit_scale=float("nan")), ValueError,
                 _lit("`logit_scale` must be finite and non-negative; got logit_scale=nan"),
                 id="random-logit_scale=nan"),
    pytest.param(lambda: random_layer(1, 4, w_scale=0), ValueError,
                 _lit("`w_scale` must be finite and positive; got w_scale=0.0"), id="random-w_scale=0"),
    pytest.param(lambda: random_layer(1, 4, w_scale="1"), TypeError,
                 _lit("`w_scale` must be a real number; got w_scale='1'"), id="random-w_scale-str"),
    pytest.param(lambda: random_layer(1, 4, max_tries=0), ValueError,
                 _lit("`max_tries` must be at least 1; got max_tries=0"), id="random-max_tries=0"),
    # relative_error
    pytest.param(lambda: relative_error(_layer(), _layer(), 2, n_samples=0), ValueError,
                 _lit("`n_samples` must be at least 1; got n_samples=0"), id="relerr-n_samples=0"),
    pytest.param(lambda: relative_error(_layer(), _layer(), 2, distribution="bernoulli"), ValueError,
                 _lit("got distribution='bernoulli'"), id="relerr-distribution"),
    pytest.param(lambda: relative_error(_layer(), "layer", 2), TypeError,
                 _lit("`g` must be an AttentionLayer; got str"), id="relerr-g-not-layer"),
    pytest.param(lambda: relative_error(_layer(), _layer(), 0), ValueError,
                 _lit("`k` must be at least 1; got k=0"), id="relerr-k=0"),
    # match_heads
    pytest.param(lambda: match_heads(_layer(), np.zeros((1, 2, 2))), TypeError,
                 _lit("`estimate` must be an AttentionLayer; got ndarray"), id="match-estimate-not-layer"),
    pytest.param(lambda: match_heads(None, _layer()), TypeError,
                 _lit("`reference` must be an AttentionLayer; got NoneType"), id="match-reference-not-layer"),
    # save_layer
    pytest.param(lambda: save_layer("unused.npz", {"thetas": GOOD}), TypeError,
                 _lit("`layer` must be an AttentionLayer; got dict"), id="save-not-layer"),
    pytest.param(lambda: save_layer("unused.npz", _layer(), metadata=[("seed", 0)]), TypeError,
                 _lit("`metadata` must be a dict; got list"), id="save-metadata-not-dict"),
    # assumptions
    pytest.param(lambda: assumptions(_layer(), k=0), ValueError,
                 _lit("`k` must be at least 1; got k=0"), id="assumptions-k=0"),
    pytest.param(lambda: assumptions(GOOD), TypeError,
                 _lit("`layer` must be an AttentionLayer; got ndarray"), id="assumptions-not-layer"),
]


class TestValidation:
    @pytest.mark.parametrize(("call", "error", "match"), CASES)
    def test_rejects_bad_argument(self, call, error, match, tmp_path, monkeypatch):
        """The call raises ``error`` with a message naming the parameter and its bad value."""
        monkeypatch.chdir(tmp_path)  # nothing may be written, but if it were, not into the repository
        with pytest.raises(error, match=match):
            call()
        assert list(tmp_path.iterdir()) == []


class TestRngArguments:
    """Seeds are validated where they enter, and the error names `rng` (not numpy's SeedSequence words)."""

    @pytest.mark.parametrize(
        ("value", "error", "match"),
        [(-1, ValueError, r"`rng` must be a non-negative integer seed; got rng=-1"),
         ("abc", TypeError,
          r"`rng` must be None, a non-negative integer, a SeedSequence or a Generator; got rng='abc'"),
         (1.5, TypeError, r"got rng=1.5"),
         (True, TypeError, r"got rng=True")],
        ids=["negative", "string", "float", "bool"],
    )
    @pytest.mark.parametrize(
        "call",
        [lambda r: __import__("learner").random_layer(2, 4, rng=r),
         lambda r: __import__("learner").sample_inputs(2, 2, 3, rng=r),
         lambda r: __import__("learner").LayerOracle(__import__("learner").random_layer(1, 3, rng=0), 2, rng=r),
         lambda r: __import__("lowerbounds").sq_hard_instance(8, 3, rng=r)],
        ids=["random_layer", "sample_inputs", "LayerOracle", "sq_hard_instance"],
    )
    def test_bad_seed(self, call, value, error, match):
        with pytest.raises(error, match=match):
            call(value)

    @pytest.mark.parametrize("value", [None, 0, 7, np.int64(3)])
    def test_good_seeds(self, value):
        from learner.validation import check_rng

        assert isinstance(check_rng(value), np.random.Generator)
        gen = np.random.default_rng(1)
        assert check_rng(gen) is gen


class TestDeclaredRules:
    """The validation layer's rules: one declaration, the library's check and the CLI's type."""

    def test_library_and_cli_give_the_same_verdict_and_name_their_own_spelling(self):
        import argparse

        from learner.argparsing import cli_type
        from learner.baselines import OPTION_RULES

        rule = OPTION_RULES["lr"]
        with pytest.raises(ValueError, match=r"`lr` must be finite and positive; got lr=0.0"):
            rule.check("lr", 0.0)
        parse = cli_type("--adam-lr", rule)
        with pytest.raises(argparse.ArgumentTypeError, match=r"`--adam-lr` must be finite and positive"):
            parse("0")
        assert parse("0.5") == rule.check("lr", 0.5) == 0.5

    @pytest.mark.parametrize("text", ["0", "-1", "1.5", "x", "", "1e3"])
    def test_integer_rule_refuses_what_is_not_a_positive_integer(self, text):
        import argparse

        from learner.argparsing import cli_type
        from learner.validation import Integer

        with pytest.raises(argparse.ArgumentTypeError, match="`--epochs` must be"):
            cli_type("--epochs", Integer())(text)

    def test_fit_functions_use_the_rules(self):
        from learner import LayerOracle, random_layer
        from learner.baselines import fit_gradient

        oracle = LayerOracle(random_layer(1, 3, check=False, rng=0), k=2, rng=0)
        with pytest.raises(ValueError, match="`lr` must be finite and positive; got lr=0"):
            fit_gradient(oracle, m=1, lr=0)
        with pytest.raises(TypeError, match="`patience` must be an integer; got patience=2.5"):
            fit_gradient(oracle, m=1, patience=2.5)

    @pytest.mark.parametrize("value", ["no", "yes", 0, 1, None])
    def test_check_bool_refuses_strings_and_numbers(self, value):
        from learner.validation import check_bool

        with pytest.raises(TypeError, match="must be True or False"):
            check_bool("check", value)


def _command_options():
    """``(command, flag, action)`` of every option of the three command lines' sub-commands."""
    import argparse
    import importlib

    for package in ("learner", "theory", "lowerbounds"):
        parser = importlib.import_module(f"{package}.cli").build_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for command, p in sub.choices.items():
            for action in p._actions:
                if action.option_strings:
                    yield f"{package} {command}", action.option_strings[-1], action


def _declared_options():
    """Every command-line option whose type comes from a function's declared rule: (command, flag, owner, rule)."""
    return [(command, flag, *action.declared, action) for command, flag, action in _command_options()
            if hasattr(action, "declared")]


class TestDeclare:
    """``@declare`` and ``declare_options``: one declaration per parameter, checked in Python and on the command
    line."""

    def test_checks_given_arguments_converts_and_skips_defaults(self):
        from learner.validation import Integer, Real, declare

        @declare(n=Integer(), scale=Real(allow_zero=True))
        def f(n, *, scale=-1.0):  # a default outside the rule: defaults are the function's own business
            return n, scale

        assert f(np.int64(3)) == (3, -1.0) and type(f(np.int64(3))[0]) is int
        assert f(2, scale=0) == (2, 0.0)
        with pytest.raises(ValueError, match=r"`n` must be at least 1; got n=0"):
            f(0)
        with pytest.raises(ValueError, match=r"`scale` must be finite and non-negative; got scale=-2.0"):
            f(1, scale=-2)
        with pytest.raises(TypeError, match=r"`n` must be an integer; got n='3'"):
            f("3")
        assert set(f.rules) == {"n", "scale"}

    def test_unknown_parameter_is_refused_at_declaration(self):
        from learner.validation import Integer, declare

        with pytest.raises(TypeError, match=r"has no parameter\(s\) \['m'\]"):
            @declare(m=Integer())
            def f(n):
                return n

    @pytest.mark.parametrize(("rule", "value", "match"), [
        ("Each", [2, 2], "must hold distinct values"),
        ("Each", [], "at least one value"),
        ("Each", "12", "must be a list"),
        ("OrWord", 0, r"at least 1 \(or the word 'auto'\); got x=0"),
        ("Seed", -1, "non-negative integer"),
        ("Choice", "bogus", "must be one of"),
        ("Real-below", 1.0, "must be below 1"),
    ])
    def test_rules_refuse(self, rule, value, match):
        from learner.validation import Choice, Each, Integer, OrWord, Real, Seed

        rules = {"Each": Each(Integer()), "OrWord": OrWord("auto", Integer()), "Seed": Seed(),
                 "Choice": Choice(("a", "b")), "Real-below": Real(below=1)}
        with pytest.raises((TypeError, ValueError), match=match):
            rules[rule].check("x", value)

    def test_rules_accept(self):
        """Control: the values the rules exist to let through."""
        from learner.validation import Each, Integer, OrWord, Seed

        assert Each(Integer(2), scalar=True).check("k", 3) == 3
        assert Each(Integer()).check("m", (1, 2)) == [1, 2]
        assert OrWord("auto", Integer()).check("d", "auto") == "auto"
        assert Seed().check("seed", 10**40) == 10**40

    def test_every_declared_option_has_its_functions_rule(self):
        """Single source: the option's type runs the very rule object the function declared (not a copy)."""
        options = _declared_options()
        assert len(options) >= 40, len(options)  # the three command lines: measured 40+ when this was written
        for command, flag, owner, rule, action in options:
            if owner is None:  # a rule given to the command line directly (e.g. LearnConfig's fields)
                continue
            target = owner.__init__ if isinstance(owner, type) else owner
            assert rule in target.rules.values(), (command, flag)
            # A size option keeps the declared rule under its limit (learner.argparsing.limit_options).
            inner = getattr(action, "unlimited", action.type).rule
            assert inner is (rule.rule if type(rule).__name__ == "Each" else rule), (command, flag)

    def test_every_declared_option_refuses_at_parsing_naming_the_flag(self):
        """Each declared option, given a value its rule refuses, stops argparse with the flag named."""
        import argparse

        from learner.validation import Each, Integer, OrWord, Real, Seed

        for command, flag, _owner, rule, action in _declared_options():
            inner = rule.rule if isinstance(rule, (Each, OrWord)) else rule
            if isinstance(inner, Integer):
                bad = str((inner.minimum or 0) - 1)
            elif isinstance(inner, (Real, Seed)):
                bad = "-1" if not (isinstance(inner, Real) and not inner.sign) else "nan"
            else:
                continue
            with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"`{flag}` must be")):
                action.type(bad)
            # Control: a value inside the rule passes.
            good = str(max(getattr(inner, "minimum", 0) or 0, 1)) if isinstance(inner, (Integer, Seed)) else "0.5"
            assert action.type(good) is not None, (command, flag)


#: Numeric options whose rule is not one function's parameter, each with its own named type: --seed (the Seed
#: rule: SeedSequence entropy of the whole command), learn's --workers/--blas-threads (a count or a word:
#: "auto", "default"), theory check's --param (key=value pairs checked by the chosen check's rules);
#: lowerbounds' --subset and --secret (checked against --d/--m and --n/--q: relations, not one value's range)
#: and lwe's --max-evaluations (the command line's 0 stands for the function's None: no limit); learn's --device
#: (a name, checked against the devices torch sees: learner.argparsing.cli_device).
UNDECLARED = {"--seed", "--workers", "--blas-threads", "--param", "--subset", "--secret", "--max-evaluations",
              "--device"}


def test_every_numeric_option_is_declared():
    """Coverage of the validation layer: each option of the three command lines with a type takes it from a
    declared rule (or is one of the few listed above, with a reason)."""
    left = [f"{command} {flag}" for command, flag, action in _command_options()
            if action.type is not None and not hasattr(action, "declared") and flag not in UNDECLARED]
    assert not left, left


def test_flag_message_names_the_flags_of_the_command():
    """theory/lowerbounds (not yet declared): a library message on their command line names the flags typed."""
    from learner.argparsing import flag_message
    from lowerbounds.cli import build_parser

    parser = build_parser()
    assert (flag_message(parser, "learn-hard", "`max_examples` must be at least 1; got max_examples=0.")
            == "`--max-examples` must be at least 1; got --max-examples=0.")
    # Controls: a name that is not an option of that command, or a longer word containing one, stays.
    assert flag_message(parser, "sq", "`n_geometry` must be even; got d_max=3.") == \
        "`n_geometry` must be even; got d_max=3."
    assert flag_message(parser, "no-such-command", "`d` bad") == "`d` bad"


class TestHugeSeeds:
    """One Seed rule for every ``--seed`` and ``seed=``: the studies and the learner take a 40-digit seed (no
    int64 cap); the command line accepts any size up to Python's 4300-digit limit on parsing integers, and
    beyond it says so naming ``--seed`` rather than failing later elsewhere."""

    HUGE = "7" * 4301
    BIG = 10**40 + 3

    @staticmethod
    def _seed_commands():
        seen = {}
        for command, flag, action in _command_options():
            if flag == "--seed":
                seen.setdefault(command, action)
        return seen

    def test_every_seed_option_refuses_too_many_digits_naming_the_flag(self, capsys):
        import importlib

        commands = self._seed_commands()
        assert len(commands) >= 10, sorted(commands)  # every command that draws anything takes --seed
        for command in commands:
            package, sub = command.split()
            parser = importlib.import_module(f"{package}.cli").build_parser()
            with pytest.raises(SystemExit) as exc:
                parser.parse_args([sub, "--seed", self.HUGE])
            assert exc.value.code == 2, command
            last = capsys.readouterr().err.strip().splitlines()[-1]
            assert "--seed" in last and "4300 digits" in last, (command, last)
            assert self.HUGE not in last  # the message quotes a prefix, not 4301 digits

    def test_every_seed_help_states_the_default_it_has(self):
        """Every ``--seed`` has help, and it states the default the option has (0 is not "fresh entropy")."""
        for command, action in self._seed_commands().items():
            said = "(default: fresh entropy, printed)" if action.default is None else f"(default {action.default})"
            assert action.help and said in action.help, (command, action.default, action.help)

    def test_control_every_seed_option_takes_a_forty_digit_seed(self):
        """Control: the same options parse a 40-digit seed to the integer itself."""
        for command, action in self._seed_commands().items():
            assert action.type(str(self.BIG)) == self.BIG, command

    def test_the_learner_samples_from_a_forty_digit_seed_reproducibly(self, tmp_path, capsys):
        from learner.cli import main

        def sample(seed, name):
            assert main(["sample", "--m", "1", "--d", "4", "--k", "2", "--seed", str(seed), "--out",
                         str(tmp_path / f"{name}.npz")]) == 0
            with np.load(tmp_path / f"{name}.npz") as z:
                return {k: z[k] for k in z.files if z[k].dtype.kind == "f"}

        a, b, c = sample(self.BIG, "a"), sample(self.BIG, "b"), sample(self.BIG + 1, "c")
        assert a and all(np.array_equal(a[k], b[k]) for k in a)
        assert any(not np.array_equal(a[k], c[k]) for k in a)  # control: the seed is used, not truncated

    def test_studies_plan_and_seed_runs_from_a_forty_digit_seed(self, tmp_path):
        """The scaling and peer studies (planned, not run) and the learn-hard runs keep the seed's
        every digit: two seeds that agree to int64 precision give different planted layers."""
        import json

        from learner.study import peers, scaling
        from learner.sweep.runs import RunSpec, plan_runs, planted_instance
        from lowerbounds.learnhard import HardSpec, plan_hard_runs, planted_member

        # run=False summarises existing records only: reaching "nothing to summarise" (the folder, checked after
        # the plan) means the seed passed the rule and the runs were planned (an int64 cap refused it first,
        # naming `seed`)
        with pytest.raises(ValueError, match="nothing to summarise"):
            scaling.scaling_study(tmp_path / "s", ms=(1,), d=4, k=2, seeds=1, seed=self.BIG, plot=False, run=False)
        with pytest.raises(ValueError, match="nothing to summarise"):
            peers.peer_study(tmp_path / "p", ms=(1,), d=4, seeds=1, seed=self.BIG, run=False)

        def layer(entropy):
            spec = plan_runs(ms=(1,), d=4, k=2, seeds=1, methods=("provable",), entropy=entropy)[0]
            again = RunSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
            assert again.entropy == entropy  # the record keeps every digit
            return planted_instance(again)[0]

        first, second = layer(self.BIG), layer(self.BIG + 2**70)  # equal as int64 would wrap them
        assert not np.array_equal(first.thetas, second.thetas)
        from lowerbounds.learnhard import DEFAULTS, check_study

        checked = check_study(ds=(6,), ms=(2,), subsets=1, lwr_ns=(), q=DEFAULTS["q"], families=("sq",),
                              methods=("adam",), start=DEFAULTS["start"], max_examples=DEFAULTS["max_examples"],
                              max_seconds=DEFAULTS["max_seconds"], target=DEFAULTS["target"], provable_seeds=0,
                              lwr_secrets=1)
        hard = plan_hard_runs(checked, entropy=self.BIG)[0]
        assert HardSpec.from_dict(json.loads(json.dumps(hard.to_dict()))).entropy == self.BIG
        planted_member(hard)
