"""The benchmark's references compute the same layer as the fast path."""

import numpy as np
import pytest

from learner import random_layer, sample_inputs
from learner.study.bench import einsum_forward, forward_flops


class TestEinsumForward:
    @pytest.mark.parametrize("n,k,d,m", [(5, 3, 4, 2), (7, 6, 5, 3)], ids=["small", "k>d"])
    def test_matches_fast_path(self, n, k, d, m):
        layer = random_layer(m, d, check=False, rng=0)
        X = sample_inputs(n, k, d, rng=1)
        # Same arithmetic in another order: agreement to a few ulps of the output scale.
        np.testing.assert_allclose(einsum_forward(layer, X), layer(X), rtol=0, atol=1e-12)


class TestTorchForward:
    def test_matches_fast_path(self):
        torch = pytest.importorskip("torch")  # noqa: F841  (optional reference implementation)
        from learner.study.bench import _torch_forward

        run, _ = _torch_forward()
        layer = random_layer(2, 6, check=False, rng=0)
        X = sample_inputs(9, 4, 6, rng=1)
        np.testing.assert_allclose(run(layer, X)(), layer(X), rtol=0, atol=1e-12)


class TestForwardFlops:
    def test_formula(self):
        # 2nk·d·md + 2nmk²d + 2nmk²d + 2nk·md·d for n=1, k=2, d=3, m=1: 36 + 24 + 24 + 36.
        assert forward_flops(1, 2, 3, 1) == 120


class TestSpanBenchmark:
    def test_both_solvers_agree_and_the_ratio_is_theirs(self):
        from learner.study.bench import run_span_benchmark

        res = run_span_benchmark(rows=400, d=4, repeat=1, rng=0)
        assert res.theta_difference < 1e-12 and res.singular_value_difference < 1e-12
        assert res.speedup == res.svd_seconds / res.qr_seconds
        assert "faster" in res.table() and "BLAS thread" in res.table()
        assert set(res.to_dict()) >= {"speedup", "svd_seconds", "qr_seconds"}

    def test_cli(self, capsys, tmp_path):
        import json

        from learner.cli import main

        out_json = tmp_path / "span.json"
        assert main(["bench", "--span", "--quick", "--repeat", "1", "--json", str(out_json)]) == 0
        assert "QR, then the SVD of its triangle" in capsys.readouterr().out
        assert json.loads(out_json.read_text())["span"]["rows"] == 5000


class TestSearchBenchmark:
    @pytest.mark.slow  # two whole searches
    def test_both_sides_learn_the_same_layer_and_the_ratio_is_theirs(self):
        """Phase 6 in one process and on two workers: the same layer bit for bit (the starts merged in order, the
        products in fixed blocks), refined to float64's floor; the speed-up is the ratio of the two medians."""
        from learner.study.bench import run_search_benchmark

        res = run_search_benchmark(3, 8, 2, repeat=1, rng=0)
        assert res.identical and res.heldout_error < 1e-20
        assert res.speedup == res.serial_seconds / res.parallel_seconds
        assert res.serial_split["evaluations"] == res.parallel_split["evaluations"] >= 1
        table = res.table()
        assert "one process, one BLAS thread" in table and "2 workers, 2 threads" in table
        assert "layers identical: True" in table
        assert set(res.to_dict()) >= {"speedup", "serial_seconds", "parallel_seconds", "identical"}

    @pytest.mark.slow  # the benchmark's command line end to end; its measurement has its own test
    def test_cli(self, capsys, tmp_path):
        import json

        from learner.cli import main

        out_json = tmp_path / "search.json"
        assert main(["bench", "--search", "--quick", "--repeat", "1", "--json", str(out_json)]) == 0
        assert "phase 6 at (m, d, k) = (3, 10, 2)" in capsys.readouterr().out
        record = json.loads(out_json.read_text())
        assert record["command"] == "bench --search" and record["search"]["identical"] is True


