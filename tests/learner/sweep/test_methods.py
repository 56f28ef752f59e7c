"""The registry of study methods: its entries, its checks, and that a new method is one entry.

The toy method at the end is registered by this test alone (nothing else in the toolkit names it): the peers study,
a run specification, the sweep's example stream and the race's command-line choices pick it up from the registry."""

import dataclasses
import re

import pytest

from learner.result import LearnResult
from learner.sweep import methods
from learner.sweep.methods import METHODS, StudyMethod, check_methods, get, method_names, register

#: The methods the toolkit registers itself, in order.
BUILT_IN = ("provable", "adam", "torch-adam", "torch-adam-gpu")


@pytest.fixture
def registry():
    """The registry as it was, restored after the test (a toy method must not leak into other tests)."""
    saved = dict(METHODS)
    yield METHODS
    METHODS.clear()
    METHODS.update(saved)


class TestEntries:
    def test_the_registered_methods_and_their_roles(self):
        # The toolkit's own methods, in their order; a method registered later may follow them (no edit here).
        names = method_names()
        assert [n for n in names if n in BUILT_IN] == list(BUILT_IN)  # in their order; a new method may go anywhere
        assert "provable" in method_names(role="learner") and set(method_names(role="learner")) <= set(names)
        tuned, plain = set(method_names(tuned_lr=True)), set(method_names(needs_extra=False))
        assert {"adam", "torch-adam", "torch-adam-gpu"} <= tuned and "provable" not in tuned
        assert {"provable", "adam"} <= plain and not {"torch-adam", "torch-adam-gpu"} & plain
        assert [get(n).example_stream for n in BUILT_IN] == [2, 1, 1, 1]
        assert methods.example_stream("exhaustive") == 1 and methods.example_stream("exhaustive", 7) == 7

    def test_options_are_declared_by_the_functions_that_take_them(self):
        from learner.baselines import fit_gradient
        from learner.phases import LearnConfig

        assert get("adam").options_callable() is fit_gradient and get("provable").options_callable() is LearnConfig
        assert get("adam").defaults()["n_train"] == 20_000 and "lr" in get("adam").rules()
        assert get("provable").defaults()["batch"] == LearnConfig().batch
        with pytest.raises(ValueError, match="refined_tol"):
            get("provable").check_options({"refined_tol": -1.0})
        get("adam").check_options({"lr": -1.0})  # no check of its own: the fit function checks when it runs

    def test_unknown_and_duplicate_names(self, registry):
        with pytest.raises(ValueError, match=rf"`method` must be one of {re.escape(str(method_names()))}; "
                                             r"got method='sgd'"):
            get("sgd")
        with pytest.raises(ValueError, match="registered already"):
            register(dataclasses.replace(get("adam")))
        with pytest.raises(TypeError, match="must be a StudyMethod"):
            register("adam")
        with pytest.raises(ValueError, match="`role` must be one of"):
            StudyMethod("x", "", lambda *a, **k: None, "m:f", role="oracle")
        with pytest.raises(ValueError, match="'module:name'"):
            StudyMethod("x", "", lambda *a, **k: None, "module.f", role="baseline")

    @pytest.mark.parametrize(("values", "why"), [(["adam", "sgd"], "unknown 'sgd'"), ([], "none given"),
                                                 (["adam", "adam"], "a method repeated")])
    def test_check_methods_names_the_parameter(self, values, why):
        with pytest.raises(ValueError, match=rf"`search_methods` must be .*\({why}\)"):
            check_methods("search_methods", values)
        with pytest.raises(TypeError, match="`methods` must be a sequence"):
            check_methods("methods", "adam")
        assert check_methods("methods", ("torch-adam", "provable")) == ["torch-adam", "provable"]

    def test_torch_adam_on_a_fixed_set_keeps_its_steps(self):
        # Measured runs: 20,000 training examples in batches of 256 are 78 steps per epoch; on a set of 1,000
        # (800 for training: 3 steps per epoch) the epochs are raised by 78/3 = 26 times (rounded up).
        torch = get("torch-adam")
        d = torch.defaults()
        assert (d["n_train"], d["batch"]) == (20_000, 256)
        out = torch.on_fixed_set({"examples": 1000}, 1000)
        assert out == {"examples": 1000, "epochs": -(-d["epochs"] * 78 // 3), "eval_every": 78}
        assert get("adam").on_fixed_set({"examples": 1000}, 1000) == {"examples": 1000}

    def test_the_gpu_recipe_is_full_batch_on_cuda_and_present_only_with_a_device(self, registry):
        """The GPU user's Adam: fit_torch on every training example at every step, on the CUDA device; the
        comparisons run it where torch sees a device and leave it out elsewhere (a fake device check shows
        both); on a fixed set its epochs stay (one step per epoch at every size)."""
        gpu = get("torch-adam-gpu")
        assert gpu.options_callable() is get("torch-adam").options_callable()
        assert gpu.study_options == {"device": "cuda", "batch": None}
        assert gpu.on_fixed_set({"batch": None}, 1000) == {"batch": None, "epochs": gpu.defaults()["epochs"],
                                                           "eval_every": 1}
        registry["torch-adam-gpu"] = dataclasses.replace(gpu, present=lambda: False)
        assert methods.present_names() == tuple(n for n in method_names() if n != "torch-adam-gpu")
        registry["torch-adam-gpu"] = dataclasses.replace(gpu, present=lambda: True)
        assert methods.present_names() == method_names()

    def test_the_gpu_recipe_without_a_device_says_so(self):
        torch = pytest.importorskip("torch")
        if torch.cuda.is_available():
            pytest.skip("this machine has a CUDA device")
        assert not get("torch-adam-gpu").available()
        with pytest.raises(ValueError, match=r"^`device` must be a .* sees 0 CUDA devices\); got device='cuda'"):
            get("torch-adam-gpu").require()


def _toy_runner(oracle, *, m, truth, rng, logit_scale, learn_workers, options):
    """A toy method that returns the planted layer itself after drawing ``options["draw"]`` examples."""
    oracle.draw(options.get("draw", 10))
    return LearnResult(layer=truth, success=True, status="toy", message="the planted layer, read off", m=m,
                       m_estimated=False, examples_drawn=oracle.n_drawn, timings={"total": 0.5}, phases={},
                       diagnostics={}, errors={"relative_error": 0.0})


def test_a_toy_method_is_one_registry_entry(registry, tmp_path):
    from learner.study.peers import peer_study
    from learner.sweep.runs import RunSpec, run_one

    register(StudyMethod("toy", "reads the planted layer", _toy_runner, "learner.sweep.methods:quick_options",
                         role="learner", example_stream=3, quick={"draw": 5}))
    assert method_names()[-1] == "toy" and methods.quick_options()["toy"] == {"draw": 5}
    assert methods._listing().splitlines()[-1] == "- ``toy`` (learner) — reads the planted layer"  # the docs' list
    # One run: the specification, the record, the example stream the sweep checks.
    spec = RunSpec("toy", 1, 6, 2, 0, 7, options=(("draw", 12),))
    rec = run_one(spec)
    assert (rec["outcome"], rec["status"], rec["examples_drawn"], rec["example_stream"]) == ("finished", "toy", 12, 3)
    # The peers study runs it beside the learner and puts it in its table.
    result = peer_study(tmp_path / "peers", ms=[1], seeds=2, methods=["toy", "adam"], backend="serial",
                        options={"toy": {"draw": 20}, "adam": {"max_iter": 5, "n_train": 50, "n_val": 20,
                                                               "restarts": 1}})
    rows = {r["method"]: r for r in result.summary["rows"]}
    assert set(rows) == {"toy", "adam"} and rows["toy"]["runs"] == 2 and rows["toy"]["median_examples"] == 20
    assert rows["toy"]["milestones"]["1e-08"]["reached"] == 2  # a learner-role method: its error at the end
    # Its rows in the table, in registry order (adam registered first).
    assert [line.split("|")[4].strip() for line in result.table().splitlines()[2:4]] == ["adam", "toy"]
    assert result.summary["parameters"]["options"] == {"toy": {"draw": 20}, "adam": {"max_iter": 5, "n_train": 50,
                                                                                      "n_val": 20, "restarts": 1}}
    # The command line's method choices come from the registry.
    from learner.cli import build_parser

    race = build_parser().command("race")
    (search,) = [a for a in race.options if a.dest == "search_methods"]
    assert "toy" in search.choices and search.default is None  # None: the methods present, the toy among them
    assert "toy" in search.help and methods.present_names()[-1] == "toy"


def test_control_an_unregistered_method_is_refused(tmp_path):
    from learner.study.peers import peer_study
    from learner.sweep.runs import RunSpec, run_one

    rec = run_one(RunSpec("toy", 1, 6, 2, 0, 7))
    assert rec["outcome"] == "error" and "`method` must be one of" in rec["message"]
    with pytest.raises(ValueError, match="unknown 'toy'"):
        peer_study(tmp_path / "peers", ms=[1], seeds=1, methods=["toy"], backend="serial")


def test_the_race_refuses_to_search_a_method_this_machine_cannot_run(registry, tmp_path):
    """The race runs the methods present; searching one that is not is refused before anything is claimed. Control:
    the same recipe marked present passes the check and goes on to the folder (summarise-only, where a folder that
    was never run has nothing to summarise)."""
    from learner.study.peers import race_study

    gpu = get("torch-adam-gpu")
    registry["torch-adam-gpu"] = dataclasses.replace(gpu, present=lambda: False)
    present = re.escape(str(list(methods.present_names())))  # what the race runs, read from the registry
    with pytest.raises(ValueError, match=r"`search_methods` names \['torch-adam-gpu'\], which this machine cannot run "
                                         rf"\(the race runs {present}\)"):
        race_study(tmp_path / "race", grid=["m=1,k=2"], seeds=1, search_methods=["torch-adam-gpu"], run=False)
    assert not (tmp_path / "race").exists()
    registry["torch-adam-gpu"] = dataclasses.replace(gpu, present=lambda: True)
    with pytest.raises(ValueError, match="race-gpu', which does not exist: there is nothing to summarise"):
        race_study(tmp_path / "race-gpu", grid=["m=1,k=2"], seeds=1, search_methods=["torch-adam-gpu"], run=False,
                   plot=False)


def test_a_toy_method_leaves_a_committed_study_as_it_was_and_takes_its_quick_budgets(registry, tmp_path, capsys):
    """A study records the methods it ran: with a toy method registered, the committed peers study re-summarises
    with its own three (not the toy), and ``peers --quick`` gives the toy its entry's quick budgets."""
    import json
    import shutil
    from pathlib import Path

    from learner.cli import main
    from learner.study.peers import peer_methods

    committed = Path(__file__).resolve().parents[3] / "docs" / "sweeps" / "peers"
    ran = sorted(json.loads((committed / "study.json").read_text())["parameters"]["options"])
    register(StudyMethod("toy", "reads the planted layer", _toy_runner, "learner.sweep.methods:quick_options",
                         role="learner", example_stream=3, quick={"draw": 5}))
    assert "toy" in methods.present_names() and sorted(peer_methods(committed)) == ran and "toy" not in ran
    copy = tmp_path / "peers"
    shutil.copytree(committed, copy)
    assert main(["peers", "--summarise-only", "--out", str(copy)]) == 0  # no methods named: the study's own
    summary = json.loads((copy / "summary.json").read_text())
    assert sorted({r["method"] for r in summary["rows"]}) == ran and "0 run now" in capsys.readouterr().out
    # Control: naming the toy too asks for another study, which this folder is not.
    assert main(["peers", "--summarise-only", "--methods", *ran, "toy", "--out", str(copy)]) == 2
    assert "holds a peer-study with other parameters" in capsys.readouterr().err
    # A new study on the command line: --methods offers the toy, --quick gives it its entry's budgets.
    out = tmp_path / "quick"
    assert main(["peers", "--quick", "--serial", "--no-progress", "--methods", "toy", "--m", "1", "--seeds", "1",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    (record,) = [json.loads(p.read_text()) for p in (out / "runs").glob("*.json")]
    assert record["spec"]["method"] == "toy" and record["spec"]["options"] == {"draw": 5}
    assert record["examples_drawn"] == 5
