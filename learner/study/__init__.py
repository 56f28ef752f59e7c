"""The studies: how the paper's learner's run time grows, how it compares, and the benchmarks (ours).

The top layer of the toolkit. It uses the model and learner (:mod:`learner`) and the comparisons
(:mod:`learner.baselines`); neither imports it, and ``import learner`` does not load it.

- :mod:`learner.study.sweep` — the engine: one JSON record per run, resume, locking, local and Dask
  backends, interruption, the growth fits.
- :mod:`learner.study.runs` — the run specification of the studies (:class:`~learner.study.runs.RunSpec`)
  and the planted instance each run learns.
- :mod:`learner.study.records` — the record kinds and their schema versions, the one reader
  (:func:`~learner.study.records.read_record`) and the one summary writer.
- :mod:`learner.study.scaling`, :mod:`learner.study.frontier`, :mod:`learner.study.peers`,
  :mod:`learner.study.bench` — the studies, siblings on the engine; :mod:`learner.study.cli` — their
  commands (``python -m learner scaling|peers|bench``).

Import the modules themselves (``from learner.study.scaling import scaling_study``): this package
imports nothing on its own, so that loading one study does not load the others.
"""