class TestRefinementBenchmark:
    def test_both_solvers_reach_one_answer_and_the_ratio_is_theirs(self):
        from learner.study.bench import run_refinement_benchmark

        res = run_refinement_benchmark(2, 6, 2, repeat=1, rng=0)
        assert res.difference < 1e-12 and max(res.residual.values()) < 1e-28
        assert max(res.theta_error.values()) < 1e-12
        assert res.speedup == res.seconds["normal"] / res.seconds["cg"]
        # max(32, 2 residuals per parameter = 4md/k = 24, 2d²/(k(k − 1)) = 36 logit differences per head): 36
        assert res.examples == 36 and res.evaluations["cg"] >= 2  # the start is 1 % off: at least one step
        table = res.table()
        assert "72 unknowns, 36 examples" in table and "BLAS thread" in table and "cg " in table
        assert set(res.to_dict()) >= {"speedup", "seconds", "difference"}

    def test_cli(self, capsys, tmp_path):
        import json

        from learner.cli import main

        out_json = tmp_path / "refinement.json"
        assert main(["bench", "--refinement", "--quick", "--repeat", "1", "--json", str(out_json)]) == 0
        assert "phase 6's refinement at (m, d, k) = (3, 8, 2)" in capsys.readouterr().out
        record = json.loads(out_json.read_text())
        assert record["command"] == "bench --refinement" and record["refinement"]["difference"] < 1e-12

    @pytest.mark.parametrize("argv,match", [
        (["--refinement", "--tol", "0.1"], "--tol: options of --certification or --profile only"),
        (["--span", "--m", "3"], "--m: options of --certification, --refinement or --profile only"),
        (["--refinement", "--profile"], "give at most one of"),
    ], ids=["tol", "m", "two"])
    def test_options_another_benchmark_would_ignore_are_refused(self, capsys, argv, match):
        from learner.cli import main

        assert main(["bench", *argv]) == 2
        assert match in capsys.readouterr().err


class TestPhaseProfile:
    def test_sections_cover_the_phases_and_the_label_ratio_is_theirs(self):
        """Phase 4's steps (labels, screen, fit, constraints) and both refinements' steps are recorded; the label
        ratio is the forward pass's time over phase 4's, and no section outlasts its phase."""
        from learner.study.bench import run_phase_profile

        res = run_phase_profile(3, 8, 2, tol=0.1, examples=20_000, rng=0)
        assert res.label_ratio == res.forward_seconds / res.phase4_seconds
        assert {"examples: labels F(X)", "certification: float32 screen",
                "certification: float64 row fit"} <= set(res.phase4)
        assert "refinement: Cholesky solve" in res.refinement["normal"]
        assert "refinement: CG iterations" in res.refinement["cg"]
        for name, (seconds, calls, _) in res.phase4.items():
            assert 0 <= seconds <= res.phase4_seconds and calls >= 1, name
        labels = res.phase4["examples: labels F(X)"]
        assert labels[2] == forward_flops(res.examples, 2, 8, 3)  # every example drawn was labelled once
        assert "of the label rate" in res.table() and "of GEMM" in res.table()

    def test_cli(self, capsys, tmp_path):
        import json

        from learner.cli import main

        out_json = tmp_path / "profile.json"
        assert main(["bench", "--profile", "--quick", "--json", str(out_json)]) == 0
        assert "phases 4 and 6 at (m, d, k) = (4, 12, 2)" in capsys.readouterr().out
        record = json.loads(out_json.read_text())
        assert record["command"] == "bench --profile" and record["profile"]["label_ratio"] > 0


