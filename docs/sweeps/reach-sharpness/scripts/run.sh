#!/bin/bash
# The learner's reach in logit scale (issue 37): one scaling study per logit scale and d, the learner only,
# m = 2, k = 2 and 3, six planted layers per cell, one run at a time, one BLAS thread.
#   bash scripts/run.sh OUT [D ...]        (default D: 8 12 16)
# Resumable: run it again to finish what was interrupted. Summary: python -m learner sharpness --out OUT
# --summarise-only; the boundaries: learner.study.grids.reach_boundaries(OUT).
set -e
out=${1:?usage: run.sh OUT [D ...]}
shift
ds=${*:-8 12 16}
for d in $ds; do
  for ls in 3 4 5 6 8; do
    OPENBLAS_NUM_THREADS=1 python -m learner scaling --grid "m=2,k=2..3,d=$d" --methods provable --seeds 6 \
      --logit-scale "$ls" --workers 1 --no-progress --seed 0 --out "$out/ls-$ls-d$d"
  done
done
