"""Stand-in for `python3 -m sglang.launch_server` (SGLang 0.5.6.post2): execs servelab's engine twin with
the same command line. See servelab_standin.py."""
import sys

import sglang
from servelab_standin import serve

if __name__ == "__main__":
    serve("sglang", ["python3", "-m", "sglang.launch_server"] + sys.argv[1:])
