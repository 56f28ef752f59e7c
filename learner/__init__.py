"""The multi-head attention layer of Chen & Li (arXiv 2402.04084) and its learner.

This package is the floor of the toolkit: the layer itself
(:class:`AttentionLayer`), its input distributions and exact cube enumeration,
planted instances, the paper's non-degeneracy conditions measured on a layer,
error metrics, file I/O, the paper's six-phase learner (:func:`learn`,
phases in :mod:`learner.phases`), and the bridge to PyTorch (:func:`from_torch`,
:func:`to_torch`; the optional ``torch`` extra). ``theory`` and ``lowerbounds`` import from here,
never the reverse.

Two layers sit on it, each importing only downward: :mod:`learner.baselines`, the
gradient-descent learners it is compared with (:func:`~learner.baselines.fit_gradient`,
:func:`~learner.baselines.fit_torch`), and :mod:`learner.study`, the sweep engine and the studies
(scaling, frontier, peers, benchmarks). ``import learner`` loads neither.

References
----------
S. Chen and Y. Li, "Provably learning a multi-head attention layer",
arXiv:2402.04084 (STOC 2025).
"""

from ._version import __version__ as __version__
from .assumptions import AssumptionReport, AssumptionRow, assumptions, check_setting, lattice_distance
from .certify import ErrorCertificate, certify_error
from .errors import (
    ExamplesExhausted,
    FileFormatError,
    LearnInterrupted,
    MissingExtra,
    PlantingError,
    SourceError,
    TorchConversionError,
)
from .geometry import min_norm_point
from .inputs import check_inputs, cube_expectation, enumerate_cube, sample_inputs
from .instances import random_layer
from .io import load_examples, load_layer, read_metadata, save_examples, save_layer, write_json
from .layer import AttentionLayer, softmax
from .learn import learn
from .metrics import AttentionStats, HeadMatch, attention_statistics, match_heads, relative_error
from .oracle import ArraySource, LayerOracle
from .phases import LearnConfig
from .result import LearnResult
from .torch_interop import from_torch, load_torch_layer, to_torch, to_torch_mha
from .trained import TASKS, train_layer

__all__ = [
    "TASKS",
    "ArraySource",
    "AssumptionReport",
    "AssumptionRow",
    "AttentionLayer",
    "AttentionStats",
    "ErrorCertificate",
    "ExamplesExhausted",
    "SourceError",
    "FileFormatError",
    "HeadMatch",
    "LayerOracle",
    "LearnConfig",
    "LearnInterrupted",
    "LearnResult",
    "MissingExtra",
    "PlantingError",
    "TorchConversionError",
    "assumptions",
    "attention_statistics",
    "certify_error",
    "check_inputs",
    "check_setting",
    "cube_expectation",
    "enumerate_cube",
    "from_torch",
    "lattice_distance",
    "learn",
    "load_examples",
    "load_layer",
    "load_torch_layer",
    "match_heads",
    "min_norm_point",
    "random_layer",
    "read_metadata",
    "relative_error",
    "sample_inputs",
    "save_examples",
    "save_layer",
    "softmax",
    "to_torch",
    "to_torch_mha",
    "train_layer",
    "write_json",
]
