"""Gradient-descent learners to compare the paper's learner with: the comparisons layer of the toolkit.

Neither method is the paper's, and neither has a guarantee (the squared loss is non-convex in the
``Θ_i``). Both report through :class:`learner.LearnResult`, like :func:`learner.learn`, and share one
scaffold (``learner.baselines._scaffold``): the same examples split into training and validation,
the same restarts from the same initial parameters for the same ``rng``, the same milestone clock and
the same verdict, so that they differ only in the optimiser's recipe and the software.

- :func:`fit_gradient`: full-batch (or mini-batch) Adam or plain gradient descent in numpy, with
  analytic gradients.
- :func:`fit_torch`: ``torch.optim.Adam`` on mini-batches with a cosine schedule and gradient clipping,
  the recipe an ML researcher would reach for (the optional ``torch`` extra).

This package uses the model (:mod:`learner`) and is used by the studies (:mod:`learner.study`); the
model never imports it.
"""

from ._scaffold import (
    DEFAULT_MILESTONES,
    OPTION_RULES,
    check_milestones,
    milestone_key,
    option_rules,
    validation_error,
)
from .numpy_adam import OPTIMIZERS, fit_gradient
from .torch_adam import fit_torch

__all__ = [
    "DEFAULT_MILESTONES",
    "OPTION_RULES",
    "OPTIMIZERS",
    "check_milestones",
    "option_rules",
    "fit_gradient",
    "fit_torch",
    "milestone_key",
    "validation_error",
]
