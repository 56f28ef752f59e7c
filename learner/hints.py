"""Type aliases of the toolkit's annotations, for mypy and readers (nothing here runs any check)."""

from __future__ import annotations

import os
from typing import TypeAlias

import numpy as np

__all__ = ["PathLike", "SeedLike"]

#: What every ``rng``/``seed`` parameter takes (:func:`learner.validation.check_rng`): None for fresh entropy, a
#: non-negative integer, a SeedSequence, a BitGenerator or a Generator.
SeedLike: TypeAlias = int | np.random.SeedSequence | np.random.BitGenerator | np.random.Generator | None

#: A file or directory name: a string or an ``os.PathLike`` (``pathlib.Path``).
PathLike: TypeAlias = str | os.PathLike[str]
