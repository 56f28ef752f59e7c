"""The scaling study: seeding, records, resume, failures, the Dask and local backends, the summary, the CLI."""

import json
import math

import numpy as np
import pytest

from learner import parallel
from learner.cli import main
from learner.study import scaling
from learner.study.scaling import scaling_study, summarise
from learner.sweep import engine as sweep
from learner.sweep import runs
from learner.sweep.engine import comparable, fit_growth, run_sweep
from learner.sweep.records import DIGEST_FIELD, record_digest
from learner.sweep.runs import QUICK_OPTIONS, RunSpec, param_limit, plan_runs, planted_instance, run_one

# Tiny runs (a second or less each): the learner runs out of its small example budgets,
# Adam out of iterations. They exercise the machinery, not the methods.
QUICK = {"provable": QUICK_OPTIONS["provable"], "adam": QUICK_OPTIONS["adam"] | {"lr": 0.03}}


def _specs(seeds=2, ms=(1, 2), methods=("provable", "adam"), entropy=7):
    return plan_runs(ms=ms, d=6, k=3, seeds=seeds, methods=methods, entropy=entropy, options=QUICK)


def _files(out):
    return {p.name: p.read_bytes() for p in sorted((out / "runs").glob("*.json"))}


class TestSeeding:
    def test_methods_share_the_planted_layer_and_examples(self):
        prov, adam = (RunSpec(method, 2, 6, 3, 1, 5) for method in ("provable", "adam"))
        (t1, o1, s1), (t2, o2, s2) = planted_instance(prov), planted_instance(adam)
        np.testing.assert_array_equal(t1.thetas, t2.thetas)
        np.testing.assert_array_equal(o1.draw(50)[0], o2.draw(50)[0])
        assert s1.spawn_key == s2.spawn_key

    def test_both_distributions_share_the_planted_layer(self):
        """The Gaussian frontier is compared with the Boolean one on the same layers: the layer's seed does not
        depend on the input distribution; the inputs do (control)."""
        boolean, gaussian = (RunSpec("provable", 2, 6, 3, 1, 5, distribution=d) for d in ("boolean", "gaussian"))
        (t1, o1, _), (t2, o2, _) = planted_instance(boolean), planted_instance(gaussian)
        np.testing.assert_array_equal(t1.thetas, t2.thetas)
        np.testing.assert_array_equal(t1.ws, t2.ws)
        x1, x2 = o1.draw(50)[0], o2.draw(50)[0]
        assert set(np.unique(x1)) == {-1.0, 1.0} and len(np.unique(x2)) > 2

    @pytest.mark.parametrize("other", [
        RunSpec("adam", 2, 6, 3, 2, 5),  # another seed index
        RunSpec("adam", 2, 6, 3, 1, 6),  # another entropy
        RunSpec("adam", 2, 6, 3, 1, 5, role="tune"),  # a tuning layer
    ], ids=["seed_index", "entropy", "role"])
    def test_other_runs_get_other_layers(self, other):
        base = planted_instance(RunSpec("adam", 2, 6, 3, 1, 5))[0]
        assert not np.allclose(base.thetas, planted_instance(other)[0].thetas)

    def test_a_run_is_a_function_of_its_spec(self):
        spec = _specs(seeds=1, ms=(2,), methods=("adam",))[0]
        a, b = run_one(spec), run_one(spec.to_dict())
        assert comparable(a) == comparable(b)
        assert a["outcome"] == "finished" and a["examples_drawn"] == 400
        assert a["spec"]["spawn_key"] == [0, 2, 6, 3, 0] and a["spec"]["entropy"] == 7

    def test_record_contents(self):
        spec = _specs(seeds=1, ms=(1,), methods=("provable",))[0]
        rec = json.loads(json.dumps(run_one(spec), allow_nan=False))
        assert rec["schema_version"] == 2 and rec["kind"] == "scaling-run"
        assert rec["param_limit"] == param_limit(1, 6, 3) == 4.0
        assert rec["examples_ratio"] == rec["examples_drawn"] / 4.0
        assert {"1_crude_sum", "total"} <= set(rec["timings"])
        assert set(rec["versions"]) >= {"learner", "numpy", "scipy", "python"}
        assert isinstance(rec["success"], bool) and rec["status"] and rec["message"]
        assert set(rec["errors"]) <= {"relative_error", "param_error"}


