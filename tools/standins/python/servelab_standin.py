"""Engine stand-ins: executables with the engines' real command lines that serve through servelab's engine
twin (`servelab sim serve`). They behave like the engine seen from outside: start-up log lines in the
engine's style, a start-up delay during which the port is held but /health gets no answer, /health and
/v1/models once ready, the engine's own error text (from the twin) and exit status 1 for start-up refusals
and out-of-memory, death on the first request for run-time failures, optional crash injection. They are how
CI runs `servelab tune --target local`, and how a user rehearses a study before booking GPUs.

They are NOT the engines: every number they produce is the twin's prediction, served in real time (or
faster, with a time scale), and every log says so.

Environment:
  SERVELAB_BIN                      servelab binary (default: next to the stand-ins when installed, the
                                    build tree when run from a checkout, else `servelab` on PATH)
  SERVELAB_STANDIN_TIME_SCALE       run this many times faster than real time (default 1); bench and tune
                                    read it from the server and report engine time
  SERVELAB_STANDIN_STARTUP_S        start-up delay, wall seconds (default 3)
  SERVELAB_STANDIN_HARDWARE         GPU node the twin models (default 8xH200)
  SERVELAB_STANDIN_CRASH_AFTER_S    crash injection: die this many wall seconds after becoming ready
  SERVELAB_STANDIN_CRASH_MATCH      ... only for launches whose command line contains this text
  SERVELAB_STANDIN_<ENGINE>_VERSION report another version (VLLM, SGLANG, TRTLLM), e.g. to test pre-flight
"""
import datetime
import os
import shlex
import shutil
import sys

VERSIONS = {"vllm": "0.13.0", "sglang": "0.5.6.post2", "trtllm": "1.2.0rc5"}
MARK = "servelab stand-in"  # pre-flight recognises stand-ins by this text in their --version output


def version(engine):
    return os.environ.get("SERVELAB_STANDIN_%s_VERSION" % engine.upper(), VERSIONS[engine])


def servelab_binary():
    explicit = os.environ.get("SERVELAB_BIN")
    if explicit:
        return explicit
    here = os.path.dirname(os.path.realpath(__file__))
    for candidate in (
        os.path.join(here, "..", "..", "..", "..", "bin", "servelab"),  # PREFIX/share/servelab/standins/python
        os.path.join(here, "..", "..", "..", "build", "servelab"),       # checkout: tools/standins/python
    ):
        if os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    found = shutil.which("servelab")
    if found:
        return found
    sys.stderr.write("%s: cannot find the servelab binary; set SERVELAB_BIN\n" % MARK)
    sys.exit(1)


def flag_value(argv, *names):
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(n + "="):
                return a[len(n) + 1:]
    return None


def now_vllm():
    return datetime.datetime.now().strftime("%m-%d %H:%M:%S")


def startup_lines(engine, launch):
    """(lines printed before loading, lines printed once ready), in the engine's style."""
    pid = os.getpid()
    scale = os.environ.get("SERVELAB_STANDIN_TIME_SCALE", "1")
    note = ("%s: this is not %s; it serves through servelab's engine twin (servelab sim serve, time scale %s)"
            % (MARK, engine, scale))
    cmd = " ".join(shlex.quote(a) for a in launch)
    if engine == "vllm":
        before = [
            "(APIServer pid=%d) INFO %s [api_server.py] vLLM API server version %s" % (pid, now_vllm(), version(engine)),
            "(APIServer pid=%d) INFO %s [utils.py] args: %s" % (pid, now_vllm(), cmd),
            "(APIServer pid=%d) INFO %s [%s] %s" % (pid, now_vllm(), MARK, note),
            "(APIServer pid=%d) INFO %s [model.py] Loading model weights..." % (pid, now_vllm()),
        ]
        ready = ["(APIServer pid=%d) INFO:     Started server process [%d]" % (pid, pid),
                 "(APIServer pid=%d) INFO:     Waiting for application startup." % pid,
                 "(APIServer pid=%d) INFO:     Application startup complete." % pid]
    elif engine == "sglang":
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        before = ["[%s] server_args: %s" % (stamp, cmd), "[%s] %s" % (stamp, note),
                  "[%s] Load weight begin." % stamp]
        ready = ["[%s] INFO:     Application startup complete." % stamp,
                 "[%s] The server is fired up and ready to roll!" % stamp]
    else:
        before = ["[TensorRT-LLM] TensorRT-LLM version: %s" % version(engine), "[TensorRT-LLM][INFO] %s" % note,
                  "[TensorRT-LLM][INFO] args: %s" % cmd]
        ready = ["INFO:     Started server process [%d]" % pid, "INFO:     Waiting for application startup.",
                 "INFO:     Application startup complete."]
    return before, ready


def serve(engine, launch):
    """Replaces this process with `servelab sim serve ... -- <launch>` (the engine's command line)."""
    before, ready = startup_lines(engine, launch)
    for line in before:
        sys.stderr.write(line + "\n")
    sys.stderr.flush()
    cmd = [servelab_binary(), "sim", "serve",
           "--time-scale", os.environ.get("SERVELAB_STANDIN_TIME_SCALE", "1"),
           "--hardware", os.environ.get("SERVELAB_STANDIN_HARDWARE", "8xH200"),
           "--startup-delay-s", os.environ.get("SERVELAB_STANDIN_STARTUP_S", "3"),
           "--ready-lines", "\n".join(ready)]
    host = flag_value(launch, "--host")
    if host:
        cmd += ["--host", "127.0.0.1" if host == "localhost" else host]
    crash = os.environ.get("SERVELAB_STANDIN_CRASH_AFTER_S")
    match = os.environ.get("SERVELAB_STANDIN_CRASH_MATCH", "")
    if crash and match in " ".join(launch):
        cmd += ["--crash-after-s", crash]
    os.execv(cmd[0], cmd + ["--"] + launch)


def print_version(engine, text):
    sys.stdout.write(text + "\n")
    sys.stderr.write("%s (engine twin), not %s\n" % (MARK, engine))
