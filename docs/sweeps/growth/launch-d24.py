"""The growth study's sitting: three scaling studies from a clean clone, one run at a time on two workers."""
import sys, time, logging
sys.path.insert(0, "/work/growth-src")
import learner
assert learner.__file__.startswith("/work/growth-src/"), learner.__file__
from learner.study.scaling import scaling_study
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
OPTS = {"refined_tol": 0.1, "search": "vp"}
LINES = {
    "d24": ["m=1..10,k=2,d=24,seeds=10"],
    "k": ["m=2,k=3..4,d=24,seeds=10", "m=4,k=3..4,d=24,seeds=10", "m=6,k=3..4,d=24,seeds=5", "m=8,k=3..4,d=24,seeds=5"],
    "d32": ["m=1..8,k=2,d=32,seeds=5", "m=9..13,k=2,d=32,seeds=3"],
}
base = sys.argv[1]
for name in sys.argv[2:]:
    t = time.time()
    print(f"=== {name} start {time.strftime('%H:%M:%S', time.gmtime())}", file=sys.stderr, flush=True)
    scaling_study(f"{base}/{name}", grid=LINES[name], methods=["provable"], provable_options=OPTS,
                  backend="serial", learn_workers=2, plot=True)
    print(f"=== {name} done {time.strftime('%H:%M:%S', time.gmtime())} in {time.time() - t:.0f} s", file=sys.stderr,
          flush=True)
