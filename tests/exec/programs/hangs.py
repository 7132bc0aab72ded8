# Never finishes.
import time

print("started", flush=True)
time.sleep(3600)
