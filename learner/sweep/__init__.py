"""The sweep engine and its run records: the library layer the studies, ``theory`` and ``lowerbounds`` build on.

It uses the model and learner (:mod:`learner`) and the comparisons (:mod:`learner.baselines`); the studies
(:mod:`learner.study`), the yield study (:mod:`theory.yield_study`) and the learning study on the hard
instances (:mod:`lowerbounds.learnhard`) use it, and nothing here imports them.

- :mod:`learner.sweep.engine` — the engine: one JSON record per run, resume, locking, local and Dask
  backends, interruption, the growth fits.
- :mod:`learner.sweep.runs` — the run specification of the studies (:class:`~learner.sweep.runs.RunSpec`)
  and the planted instance each run learns.
- :mod:`learner.sweep.records` — the record kinds and their schema versions, the one reader
  (:func:`~learner.sweep.records.read_record`) and the one summary writer.
- :mod:`learner.sweep.methods` — the registry of the methods a study runs (:class:`~learner.sweep.methods.StudyMethod`).

Import the modules themselves (``from learner.sweep.engine import run_sweep``): this package imports nothing on
its own, and ``import learner`` does not load it.
"""