class TestSweep:
    # slow (9 s): a one-run Dask identity stays in the default run (test_parallel's LocalCluster test)
    @pytest.mark.slow
    def test_local_pool_and_dask_cluster_give_identical_records(self, tmp_path, capsys):
        distributed = pytest.importorskip("dask.distributed")
        specs = _specs()
        serial, _ = run_sweep(specs, tmp_path / "serial", backend="serial")
        local, _ = run_sweep(specs, tmp_path / "local", backend="local", workers=2)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:
            dask, _ = run_sweep(specs, tmp_path / "dask", backend="dask", scheduler=cluster.scheduler_address)
            pids = {r["where"]["pid"] for r in dask}
            argv = ["scaling", "--m", "2", "--d", "6", "--k", "3", "--seeds", "1", "--quick", "--no-progress",
                    "--methods", "provable", "adam", "--adam-lr", "0.03", "--seed", "7"]
            assert main(argv + ["--scheduler", cluster.scheduler_address, "--out", str(tmp_path / "cli-dask")]) == 0
        assert main(argv + ["--serial", "--out", str(tmp_path / "cli-serial")]) == 0
        cli = {name: [json.loads(p.read_text()) for p in sorted((tmp_path / name / "runs").glob("*.json"))]
               for name in ("cli-dask", "cli-serial")}
        assert len(cli["cli-dask"]) == 2 and {r["where"]["backend"] for r in cli["cli-dask"]} == {"dask"}
        assert [comparable(r) for r in cli["cli-dask"]] == [comparable(r) for r in cli["cli-serial"]]
        assert [r["outcome"] for r in dask] == ["finished"] * len(specs)
        assert [r["where"]["backend"] for r in dask] == ["dask"] * len(specs)
        assert len(pids) >= 1 and all(r["where"]["pid"] != r2["where"]["pid"] for r in dask for r2 in serial)
        for a, b, c in zip(serial, local, dask, strict=True):
            assert comparable(a) == comparable(b) == comparable(c), a["run_id"]
        # The comparison is not vacuous: the records differ between runs.
        assert len({json.dumps(comparable(r), sort_keys=True) for r in dask}) == len(specs)

    @pytest.mark.slow  # waits for a connection to fail
    def test_unreachable_scheduler_is_named(self, tmp_path, capsys, monkeypatch):
        """No scheduler at the address: a clear error naming it, from the API and the CLI (exit 2), no traceback."""
        pytest.importorskip("dask.distributed")
        monkeypatch.setattr(parallel, "SCHEDULER_CONNECT_TIMEOUT", 1.0)
        with pytest.raises(ConnectionError, match=r"reach the Dask scheduler at 'tcp://127.0.0.1:1' \(scheduler\)"):
            run_sweep(_specs()[:1], tmp_path / "api", backend="dask", scheduler="tcp://127.0.0.1:1")
        argv = ["scaling", "--m", "1", "--d", "6", "--k", "3", "--seeds", "1", "--quick", "--no-progress",
                "--methods", "adam", "--adam-lr", "0.03", "--scheduler", "tcp://127.0.0.1:1",
                "--out", str(tmp_path / "cli")]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: could not reach the Dask scheduler at 'tcp://127.0.0.1:1' (--scheduler)")
        assert err.count("\n") == 1 and not (tmp_path / "cli").exists()  # one line, and --out not claimed

    def test_comparable_drops_only_times_and_places(self):
        rec = {"a": 1, "timings": {"total": 2.0}, "where": {"pid": 3},
               "diagnostics": {"p": {"seconds": 1.0, "count": 4, "refine_seconds": 0.1}},
               "errors": [{"seconds": 9, "x": 1}]}
        assert comparable(rec) == {"a": 1, "diagnostics": {"p": {"count": 4}}, "errors": [{"x": 1}]}

    def test_resume_keeps_finished_records_and_runs_the_rest(self, tmp_path):
        specs = _specs()
        _first, stats = run_sweep(specs[:3], tmp_path / "a", backend="serial")
        assert stats == {"ran": 3, "skipped": 0}
        before = _files(tmp_path / "a")
        records, stats = run_sweep(specs, tmp_path / "a", backend="serial")  # "interrupted" after 3, resumed
        assert stats == {"ran": len(specs) - 3, "skipped": 3}
        after = _files(tmp_path / "a")
        assert all(after[name] == data for name, data in before.items())  # kept byte for byte
        fresh, _ = run_sweep(specs, tmp_path / "b", backend="serial")
        assert [comparable(r) for r in records] == [comparable(r) for r in fresh]
        # A third call has nothing to do.
        assert run_sweep(specs, tmp_path / "a", backend="serial")[1] == {"ran": 0, "skipped": len(specs)}

    def test_learner_records_of_the_sequential_stream_are_run_again(self, tmp_path, caplog):
        """Records of the learner from before per-batch streams (no ``example_stream``) no longer reproduce:
        resume runs them again; Adam's stream did not change, so its records are kept."""
        specs = _specs(seeds=1, ms=(1,))
        run_sweep(specs, tmp_path, backend="serial")
        runs = tmp_path / "runs"
        for path in runs.glob("*.json"):
            rec = json.loads(path.read_text())
            assert rec["example_stream"] == {"provable": 2, "adam": 1}[rec["spec"]["method"]]
            rec.pop("example_stream")  # as the committed records of the sequential stream have it
            rec[DIGEST_FIELD] = record_digest(rec)
            path.write_text(json.dumps(rec))
        with caplog.at_level("INFO", logger="learner.sweep.engine"):
            _, stats = run_sweep(specs, tmp_path, backend="serial")
        assert stats == {"ran": 1, "skipped": 1}
        assert "provable-eval-m1-d6-k3-ls1-boolean-s0.json was drawn from example stream 1" in caplog.text
        assert json.loads((runs / "provable-eval-m1-d6-k3-ls1-boolean-s0.json").read_text())["example_stream"] == 2
        assert "example_stream" not in json.loads((runs / "adam-eval-m1-d6-k3-ls1-boolean-s0.json").read_text())

    def test_learn_workers_give_the_same_records(self, tmp_path):
        spec = _specs(seeds=1, ms=(2,), methods=("provable",))[0]
        one, two = run_one(spec), run_one(spec, learn_workers=2)
        assert comparable(one) == comparable(two)
        assert one["execution"]["backend"] == "serial" and two["execution"]["backend"] == "local"
        with pytest.raises(ValueError, match="`learn_workers` > 1 needs backend='serial'"):
            run_sweep([spec], tmp_path, backend="local", learn_workers=2)

    def test_a_failing_run_is_recorded_and_the_sweep_goes_on_then_retried(self, tmp_path, monkeypatch):
        import learner.baselines.numpy_adam

        def broken(*args, **kwargs):
            raise RuntimeError("injected failure")

        specs = _specs(seeds=1)
        monkeypatch.setattr(learner.baselines.numpy_adam, "fit_gradient", broken)
        records, _ = run_sweep(specs, tmp_path, backend="serial")
        by_method = {r["spec"]["method"]: r for r in records if r["spec"]["m"] == 1}
        assert by_method["adam"]["outcome"] == "error" and by_method["adam"]["success"] is False
        assert "RuntimeError: injected failure" in by_method["adam"]["message"]
        assert "injected failure" in by_method["adam"]["traceback"]
        assert by_method["provable"]["outcome"] == "finished"
        monkeypatch.undo()
        records, stats = run_sweep(specs, tmp_path, backend="serial")
        assert stats == {"ran": 2, "skipped": 2}  # the two failed Adam runs, retried
        assert all(r["outcome"] == "finished" for r in records)

    def test_a_dead_worker_is_recorded(self):
        spec = _specs(seeds=1)[0]

        def died():
            raise OSError("worker process killed")

        rec = sweep._collect(spec, died)
        assert rec["outcome"] == "error" and "worker process killed" in rec["message"]
        assert rec["spec"] == spec.to_dict()

    def test_another_study_in_the_same_directory_is_refused(self, tmp_path):
        specs = _specs(seeds=1, ms=(1,), methods=("adam",))
        run_sweep(specs, tmp_path, backend="serial")
        other = plan_runs(ms=(1,), d=6, k=3, seeds=1, methods=("adam",), entropy=8, options=QUICK)
        with pytest.raises(ValueError, match="another specification"):
            run_sweep(other, tmp_path, backend="serial")

    def test_an_unreadable_record_is_run_again(self, tmp_path):
        specs = _specs(seeds=1, ms=(1,), methods=("adam",))
        run_sweep(specs, tmp_path, backend="serial")
        path = tmp_path / "runs" / f"{specs[0].run_id}.json"
        path.write_text('{"truncated": ')
        records, stats = run_sweep(specs, tmp_path, backend="serial")
        assert stats == {"ran": 1, "skipped": 0} and records[0]["outcome"] == "finished"
        json.loads(path.read_text())

    def test_a_record_of_another_schema_is_refused(self, tmp_path):
        specs = _specs(seeds=1, ms=(1,), methods=("adam",))
        (tmp_path / "runs").mkdir()
        (tmp_path / "runs" / f"{specs[0].run_id}.json").write_text(
            json.dumps({"kind": "scaling-run", "schema_version": 99}))
        with pytest.raises(ValueError, match="schema_version=99"):
            run_sweep(specs, tmp_path, backend="serial")

    @pytest.mark.parametrize("kwargs, match", [
        ({"backend": "threads"}, "backend='threads'"),
        ({"backend": "dask"}, "scheduler=None"),
        ({"backend": "local", "workers": 0}, "workers"),
    ], ids=["backend", "no-scheduler", "workers"])
    def test_bad_backend_arguments(self, tmp_path, kwargs, match):
        with pytest.raises(ValueError, match=match):
            run_sweep(_specs(seeds=1), tmp_path, **kwargs)

    def test_duplicate_run_ids(self, tmp_path):
        spec = _specs(seeds=1)[0]
        with pytest.raises(ValueError, match="distinct run ids"):
            run_sweep([spec, spec], tmp_path, backend="serial")


