#!/bin/bash
# The sharpness map: one scaling study per logit scale and d, m = 2, k = 2 and 3, one run at a time,
# one BLAS thread. The learner on six planted layers per cell (folders ls-<scale>-d<d>), Adam on the first of
# them at a fixed learning rate of 0.01, no tuning (folders ls-<scale>-d<d>-adam).
#   bash scripts/run.sh OUT [D ...]        (default D: 8 12 16)
# Resumable: run it again to finish what was interrupted. Summary and figure: python -m learner sharpness
# --out OUT --summarise-only; the boundaries: learner.study.grids.reach_boundaries(OUT).
set -e
out=${1:?usage: run.sh OUT [D ...]}
shift
ds=${*:-8 12 16}
scales="0.5 1 2 3 4 5 6 8"
for d in $ds; do
  for ls in $scales; do
    OPENBLAS_NUM_THREADS=1 python -m learner scaling --grid "m=2,k=2..3,d=$d" --methods provable --seeds 6 \
      --logit-scale "$ls" --workers 1 --no-progress --seed 0 --out "$out/ls-$ls-d$d"
  done
done
for d in $ds; do
  for ls in $scales; do
    OPENBLAS_NUM_THREADS=1 python -m learner scaling --grid "m=2,k=2..3,d=$d" --methods adam --seeds 1 \
      --adam-lr 0.01 --logit-scale "$ls" --workers 1 --no-progress --seed 0 --out "$out/ls-$ls-d$d-adam"
  done
done
