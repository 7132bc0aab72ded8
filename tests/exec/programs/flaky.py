# Fails in its second run only (exec numbers its runs in REPRO_AUDIT_TRIAL): a finding, not an
# input error.
import os
import sys

if os.environ.get("REPRO_AUDIT_TRIAL") == "2":
    sys.stderr.write("out of memory in the data pipeline\n")
    sys.exit(1)
with open(os.path.join(os.environ["REPRO_AUDIT_OUT"], "ok.txt"), "w") as f:
    f.write("ok\n")