class TestCertificationBenchmark:
    def test_figures_and_the_reference_agree(self):
        """The benchmark's fit and its batched-solve reference certify the same rows; ratios are consistent."""
        from learner.study.bench import run_certification_benchmark

        res = run_certification_benchmark(batch=1000, repeat=1, rng=0)
        assert res.same_rows
        assert res.pipeline_ratio == res.pipeline_per_s / res.forward_per_s
        assert set(res.to_dict()) >= {"pipeline_ratio", "fit_speedup", "forward_per_s"}
        assert "target >= 0.5" in res.table()

    def test_screened_and_float64_certification_agree(self):
        """Phase 4's setting (3, 16, 4): the screened certification's output is the float64 path's, bit for bit."""
        from learner.study.bench import run_certification_benchmark

        res = run_certification_benchmark(3, 16, 4, batch=2000, repeat=1, tol=0.03, rng=0)
        assert res.identical and 0 <= res.refit_fraction < 0.05
        assert res.screen_speedup == res.screened_per_s / res.certify64_per_s  # a ratio of medians, no target here
        assert set(res.to_dict()) >= {"screen_speedup", "certify64_per_s", "screened_per_s", "sample_per_s", "blas"}
        assert "identical output: True" in res.table() and "BLAS thread" in res.table()

    @pytest.mark.parametrize("kwargs,error,match", [
        ({"batch": 0}, ValueError, "`batch` must be at least 1; got batch=0"),
        ({"threads": 0}, ValueError, "`threads` must be at least 1; got threads=0"),
        ({"tol": 0.0}, ValueError, "`tol` must be finite and positive; got tol=0.0"),
        ({"min_weight": "0.1"}, TypeError, "`min_weight` must be a real number; got min_weight='0.1'"),
    ], ids=["batch", "threads", "tol", "min_weight"])
    def test_bad_arguments(self, kwargs, error, match):
        from learner.study.bench import run_certification_benchmark

        with pytest.raises(error, match=match):
            run_certification_benchmark(**kwargs)

    def test_cli(self, capsys, tmp_path):
        import json

        from learner.cli import main

        out_json = tmp_path / "cert.json"
        argv = ["bench", "--certification", "--quick", "--repeat", "1", "--m", "2", "--d", "8", "--k", "3",
                "--json", str(out_json)]
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "(m, d, k) = (2, 8, 3), tol 0.03" in out and "identical output: True" in out
        record = json.loads(out_json.read_text())
        assert record["command"] == "bench --certification" and record["certification"]["identical"] is True


class TestBlasThreads:
    @pytest.mark.parametrize("n", [1, 2], ids=["one", "two"])
    def test_sets_and_restores(self, n):
        """Inside the block OpenBLAS runs ``n`` threads (two values: the check can fail); afterwards as before."""
        from learner.parallel import _openblas_thread_calls, blas_threads

        calls = _openblas_thread_calls()
        if not calls:
            pytest.skip("no OpenBLAS reachable through ctypes here")
        before = [get() for get, _ in calls]
        with blas_threads(n) as description:
            assert [get() for get, _ in calls] == [n] * len(calls)  # every OpenBLAS loaded (numpy's, scipy's)
        assert [get() for get, _ in calls] == before
        assert description.startswith(f"{n} BLAS thread")

    def test_bad_count(self):
        from learner.parallel import blas_threads

        with pytest.raises(ValueError, match="`n` must be at least 1; got n=0"):
            with blas_threads(0):
                pass


class TestParallelBenchmark:
    def test_both_runs_certify_the_same_stream(self):
        from learner.study.bench import run_parallel_benchmark

        r = run_parallel_benchmark(2, 8, 2, batch=2000, batches=4, repeat=1, rng=0)
        assert r.identical and r.examples == 8000 and r.workers == 2
        assert r.speedup == r.serial_seconds / r.parallel_seconds  # a ratio of medians, no target asserted here
        assert "speed-up" in r.table() and "per worker" in r.table()

    def test_this_process_computes_with_one_blas_thread_as_the_workers(self, monkeypatch):
        """Like for like: the serial side runs inside blas_threads(1), and the output says what was compared."""
        import learner.study.bench as bench

        entered = []
        real = bench.blas_threads

        def spy(n):
            entered.append(n)
            return real(n)

        monkeypatch.setattr(bench, "blas_threads", spy)
        r = bench.run_parallel_benchmark(2, 8, 2, batch=2000, batches=2, repeat=1, rng=0)
        assert entered and set(entered) == {1}  # both timed sides, and the description
        assert "one BLAS thread in each worker" in r.blas and "compared: " in r.table()
        assert f"at most {r.workers}x for this like-for-like comparison" in r.table()

    def test_one_worker_is_refused(self):
        from learner.study.bench import run_parallel_benchmark

        with pytest.raises(ValueError, match="`workers` must be at least 2; got workers=1"):
            run_parallel_benchmark(workers=1)

    def test_cli(self, capsys):
        from learner.cli import main

        assert main(["bench", "--parallel", "--quick", "--repeat", "1"]) == 0
        out = capsys.readouterr().out
        assert "2 local workers" in out and "constraints identical: True" in out
