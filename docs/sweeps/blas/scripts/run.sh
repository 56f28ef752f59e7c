#!/bin/bash
# learn's BLAS threads per phase, quiet and loaded (two CPU-bound busy loops beside the run).
# Usage: scripts/run.sh REPO OUT. Runs `python -m learner learn ... --workers 2 --blas-threads B` for the main job
# (2, 8, 4) at logit scale 3 and for (5, 16, 2) at logit scale 1, seed 0, two repetitions, interleaved:
# B = 1 and B = 2 (numpy's default on this 2-core machine), each quiet and loaded. Nothing else may run.
REPO=$1; OUT=$2
mkdir -p "$OUT"
cd "$REPO" || exit 1
unset OPENBLAS_NUM_THREADS OMP_NUM_THREADS MKL_NUM_THREADS  # the parent's setting is --blas-threads' alone
# The busy loop's output goes nowhere: with it on the $(...) pipe, the substitution would wait for it forever.
busy() { python3 -c "while True: pass" > /dev/null 2>&1 & echo $!; }
for rep in 0 1; do
  for load in quiet loaded; do
    for setting in "2 8 4 3" "5 16 2 1"; do
      set -- $setting
      for b in 1 2; do
        f=$OUT/m$1_d$2_k$3_b${b}_${load}_r$rep
        [ -f $f.json ] && continue
        pids=""
        [ $load = loaded ] && pids="$(busy) $(busy)"
        /usr/bin/time -f "%e s wall" .venv/bin/python -m learner learn --m $1 --d $2 --k $3 --logit-scale $4 \
          --workers 2 --seed 0 --blas-threads $b --no-progress --json $f.json > $f.txt 2>&1
        [ -n "$pids" ] && kill $pids
        echo "$(date +%T) $f: $(tail -1 $f.txt)" >> $OUT/progress.log
      done
    done
  done
done
echo "$(date +%T) ALLDONE" >> $OUT/progress.log
