"""Shared test configuration: one BLAS thread, deterministic hypothesis profiles.

``HYPOTHESIS_PROFILE=ci`` (the default) runs a fixed, derandomised set of 40
examples per property so CI is reproducible and fast; ``HYPOTHESIS_PROFILE=dev``
explores 200 random examples per property for local bug hunting.
"""

import os

# One BLAS thread for the whole test run (ours): results are bit-reproducible for a given thread
# setting only, and on a 2-core machine numpy's default threads oversubscribe the cores as soon as
# a test starts worker processes. The environment reaches the processes tests start; threadpoolctl
# limits this process, whose BLAS may already be loaded (a plugin imported numpy).
os.environ.update({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})

from threadpoolctl import threadpool_limits  # noqa: E402

_BLAS_LIMIT = threadpool_limits(1, user_api="blas")

from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=40, print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=200, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
