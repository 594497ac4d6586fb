# Sourced by the end-to-end scripts: ports for test servers and waiting for them to answer.
#
# free_port prints a TCP port that nothing listens on, drawn from [20000, start of the kernel's ephemeral
# range) (/proc/sys/net/ipv4/ip_local_port_range, 32768 on Debian): a port inside that range can be taken
# as the source port of any client connection of a test running in parallel (bench serve opens hundreds),
# and the server then fails to bind.
free_port() {
  local lo=32768 hi p _
  [ -r /proc/sys/net/ipv4/ip_local_port_range ] && read -r lo hi < /proc/sys/net/ipv4/ip_local_port_range
  [ "$lo" -gt 21000 ] || lo=32768
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % (lo - 20000)))
    (exec 3<> "/dev/tcp/127.0.0.1/$p") 2> /dev/null && continue
    echo "$p"; return 0
  done
  echo "free_port: no free port below $lo" >&2; return 1
}

# wait_up PORT PID LOG [SECONDS]: waits until http://127.0.0.1:PORT/health answers (default 60 s). Fails,
# printing LOG, when the process PID exits first or the time runs out (a loaded CI box starts slowly).
wait_up() {
  local port="$1" pid="$2" log="$3" limit="${4:-60}" _
  for _ in $(seq 1 $((limit * 10))); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && return 0
    if ! kill -0 "$pid" 2> /dev/null; then
      echo "server (pid $pid, port $port) exited before it answered /health; its log:"; cat "$log"; return 1
    fi
    sleep 0.1
  done
  echo "server (pid $pid, port $port) did not answer /health within ${limit} s; its log:"; cat "$log"; return 1
}
