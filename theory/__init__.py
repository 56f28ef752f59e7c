"""Numerical checks of the lemmas behind the learner of Chen & Li (arXiv 2402.04084).

Not built yet: the one-step gradient identity, softmax concentration on slices,
the local CLT on Boolean slices and min-norm orthogonality arrive with their
own issue. Imports from :mod:`learner`, never the reverse.
"""

__all__: list[str] = []