class TestSummary:
    def test_fit_growth_recovers_power_and_base(self):
        g = fit_growth([1, 2, 3, 4], [5 * m**2.5 for m in (1, 2, 3, 4)])
        assert g["power"] == pytest.approx(2.5) and g["power_rms_log"] < 1e-12 and g["base_rms_log"] > 0.05
        g = fit_growth([1, 2, 3, 4], [0.1 * 4.0**m for m in (1, 2, 3, 4)])
        assert g["base"] == pytest.approx(4.0) and g["base_rms_log"] < 1e-12 and g["power_rms_log"] > 0.05

    @pytest.mark.parametrize("ms, values", [([1], [2.0]), ([2, 2], [1.0, 3.0]), ([1, 2], [0.0, 1.0])],
                             ids=["one-point", "one-m", "zero"])
    def test_fit_growth_without_enough_points(self, ms, values):
        g = fit_growth(ms, values)
        assert math.isnan(g["power"]) and math.isnan(g["base"])

    def test_fit_growth_shapes(self):
        with pytest.raises(ValueError, match="one length"):
            fit_growth([1, 2], [1.0])

    def _record(self, method, m, rel, seconds, examples, outcome="finished", role="eval"):
        return {"spec": {"method": method, "m": m, "d": 8, "k": 4, "role": role}, "outcome": outcome,
                "success": rel is not None and rel < 1e-10, "status": "x",
                "errors": {} if rel is None else {"relative_error": rel},
                "timings": {"total": seconds}, "examples_drawn": examples,
                "examples_ratio": None if examples is None else examples / param_limit(m, 8, 4)}

    def test_summary_rows_and_common_criterion(self):
        recs = [self._record("adam", 1, 1e-4, 10.0, 100), self._record("adam", 1, 0.5, 30.0, 100),
                self._record("adam", 1, None, 99.0, None, outcome="error"),
                self._record("adam", 2, 1e-12, 40.0, 100), self._record("adam", 3, 1e-12, 90.0, 100),
                self._record("adam", 3, 1e-12, 1.0, 100, role="tune")]
        s = summarise(recs, success_tol=1e-3)
        row = s["rows"][0]
        assert (row["m"], row["runs"], row["errors_raised"]) == (1, 3, 1)
        assert row["success_rate"] == pytest.approx(1 / 3) and row["own_success_rate"] == 0.0
        assert row["median_seconds"] == 20.0 and row["median_examples"] == 100
        assert row["median_examples_ratio"] == 25.0  # 100 examples / (2·1·8²/(4·8) = 4)
        assert row["median_relative_error"] == pytest.approx(0.25005) and row["layers_returned"] == 2
        assert [r["runs"] for r in s["rows"]] == [3, 1, 1]  # the tuning record is not counted
        g = s["growth"]["adam"]["seconds"]
        expected = np.polyfit(np.log([1, 2, 3]), np.log([20.0, 40.0, 90.0]), 1)[0]
        assert g["power"] == pytest.approx(expected)
        # the negative control of the criterion: a stricter tolerance fails the 1e-4 run
        assert summarise(recs, success_tol=1e-5)["rows"][0]["success_rate"] == 0.0

    def test_learning_rate_choice(self):
        recs = [{"spec": {"m": 1, "d": 12, "k": 2, "options": {"lr": lr}}, "outcome": "finished",
                 "diagnostics": {"fit": {"val_relative_error": v}}}
                for lr, v in ((0.01, 0.2), (0.01, 0.4), (0.03, 0.1), (0.03, 0.9), (0.1, 0.5), (0.1, 0.5))]
        recs.append({"spec": {"m": 1, "d": 12, "k": 2, "options": {"lr": 0.1}}, "outcome": "error", "diagnostics": {}})
        chosen = scaling._choose_lr(recs, [0.01, 0.03, 0.1])
        assert chosen["m=1, d=12, k=2"]["lr"] == 0.01  # medians 0.3, 0.5, 0.5
        assert chosen["m=1, d=12, k=2"]["median_val_relative_error"][0.1] == 0.5


