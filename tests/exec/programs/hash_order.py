# Writes the order a Python set iterates its strings in: another order in every process unless
# PYTHONHASHSEED is set, so `exec` finds it nondeterministic and pythonhashseed=0 fixes it. Each run
# first pauses 20 ms or 500 ms, drawn from how many runs came before it (the counter file argv[1]),
# so interleaved timing rounds cannot agree on a price (tests/exec/test_exec_costs.py).
import os
import random
import sys
import time

counter = sys.argv[1]
n = int(open(counter).read()) if os.path.exists(counter) else 0
with open(counter, "w") as f:
    f.write(str(n + 1))
time.sleep(random.Random(n).choice([0.02, 0.5]))
words = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"}
with open(os.path.join(os.environ["REPRO_AUDIT_OUT"], "order.txt"), "w") as f:
    f.write(" ".join(words))
