#!/usr/bin/env bash
# Gateway throughput vs. raw Redis (redis-benchmark) for the same EVALSHA script, same Redis,
# same run; then the gateway in front of one redis-server beside the gateway in front of a Redis
# Cluster (3 masters, 3 replicas, --redis-cluster), same script, same run. Prints two markdown
# tables. Loopback only; every cell runs SECONDS seconds.
#
#   bench/gateway/run.sh            # SECONDS=3 by default
#   SECONDS_PER_CELL=5 bench/gateway/run.sh
#   GATEWAY_BIN=/tmp/old/edgelimit-gateway LOAD_BIN=/tmp/old/load CLUSTER=0 bench/gateway/run.sh
#                                   # binaries built earlier (to alternate builds), no cluster table
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CELL="${SECONDS_PER_CELL:-3}"
TOKEN="bench-token"

for tool in redis-server redis-benchmark redis-cli cargo; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install redis-server)" >&2; exit 1; }
done

if [ -n "${GATEWAY_BIN:-}" ]; then
  GATEWAY="$GATEWAY_BIN"
  LOAD="${LOAD_BIN:-$(dirname "$GATEWAY")/examples/load}"
else
  GATEWAY="$(bash "$ROOT/bench/gateway/build.sh")"
  LOAD="$(dirname "$GATEWAY")/examples/load"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# A cluster node's bus listens 10,000 ports higher: at most 55535 (redis-server refuses above), bus free.
free_cluster_port() {
  python3 -c '
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    if port > 55535: continue
    bus = socket.socket()
    try: bus.bind(("127.0.0.1", port + 10000))
    except OSError: continue
    finally: bus.close()
    print(port); break'
}
RPORT=$(free_port)
GPORT=$(free_port)
PIDS=()
CLUSTER_DIR="$(mktemp -d)"
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$CLUSTER_DIR"
}
trap cleanup EXIT
wait_healthz() {
  for _ in $(seq 100); do python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return; sleep 0.05; done
  echo "the gateway on port $1 did not start" >&2; exit 1
}

redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
PIDS+=($!)
for _ in $(seq 100); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
# The gateway connects as the Redis ACL user of gateway/README.md, as operators run it.
read -r -a ACL_RULES <<<"$(sed -n 's/^ACL SETUSER gateway //p' "$ROOT/gateway/README.md" | head -n 1 | sed 's/>PASSWORD/>bench/')"
[ "$(redis-cli -p "$RPORT" ACL SETUSER gateway "${ACL_RULES[@]}")" = OK ] || { echo "ACL SETUSER gateway failed" >&2; exit 1; }
"$GATEWAY" --listen "127.0.0.1:$GPORT" --redis "redis://gateway:bench@127.0.0.1:$RPORT" --token "$TOKEN" &
GPID=$!
PIDS+=($GPID)
# CPU time (user + system, clock ticks) the gateway has used so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
wait_healthz "$GPORT"

# A fixed-window step like @upstash/ratelimit's: INCR, set the TTL on first use.
SCRIPT="local c = redis.call('INCR', KEYS[1]) if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return c"
SHA=$(redis-cli -p "$RPORT" script load "$SCRIPT")

raw() { # concurrency pipeline -> commands/s
  local n=$(( $1 * 20000 * $2 )); [ "$n" -gt 1000000 ] && n=1000000
  redis-benchmark -p "$RPORT" -c "$1" -P "$2" -n "$n" --csv evalsha "$SHA" 1 bench:raw 60000 \
    | tail -1 | cut -d, -f2 | tr -d '"'
}

echo "| workload | clients | gateway cmd/s | raw redis cmd/s | gateway/raw | gateway CPU µs/request |"
echo "|---|---:|---:|---:|---:|---:|"
for mode in single pipeline16; do
  depth=1; [ "$mode" = pipeline16 ] && depth=16
  for c in 1 16 64; do
    before=$(cpu_ticks "$GPID")
    g=$("$LOAD" "http://127.0.0.1:$GPORT" "$TOKEN" "$SHA" "$mode" "$c" "$CELL")
    after=$(cpu_ticks "$GPID")
    r=$(raw "$c" "$depth")
    ratio=$(python3 -c "print(f'{$g/$r:.0%}')")
    # requests = commands/s × seconds / commands per request; a tick is 1/CLK_TCK s.
    cpu=$(python3 -c "print(f'{($after-$before)/$(getconf CLK_TCK)*1e6/($g*$CELL/$depth):.1f}')")
    label="EVALSHA"; [ "$mode" = pipeline16 ] && label="/pipeline of 16 EVALSHA (raw: -P 16)"
    printf '| %s | %d | %.0f | %.0f | %s | %s |\n' "$label" "$c" "$g" "$r" "$ratio" "$cpu"
  done
done

[ "${CLUSTER:-1}" = 0 ] && exit 0

# A Redis Cluster of three masters and three replicas, the same ACL user on every node, and a second
# gateway in front of it.
CPORTS=()
for _ in 1 2 3 4 5 6; do
  port=$(free_cluster_port)
  CPORTS+=("$port")
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --cluster-enabled yes \
    --cluster-config-file "$CLUSTER_DIR/nodes-$port.conf" --dir "$CLUSTER_DIR" >/dev/null &
  PIDS+=($!)
done
for port in "${CPORTS[@]}"; do
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
done
redis-cli --cluster create $(printf '127.0.0.1:%s ' "${CPORTS[@]}") --cluster-replicas 1 --cluster-yes >/dev/null
for port in "${CPORTS[@]}"; do
  for _ in $(seq 200); do redis-cli -p "$port" cluster info | grep -q 'cluster_state:ok' && break; sleep 0.05; done
  [ "$(redis-cli -p "$port" ACL SETUSER gateway "${ACL_RULES[@]}")" = OK ] || { echo "ACL SETUSER gateway failed" >&2; exit 1; }
  redis-cli -p "$port" script load "$SCRIPT" >/dev/null
done
CGPORT=$(free_port)
"$GATEWAY" --listen "127.0.0.1:$CGPORT" --token "$TOKEN" \
  --redis-cluster "$(printf 'redis://gateway:bench@127.0.0.1:%s,' "${CPORTS[@]}" | sed 's/,$//')" &
PIDS+=($!)
wait_healthz "$CGPORT"

echo
echo "#### One redis-server beside a Redis Cluster (3 masters, 3 replicas, \`--redis-cluster\`), through the gateway"
echo
echo "| workload (decisions: one fixed-window EVALSHA each) | clients | one redis-server decisions/s | Redis Cluster decisions/s | cluster / one |"
echo "|---|---:|---:|---:|---:|"
for mode in single pipeline16; do
  for c in 1 16 64; do
    one=$("$LOAD" "http://127.0.0.1:$GPORT" "$TOKEN" "$SHA" "$mode" "$c" "$CELL")
    cluster=$("$LOAD" "http://127.0.0.1:$CGPORT" "$TOKEN" "$SHA" "$mode" "$c" "$CELL")
    ratio=$(python3 -c "print(f'{$cluster/$one:.2f}×')")
    label="EVALSHA"; [ "$mode" = pipeline16 ] && label="/pipeline of 16 EVALSHA"
    printf '| %s | %d | %.0f | %.0f | %s |\n' "$label" "$c" "$one" "$cluster" "$ratio"
  done
done