class TestStudy:
    def test_quick_study_writes_records_summary_and_plot(self, tmp_path):
        pytest.importorskip("matplotlib")
        res = scaling_study(tmp_path, ms=(1, 2), d=6, k=3, seeds=2, methods=["provable", "adam"],
                            adam_lrs=(0.01, 0.03), tune_seeds=1, adam_options=QUICK_OPTIONS["adam"],
                            provable_options=QUICK_OPTIONS["provable"], backend="serial")
        assert res.stats == {"ran": 4 + 8, "skipped": 0}
        assert len(list((tmp_path / "runs").glob("adam-tune-*.json"))) == 4
        assert set(res.summary["tuning"]["chosen"]) == {"m=1, d=6, k=3", "m=2, d=6, k=3"}
        for m in (1, 2):
            lr = res.summary["tuning"]["chosen"][f"m={m}, d=6, k=3"]["lr"]
            assert all(r["spec"]["options"]["lr"] == lr for r in res.records
                       if r["spec"]["method"] == "adam" and r["spec"]["m"] == m)
        assert json.loads((tmp_path / "summary.json").read_text())["parameters"]["ms"] == [1, 2]
        assert (tmp_path / "summary.md").read_text().startswith("| method | m |")
        assert (tmp_path / "scaling.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        again = scaling_study(tmp_path, ms=(1, 2), d=6, k=3, seeds=2, adam_lrs=(0.01, 0.03), tune_seeds=1,
                              adam_options=QUICK_OPTIONS["adam"], provable_options=QUICK_OPTIONS["provable"],
                              backend="serial", plot=False)
        assert again.stats == {"ran": 0, "skipped": 12} and again.summary["rows"] == res.summary["rows"]
        # Another study in the same directory is refused before it runs anything; the first one's files stay.
        summary = (tmp_path / "summary.json").read_bytes()
        with pytest.raises(ValueError, match=r"holds a scaling-study with other parameters \(seeds: 2 there, 3 here"):
            scaling_study(tmp_path, ms=(1, 2), d=6, k=3, seeds=3, adam_lrs=(0.01, 0.03), tune_seeds=1,
                          adam_options=QUICK_OPTIONS["adam"], provable_options=QUICK_OPTIONS["provable"],
                          backend="serial", plot=False)
        assert (tmp_path / "summary.json").read_bytes() == summary and len(list((tmp_path / "runs").iterdir())) == 12

    @pytest.mark.parametrize("kwargs, match", [
        ({"ms": ()}, "ms"),
        ({"ms": (1, 1)}, r"ms=\[1, 1\]"),
        ({"ms": (0,)}, "ms"),
        ({"d": 3, "k": 3}, "k < d"),
        ({"seeds": 0}, "seeds"),
        ({"methods": ("sgd",)}, "methods"),
        ({"distribution": "uniform"}, "distribution='uniform'"),
        ({"adam_lrs": (0.01, -1.0)}, "adam_lrs"),
        ({"adam_lrs": (0.01, 0.01)}, "distinct"),
        ({"success_tol": 0.0}, "success_tol"),
        ({"seed": -1}, "seed"),
        ({"adam_options": {"lr": 0.1}}, "adam_lrs"),
    ], ids=["no-m", "repeated-m", "zero-m", "k>=d", "seeds", "method", "distribution", "lr", "lr-repeated",
            "success_tol", "seed", "lr-option"])
    def test_bad_arguments(self, tmp_path, kwargs, match):
        args = {"ms": (1,), "d": 6, "k": 3, "seeds": 1, "backend": "serial"} | kwargs
        with pytest.raises(ValueError, match=match):
            scaling_study(tmp_path, **args)
        assert not (tmp_path / "runs").exists()  # nothing started

    def test_out_must_be_a_directory(self, tmp_path):
        (tmp_path / "f").write_text("x")
        with pytest.raises(ValueError, match="out="):
            scaling_study(tmp_path / "f", ms=(1,), d=6, k=3, seeds=1, backend="serial")


