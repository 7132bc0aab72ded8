# Starts a helper in a session of its own (as a script that launches a server or a logger with
# start_new_session=True would), so that it leaves the run's process group, then writes its
# result and exits without stopping the helper. argv[1]: a marker on the helper's command line;
# argv[2] "wait": wait forever after starting it instead (to be interrupted).
import subprocess
import sys
import time

import torch

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", sys.argv[1]], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if sys.argv[2:] == ["wait"]:
    print("waiting", flush=True)
    time.sleep(3600)
torch.save({"w": torch.ones(4)}, "daemon.pt")
print("done", flush=True)
