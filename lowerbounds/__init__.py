"""Hard instances behind the lower bounds of Chen & Li (arXiv 2402.04084).

Not built yet: the SQ family and the LWE-style family on two tokens (both
constructions ours, in the spirit of the paper), their oracles and attacks,
arrive with their own issues. Imports from :mod:`learner`, never the reverse.
"""

__all__: list[str] = []
