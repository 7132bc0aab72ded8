# Prints a loss per step; from step 4 on, a little noise from the system's entropy joins it, so
# the first step at which two runs part is 4.
import os
import struct

loss = 1.0
for step in range(1, 7):
    loss *= 0.9
    if step >= 4:
        loss += struct.unpack("<I", os.urandom(4))[0] * 1e-12
    print(f"step {step} loss={loss:.12f}", flush=True)
