"""The studies: how the paper's learner's run time grows, how it compares, and the benchmarks (ours).

The top layer of the toolkit. It uses the model and learner (:mod:`learner`) and the comparisons
(:mod:`learner.baselines`), and runs on the sweep engine and its records (:mod:`learner.sweep`); none of
them imports it, and ``import learner`` does not load it.

- :mod:`learner.study.scaling`, :mod:`learner.study.frontier`, :mod:`learner.study.peers`,
  :mod:`learner.study.bench`, :mod:`learner.study.growth` (with :mod:`learner.study.pricing` and
  :mod:`learner.study.budget`) — the studies, siblings on the engine (:mod:`learner.sweep.engine`);
  :mod:`learner.study.cli` — their commands (``python -m learner scaling|peers|bench``).

Import the modules themselves (``from learner.study.scaling import scaling_study``): this package
imports nothing on its own, so that loading one study does not load the others.
"""
