cd /work/main
run() { # cell pf workers
  s=$(date +%s.%N)
  .venv/bin/python -c "import sys, learner, importlib; L = sys.modules['learner.learn']; L.POOL_FROM_EXAMPLES=$2; from learner.cli import main; sys.exit(main(sys.argv[1:]))" learn $1 --workers $3 --no-progress > /tmp/nd/last.out 2>&1
  e=$(date +%s.%N); echo "$1 | pf=$2 w=$3 | $(echo "$e - $s" | bc) s | $(grep -oE 'examples drawn [0-9,]+' /tmp/nd/last.out | head -1)"
}
for rep in 1 2 3; do
 for cell in "--m 2 --d 8 --k 4" "--m 4 --d 12 --k 2 --logit-scale 1" "--m 5 --d 16 --k 2 --logit-scale 1" "--m 6 --d 16 --k 2 --logit-scale 1"; do
  run "$cell" 0 1; run "$cell" 0 2; run "$cell" 200000 2; run "$cell" 400000 2
 done
done
