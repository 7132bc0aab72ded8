# Runs and writes nothing.
print("done")