class TestCli:
    @pytest.mark.slow  # a quick sweep end to end
    def test_quick_sweep(self, tmp_path, capsys):
        code = main(["scaling", "--m", "1", "2", "--d", "6", "--k", "3", "--seeds", "1", "--quick", "--serial",
                     "--methods", "provable", "adam", "--no-progress", "--adam-lr", "0.03", "--out", str(tmp_path)])
        out = capsys.readouterr().out
        assert code == 0
        assert "| provable | 2 | 6 | 3 | 1 |" in out and "| adam | 1 | 6 | 3 | 1 |" in out
        assert "limit 2md²/(kd)" in out
        assert "4 run now, 0 kept" in out
        main(["scaling", "--m", "1", "2", "--d", "6", "--k", "3", "--seeds", "1", "--quick", "--serial",
              "--no-progress", "--adam-lr", "0.03", "--out", str(tmp_path)])  # no --methods: the study's own
        assert "0 run now, 4 kept" in capsys.readouterr().out

    @pytest.mark.parametrize("argv, match", [
        (["--m", "1", "1"], "argument --m: `--m` must hold distinct values"),
        (["--serial", "--scheduler", "tcp://127.0.0.1:1"], "at most one"),
        (["--methods", "sgd"], "methods"),
    ], ids=["m", "backends", "method"])
    def test_bad_arguments(self, tmp_path, capsys, argv, match):
        try:  # a usage error exits from argparse; a check of the study returns 2
            code = main(["scaling", "--out", str(tmp_path), "--quick", "--no-progress"] + argv)
        except SystemExit as exc:
            code = exc.code
        assert code == 2 and match in capsys.readouterr().err


