# Always fails, with a reason on stderr.
import sys

sys.stderr.write("error: dataset folder /data/imagenet not found\n")
sys.exit(1)
