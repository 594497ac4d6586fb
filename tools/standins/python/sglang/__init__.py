"""Stand-in for the `sglang` package (SGLang 0.5.6.post2): put tools/standins/python on PYTHONPATH and
`python3 -m sglang.launch_server ...` serves through servelab's engine twin (see servelab_standin.py)."""
import os as _os
import sys as _sys

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.realpath(__file__))))
import servelab_standin as _s  # noqa: E402

__version__ = _s.version("sglang")
__servelab_standin__ = True
