"""Tests for learner.trained: the tasks' labels against constructions by hand, the exactness each task claims,
and training (reproducible, checkpointed, refusing bad input by name)."""

import itertools

import numpy as np
import pytest

from learner import AttentionLayer, random_layer, sample_inputs
from learner.trained import TASKS, task_labels, train_layer


def _loop_labels(task, X):
    """The tasks' definitions written as loops over tokens and coordinates (no numpy broadcasting)."""
    n, k, d = X.shape
    Y = np.zeros_like(X)
    for i in range(n):
        for a in range(k):
            if task == "copy":
                Y[i, a] = X[i, (a + 1) % k]
            elif task == "majority":
                for c in range(d):
                    total = sum(X[i, b, c] for b in range(k))
                    Y[i, a, c] = 1.0 if total > 0 else (-1.0 if total < 0 else 0.0)
            elif task == "retrieve":
                s = d // 3
                scores = [sum(X[i, a, c] * X[i, b, s + c] for c in range(s)) for b in range(k)]
                best = scores.index(max(scores))  # the first of the ties
                for c in range(s):
                    Y[i, a, 2 * s + c] = X[i, best, 2 * s + c]
            elif task == "parity":
                Y[i, a, 0] = X[i, a, 0] * X[i, a, 1] * X[i, a, 2]
    return Y


class TestTaskLabels:
    @pytest.mark.parametrize("task", ["copy", "majority", "retrieve", "parity"])
    @pytest.mark.parametrize("k", [2, 3, 4])
    def test_match_the_definitions_written_as_loops(self, task, k):
        X = sample_inputs(50, k, 7, rng=k)
        np.testing.assert_array_equal(task_labels(task, X, m=2), _loop_labels(task, X))

    def test_retrieve_breaks_ties_to_the_first_token(self):
        # d = 3, s = 1: token 0's query +1 meets keys (+1, +1, -1): tokens 0 and 1 tie, token 0 wins
        X = np.array([[[1.0, 1, 5], [1, 1, 7], [1, -1, 9]]])
        assert task_labels("retrieve", X, m=1)[0, :, 2].tolist() == [5.0, 5.0, 5.0]

    def test_the_teacher_is_one_planted_layer_per_seed(self):
        X = sample_inputs(20, 3, 6, rng=0)
        a, b = task_labels("teacher", X, m=2, seed=4), task_labels("teacher", X, m=2, seed=5)
        np.testing.assert_array_equal(a, task_labels("teacher", X, m=2, seed=4))
        assert not np.allclose(a, b)

    def test_a_new_task_is_one_entry(self):
        for name, task in TASKS.items():
            assert task.name == name and task.min_d >= 2 and task.description

    @pytest.mark.parametrize(("task", "X", "match"), [
        ("nope", np.zeros((1, 2, 4)), "task"),
        ("parity", np.zeros((1, 2, 2)), r"d >= 3 for task 'parity'; got shape \(1, 2, 2\)"),
        ("copy", np.zeros((2, 4)), r"shape \(n, k, d\)"),
    ], ids=["unknown", "too small", "two axes"])
    def test_bad_input_is_refused_by_name(self, task, X, match):
        with pytest.raises(ValueError, match=match):
            task_labels(task, X, m=1)


class TestExactness:
    """What each task says of the form, checked on layers built by hand."""

    def test_majority_at_two_tokens_is_uniform_attention(self):
        X = sample_inputs(200, 2, 5, rng=1)
        uniform = AttentionLayer(np.zeros((1, 5, 5)), np.eye(5)[None])
        np.testing.assert_allclose(uniform(X), task_labels("majority", X, m=1), atol=1e-15)
        assert not TASKS["majority"].exact(3)

    def test_copy_at_two_tokens_is_attending_away_from_self(self):
        X = sample_inputs(200, 2, 5, rng=2)
        away = AttentionLayer(-20.0 * np.eye(5)[None], np.eye(5)[None])
        distinct = np.any(X[:, 0] != X[:, 1], axis=1)
        np.testing.assert_allclose(away(X)[distinct], task_labels("copy", X, m=1)[distinct], atol=1e-12)
        assert TASKS["copy"].exact(2)

    def test_copy_from_three_tokens_breaks_permutation_equivariance(self):
        """Every layer of the form has F(PX) = P F(X); the copy labels do not, for the swap of tokens 0 and 1."""
        X = sample_inputs(1, 3, 5, rng=3)
        swap = [1, 0, 2]
        layer = random_layer(2, 5, check=False, rng=0)
        np.testing.assert_allclose(layer(X[:, swap]), layer(X)[:, swap], atol=1e-12)
        labels = task_labels("copy", X[:, swap], m=1)
        assert not np.allclose(labels, task_labels("copy", X, m=1)[:, swap])
        assert not TASKS["copy"].exact(3)


class TestTrainLayer:
    @pytest.fixture(autouse=True)
    def _torch(self):
        pytest.importorskip("torch")

    def test_the_teacher_is_learned_and_the_run_is_reproducible(self):
        a = train_layer("teacher", m=1, d=4, k=2, steps=200, checkpoints=(0, 50), rng=0)
        b = train_layer("teacher", m=1, d=4, k=2, steps=200, checkpoints=(0, 50), rng=0)
        assert sorted(a.checkpoints) == [0, 50, 200]
        assert a.final_loss < 0.05 < a.losses[0]
        np.testing.assert_array_equal(a.layer.thetas, b.layer.thetas)
        assert a.record["final_loss"] == a.final_loss and a.record["task"] == "teacher"

    def test_the_first_checkpoint_is_the_initial_layer(self):
        trained = train_layer("majority", m=2, d=4, k=3, steps=5, checkpoints=(0,), rng=1)
        start = trained.checkpoints[0]
        assert np.linalg.norm(start.thetas[0]) == pytest.approx(0.5)  # random_layer at the init scale
        assert not np.array_equal(start.thetas, trained.layer.thetas)

    def test_torch_threads_are_restored(self):
        torch = pytest.importorskip("torch")
        before = torch.get_num_threads()
        train_layer("copy", m=1, d=4, k=2, steps=2, threads=1, rng=0)
        assert torch.get_num_threads() == before

    @pytest.mark.parametrize(("kwargs", "match"), [
        ({"task": "nope"}, "task"),
        ({"checkpoints": (11,)}, r"steps in \[0, steps=10\]; got 11"),
        ({"task": "parity", "d": 2}, "d"),
        ({"lr": -1.0}, "lr"),
    ], ids=["unknown task", "late checkpoint", "small d", "negative lr"])
    def test_bad_input_is_refused_by_name(self, kwargs, match):
        args = {"task": "copy", "m": 1, "d": 4, "k": 2, "steps": 10} | kwargs
        with pytest.raises(ValueError, match=match):
            train_layer(**args)


def test_every_task_trains():
    pytest.importorskip("torch")
    for task, k in itertools.product(TASKS, (2, 3)):
        assert np.isfinite(train_layer(task, m=1, d=6, k=k, steps=3, rng=0).final_loss)
