#!/bin/bash
# The benchmarks quoted in the guide's "Cores, clusters and speed", re-run on one version in one sitting.
# Usage: scripts/run.sh REPO OUT. Nothing else may run: each figure is a median of interleaved runs, and the
# BLAS-threads runs (docs/sweeps/blas/scripts/run.sh) time whole learning runs quiet and beside two busy loops.
REPO=$1; OUT=$2
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$REPO" || exit 1
unset OPENBLAS_NUM_THREADS OMP_NUM_THREADS MKL_NUM_THREADS  # each benchmark sets its own threads and says which
step() {  # step NAME ARGS...: one benchmark, its printout in NAME.txt and its figures in NAME.json
  name=$1; shift
  [ -f "$OUT/$name.json" ] && return
  .venv/bin/python -m learner bench "$@" --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  echo "$(date +%T) $name: exit $?" >> "$OUT/progress.log"
}
step forward                          # the forward pass against GEMM, einsum and torch; the pipeline at (3, 12, 2)
step certification --certification    # the float32 screen at (3, 16, 4), tolerance 0.03
step parallel --parallel              # one stream in this process against two workers
step search --search --repeat 3       # phase 6 at (7, 20, 2), one process against two workers
step span --span                      # phase 5's hull solve through a QR against the thin SVD
bash docs/sweeps/blas/scripts/run.sh "$REPO" "$OUT/blas"
echo "$(date +%T) ALLDONE" >> "$OUT/progress.log"
