#!/bin/bash
# The acceptance runs, clean checkout at /tmp/acc22/repo, sequential, two workers each, 1 BLAS thread per process.
cd /tmp/acc22/repo
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
O=/tmp/acc22/out
run() { # m d k seed logit
  local f=$O/m$1_d$2_k$3_l$5_s$4
  [ -f $f.json ] && return
  /usr/bin/time -f "%e s wall, %M KB maxrss" .venv/bin/python -m learner learn --m $1 --d $2 --k $3 --logit-scale $5 --workers 2 --seed $4 --no-progress --json $f.json > $f.txt 2>&1
  echo "$(date +%T) done $1 $2 $3 s$4 l$5: $(head -2 $f.txt | tail -1)" >> $O/progress.log
}
for s in 0 1 2 3 4; do run 6 16 2 $s 1; done
for s in 0 1 2 3 4 5 6 7 8 9; do run 3 16 4 $s 1; done
for s in 0 1 2 3 4; do run 4 12 3 $s 1; done
mkdir -p $O/p6 && .venv/bin/python /tmp/acc22/phase6_compare.py $O/p6 0 1 2 3 4 5 6 7 8 9 >> $O/p6/log.txt 2>&1
for s in 0 1 2 3 4 5 6 7 8 9; do run 2 24 8 $s 1; done
for s in 0 1 2 3 4 5 6 7 8 9; do run 3 12 2 $s 1; done
for s in 0 1 2 3 4 5 6 7 8 9; do run 4 12 2 $s 1; done
for s in 0 1 2 3 4 5 6 7 8 9; do run 2 8 4 $s 3; done
echo "$(date +%T) ALLDONE" >> $O/progress.log