class TestSoundFamily:
    """The study's default family: k = 2, logit scale 1, d from the soundness conditions."""

    @pytest.mark.parametrize("m, k, d", [(1, 2, 12), (2, 2, 12), (3, 2, 12), (4, 2, 12), (5, 2, 16), (6, 2, 16),
                                         (3, 5, 16), (2, 5, 12)])
    def test_sound_d(self, m, k, d):
        from learner import check_setting

        assert runs.sound_d(m, k) == d
        assert check_setting(m, d, k).ok
        if d > 12:  # the control: the step below is not sound
            assert not check_setting(m, d - 4, k).ok

    def test_sound_d_beyond_the_limit_is_named(self):
        with pytest.raises(ValueError, match="no sound d <= 16 for m=9"):
            runs.sound_d(9, 2, limit=16)

    def test_logit_scale_is_part_of_the_spec(self):
        a, b = RunSpec("adam", 2, 6, 3, 1, 5), RunSpec("adam", 2, 6, 3, 1, 5, logit_scale=3.0)
        ta, tb = planted_instance(a)[0], planted_instance(b)[0]
        np.testing.assert_allclose(np.linalg.norm(ta.thetas, axis=(1, 2)), 1.0)
        np.testing.assert_allclose(np.linalg.norm(tb.thetas, axis=(1, 2)), 3.0)
        assert a.run_id != b.run_id and RunSpec.from_dict(b.to_dict()) == b

    def test_noise_is_part_of_the_spec_but_not_of_the_seeds(self):
        """A noisy run meets the same layer and inputs as the exact one; an exact run keeps its old id."""
        a, b = RunSpec("adam", 2, 6, 3, 1, 5), RunSpec("adam", 2, 6, 3, 1, 5, noise=1e-2)
        (ta, oa, _), (tb, ob, _) = planted_instance(a), planted_instance(b)
        np.testing.assert_array_equal(ta.thetas, tb.thetas)
        (Xa, Ya), (Xb, Yb) = oa.draw(500), ob.draw(500)
        np.testing.assert_array_equal(Xa, Xb)
        assert 0.009 < (Yb - Ya).std() < 0.011 and ob.noise == 1e-2 and oa.noise == 0.0
        assert "noise" not in a.run_id and "noise" not in a.to_dict()
        assert b.run_id.endswith("-noise0.01-s1") and RunSpec.from_dict(b.to_dict()) == b

    def test_auto_d_and_several_k(self, tmp_path):
        res = scaling_study(tmp_path, ms=(1, 5), k=(2, 3), seeds=1, methods=("adam",), adam_lrs=(0.03,),
                            adam_options=QUICK_OPTIONS["adam"], backend="serial", plot=False)
        settings = {(r["m"], r["d"], r["k"]) for r in res.summary["rows"]}
        assert settings == {(1, 12, 2), (5, 16, 2), (1, 12, 3), (5, 16, 3)}
        assert set(res.summary["growth"]) == {"adam, k=2", "adam, k=3"}
        assert res.summary["parameters"]["logit_scale"] == 1.0
        assert "| adam | 5 | 16 | 3 | 1 |" in res.table()

    def test_yield_of(self):
        assert runs.yield_of({"diagnostics": {"4_refined_sculpt": {"constraints_per_1000_examples": 2.5}}}) == 2.5
        # The data-driven budgets hand phase 5 a prefix: the yield counts every constraint the examples certified.
        cut = {"constraints_per_1000_examples": 2.5, "certified_per_1000_examples": 7.0}
        assert runs.yield_of({"diagnostics": {"4_refined_sculpt": cut}}) == 7.0
        assert runs.yield_of({"diagnostics": {"fit": {}}}) is None
        assert runs.yield_of({"outcome": "error", "diagnostics": {}}) is None

    @pytest.mark.parametrize("kwargs, match", [
        ({"k": (2, 2)}, "distinct"), ({"k": 1}, "k"), ({"d": "big"}, "d"), ({"logit_scale": 0.0}, "logit_scale"),
    ], ids=["k-repeated", "k-1", "d-text", "logit-scale-0"])
    def test_bad_family_arguments(self, tmp_path, kwargs, match):
        with pytest.raises((ValueError, TypeError), match=match):
            scaling_study(tmp_path, ms=(1,), seeds=1, methods=("adam",), backend="serial", **kwargs)

    def test_cli_learner_budget_flags_reach_the_spec(self, tmp_path, capsys):
        code = main(["scaling", "--m", "1", "--d", "6", "--k", "3", "--seeds", "1", "--quick", "--serial",
                     "--no-progress", "--methods", "provable", "--refined-tol", "0.02", "--max-examples", "3000",
                     "--out", str(tmp_path)])
        assert code == 0
        (rec,) = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*.json")]
        assert rec["spec"]["options"]["refined_tol"] == 0.02 and rec["spec"]["options"]["max_examples"] == 3000

    def test_cli_bad_d(self, tmp_path, capsys):
        with pytest.raises(SystemExit):
            main(["scaling", "--d", "x", "--out", str(tmp_path)])
        assert "argument --d: `--d` must be an integer or the word 'auto'; got --d 'x'" in capsys.readouterr().err


@pytest.mark.slow
def test_two_setting_sweep_end_to_end(tmp_path):
    """The default family at full budgets, two settings, both methods, the local pool (about a minute)."""
    pytest.importorskip("matplotlib")
    res = scaling_study(tmp_path, ms=(2, 3), seeds=1, methods=["provable", "adam"], adam_lrs=(0.03,),
                        backend="local", workers=2)
    rows = {(r["method"], r["m"]): r for r in res.summary["rows"]}
    assert set(rows) == {("provable", 2), ("provable", 3), ("adam", 2), ("adam", 3)}
    assert all(rows[("provable", m)]["success_rate"] == 1.0 for m in (2, 3))
    assert all(rows[("provable", m)]["d"] == 12 and rows[("provable", m)]["k"] == 2 for m in (2, 3))
    assert all(rows[("provable", m)]["median_yield"] > 0 for m in (2, 3))
    assert (tmp_path / "scaling.png").exists() and (tmp_path / "summary.json").exists()


