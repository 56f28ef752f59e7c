#!/bin/bash
# Controller (replaces the tail of run_all.sh): after (2, 24, 8) s9, stage A of (5, 16, 2) alone, then the
# regression settings with stage B (old vs new phase 6, like for like inside each process) beside them.
cd /tmp/acc22/repo
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
O=/tmp/acc22/out
P=$O/p6
mkdir -p $P
while [ ! -f $O/m2_d24_k8_l1_s9.json ]; do sleep 2; done
pkill -f run_all.sh; sleep 0.5
pkill -f "learner learn --m 3 --d 12 --k 2"; sleep 1
rm -f $O/m3_d12_k2_l1_s0.json $O/m3_d12_k2_l1_s0.txt
echo "$(date +%T) chain stopped after (2,24,8) s9; stage A start" >> $O/progress.log
.venv/bin/python /tmp/acc22/p6_stageA.py $P 0 1 2 3 4 5 6 7 8 9 >> $P/log.txt 2>&1
echo "$(date +%T) stage A done; stage B and regressions start" >> $O/progress.log
.venv/bin/python /tmp/acc22/p6_stageB.py $P 0 2 4 6 8 >> $P/logB0.txt 2>&1 &
B0=$!
.venv/bin/python /tmp/acc22/p6_stageB.py $P 1 3 5 7 9 >> $P/logB1.txt 2>&1 &
B1=$!
run() { # m d k seed logit
  local f=$O/m$1_d$2_k$3_l$5_s$4
  [ -f $f.json ] && return
  /usr/bin/time -f "%e s wall, %M KB maxrss" .venv/bin/python -m learner learn --m $1 --d $2 --k $3 --logit-scale $5 --workers 2 --seed $4 --no-progress --json $f.json > $f.txt 2>&1
  echo "$(date +%T) done $1 $2 $3 s$4 l$5: $(head -2 $f.txt | tail -1)" >> $O/progress.log
}
for s in 0 1 2 3 4 5 6 7 8 9; do run 3 12 2 $s 1; done
for s in 0 1 2 3 4 5 6 7 8 9; do run 4 12 2 $s 1; done
echo "$(date +%T) (3,12,2), (4,12,2) done; stage B running: $(jobs -r | wc -l) processes" >> $O/progress.log
for s in 0 1 2 3 4 5 6 7 8 9; do run 2 8 4 $s 3; done
echo "$(date +%T) regressions done" >> $O/progress.log
wait $B0 $B1
echo "$(date +%T) ALLDONE (stage B done)" >> $O/progress.log
