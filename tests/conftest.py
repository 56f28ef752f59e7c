"""Shared test configuration: deterministic hypothesis profiles.

``HYPOTHESIS_PROFILE=ci`` (the default) runs a fixed, derandomised set of 40
examples per property so CI is reproducible and fast; ``HYPOTHESIS_PROFILE=dev``
explores 200 random examples per property for local bug hunting.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=40, print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=200, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