class TestStudyDirectory:
    """One study per directory (learner.sweep.engine.claim_study): resumes pass, anything else is refused first."""

    def test_claim_resume_and_refusals(self, tmp_path):
        from learner.sweep.engine import STUDY_FILE, claim_study

        params = {"ms": [1, 2], "seeds": 2}
        claim_study(tmp_path, "scaling-study", "scaling-run", params)
        assert json.loads((tmp_path / STUDY_FILE).read_text())["kind"] == "scaling-study"
        claim_study(tmp_path, "scaling-study", "scaling-run", dict(params))  # the same study again: a resume
        with pytest.raises(ValueError, match=r"other parameters \(seeds: 2 there, 5 here\)"):
            claim_study(tmp_path, "scaling-study", "scaling-run", {"ms": [1, 2], "seeds": 5})
        with pytest.raises(ValueError, match=r"holds a scaling-study .*, not a learn-hard-study"):
            claim_study(tmp_path, "learn-hard-study", "learn-hard-run", params)
        (tmp_path / STUDY_FILE).write_text("{not json")
        with pytest.raises(ValueError, match="is unreadable"):
            claim_study(tmp_path, "scaling-study", "scaling-run", params)

    def test_unclaimed_directory_with_foreign_records_or_summary(self, tmp_path):
        from learner.sweep.engine import claim_study

        runs = tmp_path / "a" / "runs"
        runs.mkdir(parents=True)
        (runs / "x.json").write_text(json.dumps({"kind": "learn-hard-run"}))
        with pytest.raises(ValueError, match=r"another kind \(x.json: 'learn-hard-run', not 'scaling-run'\)"):
            claim_study(tmp_path / "a", "scaling-study", "scaling-run", {"seeds": 2})
        # A study without study.json whose summary.json (the toolkit's: its mark checks out) names the parameters.
        from learner.io import write_json

        old = tmp_path / "b"
        old.mkdir()
        write_json(old / "summary.json", {"parameters": {"seeds": 10, "ms": [1, 2]}})
        with pytest.raises(ValueError, match=r"from its summary.json: seeds: 10 there, 2 here"):
            claim_study(old, "scaling-study", "scaling-run", {"seeds": 2, "ms": [1, 2]})
        claim_study(old, "scaling-study", "scaling-run", {"seeds": 10, "ms": [1, 2], "k": [2]})  # control: agrees
        assert (old / "study.json").exists()

    def test_committed_main_study_is_its_own(self):
        """The README's study directory (docs/sweeps/main) is claimed by the parameters of its own command."""
        from pathlib import Path

        from learner.sweep.engine import _differences, _normalised

        root = Path(__file__).resolve().parents[3] / "docs" / "sweeps" / "main"
        theirs = json.loads((root / "summary.json").read_text())["parameters"]
        mine = _normalised({"ms": [1, 2, 3, 4, 5], "d": "auto", "k": [2], "logit_scale": 1.0, "seeds": 10,
                            "methods": ["provable", "adam"], "distribution": "boolean", "adam_lrs": [0.01, 0.03],
                            "tune_seeds": 1, "adam_options": {}, "provable_options": {}, "seed": 0,
                            "settings": [[1, 12, 2], [2, 12, 2], [3, 12, 2], [4, 12, 2], [5, 16, 2]]})
        assert _differences(mine, theirs) == []



class TestRecordValidation:
    """Hand-edited records are checked on load: the file and field are named, and the run is repeated."""

    EDITS = [
        ("negative examples", lambda r: r.update(examples_drawn=-5), "`examples_drawn` must be a non-negative integer"),
        ("nan error", lambda r: r["errors"].update(relative_error=float("nan")), "`errors.relative_error` must be"),
        ("negative error", lambda r: r["errors"].update(relative_error=-1.0), "`errors.relative_error` must be"),
        ("no spec", lambda r: r.pop("spec"), "`spec` is missing"),
        ("no status", lambda r: r.pop("status"), "`status` is missing"),
        ("no errors", lambda r: r.pop("errors"), "`errors` is missing"),
        ("null timings", lambda r: r.update(timings=None), "`timings` must be an object of durations; got None"),
        ("string count", lambda r: r.update(examples_drawn="many"), "`examples_drawn` must be a non-negative"),
        ("inf total", lambda r: r["timings"].update(total=float("inf")), "`timings.total` must be"),
        ("huge total", lambda r: r["timings"].update(total=1e300), "`timings.total` must be a duration"),
        ("string total", lambda r: r["timings"].update(total="1 s"), "`timings.total` must be a duration"),
    ]

    @staticmethod
    def _study(out):
        return scaling_study(out, ms=(1,), d=6, k=3, seeds=1, methods=["adam"], adam_lrs=(0.03,),
                             adam_options=QUICK_OPTIONS["adam"], backend="serial", plot=False)

    def test_edited_records_are_named_and_run_again(self, tmp_path, caplog):
        first = self._study(tmp_path)
        (path,) = (tmp_path / "runs").glob("*.json")
        good = json.loads(path.read_text())
        assert self._study(tmp_path).stats == {"ran": 0, "skipped": 1}  # control: an untouched record is kept
        for name, edit, words in self.EDITS:
            rec = json.loads(json.dumps(good))
            edit(rec)
            # Signed as a faulty writer would sign it, so that the field rules are what is tested here (an unsigned
            # edit fails its digest first: tests/learner/sweep/test_digest.py).
            rec[DIGEST_FIELD] = record_digest(rec)
            path.write_text(json.dumps(rec))  # json writes NaN and Infinity, as a hand edit might
            caplog.clear()
            with caplog.at_level("WARNING", logger="learner.sweep.engine"):
                again = self._study(tmp_path)
            assert again.stats == {"ran": 1, "skipped": 0}, name
            assert any(str(path) in m and words in m for m in caplog.messages), (name, caplog.messages)
            # Nothing edited reaches the summary: the repeated run gives the first one's figures (times aside).
            def untimed(rows):
                return [{k: v for k, v in r.items() if k != "median_seconds"} for r in rows]

            assert untimed(again.summary["rows"]) == untimed(first.summary["rows"]), name


class TestSummariseOnly:
    def test_committed_records_are_resummarised_without_running(self, tmp_path, capsys):
        """The README's command on a copy of docs/sweeps/main: the committed summary again, nothing run."""
        import shutil
        from pathlib import Path

        src = Path(__file__).resolve().parents[3] / "docs" / "sweeps" / "main"
        out = tmp_path / "main"
        shutil.copytree(src, out)
        before = {p.name: p.read_bytes() for p in (out / "runs").glob("*.json")}
        assert main(["scaling", "--summarise-only", "--no-progress", "--out", str(out)]) == 0
        assert "runs: 0 run now, 110 kept from earlier" in capsys.readouterr().out
        assert (out / "summary.md").read_text() == (src / "summary.md").read_text()
        assert {p.name: p.read_bytes() for p in (out / "runs").glob("*.json")} == before

    def test_missing_records_are_counted_and_nothing_runs(self, tmp_path, capsys):
        argv = ["scaling", "--m", "1", "2", "--d", "6", "--k", "3", "--seeds", "2", "--methods", "adam",
                "--adam-lr", "0.03", "--quick", "--serial", "--no-progress", "--out", str(tmp_path)]
        assert main(argv + ["--summarise-only"]) == 2
        err = capsys.readouterr().err
        assert "--out must be the folder of a scaling-study to summarise" in err and "nothing to summarise" in err
        assert not list(tmp_path.glob("runs/*.json"))
        assert main(argv) == 0  # control: run them, then the summary alone works
        capsys.readouterr()
        assert main(argv + ["--summarise-only"]) == 0
        assert "runs: 0 run now, 4 kept from earlier" in capsys.readouterr().out


class TestPlotWhenEveryRunFailed:
    """A record where every run raised: the figure is drawn without matplotlib's legend warning, and the log
    says that no run finished."""

    @staticmethod
    def _records(outcome):
        spec = {"role": "eval", "method": "provable", "m": 1, "d": 6, "k": 2}
        finished = {"timings": {"total": 3.0}, "examples_drawn": 900, "errors": {"relative_error": 0.5}}
        return [{"spec": spec | {"seed_index": s}, "outcome": outcome, **(finished if outcome == "finished" else {})}
                for s in range(2)]

    def test_says_no_run_finished(self, tmp_path, caplog):
        pytest.importorskip("matplotlib")
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "No artists with labels" warning
            scaling.plot_scaling(self._records("error"), tmp_path / "s.png")
        assert "no run finished: 2 of 2 runs raised an error" in caplog.text
        assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"

    def test_control_finished_runs_say_nothing(self, tmp_path, caplog):
        pytest.importorskip("matplotlib")
        scaling.plot_scaling(self._records("finished"), tmp_path / "s.png")
        assert "no run finished" not in caplog.text


class TestOtherMethodsOptions:
    """The options of the methods besides the learner and Adam (their registry entries check them)."""

    def test_the_learner_and_adam_keep_their_own_parameters(self):
        with pytest.raises(ValueError, match=r"`options` must not name \['adam'\]: give `provable_options` and"):
            scaling._other_options(["provable", "adam"], {"adam": {"lr": 0.1}})

    def test_a_method_that_does_not_run_is_named(self):
        with pytest.raises(ValueError, match=r"`options` name methods that do not run: \['toy'\]"):
            scaling._other_options(["provable", "adam"], {"toy": {}})

    def test_control_none_for_the_learner_and_adam_alone(self):
        assert scaling._other_options(["provable", "adam"], None) == {}


class TestStudyMethods:
    """The methods a scaling study runs where none are named: its own (a resume, a re-summary), else every one
    registered without an extra; the command line's --quick budgets are given for those alone."""

    def test_the_claim_then_the_registry(self, tmp_path):
        from learner.sweep.runs import METHODS

        assert scaling.study_methods(tmp_path / "new") == list(METHODS)
        (tmp_path / "study.json").write_text(json.dumps({"kind": "scaling-study", "parameters": {"methods": ["adam"]}}))
        assert scaling.study_methods(tmp_path) == ["adam"] and scaling.study_methods(tmp_path, ["provable"]) == [
            "provable"]  # control: named methods win

    def test_a_recorded_method_not_registered_is_named(self, tmp_path):
        (tmp_path / "study.json").write_text(json.dumps({"kind": "scaling-study", "parameters": {"methods": ["sgd"]}}))
        with pytest.raises(ValueError, match=r"`methods`: the study in .* ran \['sgd'\], which this toolkit does not"):
            scaling.study_methods(tmp_path)
