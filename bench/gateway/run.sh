#!/usr/bin/env bash
# Gateway throughput vs. raw Redis (redis-benchmark) for the same EVALSHA script, same Redis,
# same run. Prints a markdown table. Loopback only; every cell runs SECONDS seconds.
#
#   bench/gateway/run.sh            # SECONDS=3 by default
#   SECONDS_PER_CELL=5 bench/gateway/run.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CELL="${SECONDS_PER_CELL:-3}"
TOKEN="bench-token"

for tool in redis-server redis-benchmark redis-cli cargo; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install redis-server)" >&2; exit 1; }
done

GATEWAY="$(bash "$ROOT/bench/gateway/build.sh")"
LOAD="$(dirname "$GATEWAY")/examples/load"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
RPORT=$(free_port)
GPORT=$(free_port)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
PIDS+=($!)
for _ in $(seq 100); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
# The gateway connects as the Redis ACL user of gateway/README.md, as operators run it.
read -r -a ACL_RULES <<<"$(sed -n 's/^ACL SETUSER gateway //p' "$ROOT/gateway/README.md" | head -n 1 | sed 's/>PASSWORD/>bench/')"
[ "$(redis-cli -p "$RPORT" ACL SETUSER gateway "${ACL_RULES[@]}")" = OK ] || { echo "ACL SETUSER gateway failed" >&2; exit 1; }
"$GATEWAY" --listen "127.0.0.1:$GPORT" --redis "redis://gateway:bench@127.0.0.1:$RPORT" --token "$TOKEN" &
PIDS+=($!)
for _ in $(seq 100); do python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "http://127.0.0.1:$GPORT/healthz" >/dev/null 2>&1 && break; sleep 0.05; done

# A fixed-window step like @upstash/ratelimit's: INCR, set the TTL on first use.
SCRIPT="local c = redis.call('INCR', KEYS[1]) if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return c"
SHA=$(redis-cli -p "$RPORT" script load "$SCRIPT")

raw() { # concurrency pipeline -> commands/s
  local n=$(( $1 * 20000 * $2 )); [ "$n" -gt 1000000 ] && n=1000000
  redis-benchmark -p "$RPORT" -c "$1" -P "$2" -n "$n" --csv evalsha "$SHA" 1 bench:raw 60000 \
    | tail -1 | cut -d, -f2 | tr -d '"'
}

echo "| workload | clients | gateway cmd/s | raw redis cmd/s | gateway/raw |"
echo "|---|---:|---:|---:|---:|"
for mode in single pipeline16; do
  depth=1; [ "$mode" = pipeline16 ] && depth=16
  for c in 1 16 64; do
    g=$("$LOAD" "http://127.0.0.1:$GPORT" "$TOKEN" "$SHA" "$mode" "$c" "$CELL")
    r=$(raw "$c" "$depth")
    ratio=$(python3 -c "print(f'{$g/$r:.0%}')")
    label="EVALSHA"; [ "$mode" = pipeline16 ] && label="/pipeline of 16 EVALSHA (raw: -P 16)"
    printf '| %s | %d | %.0f | %.0f | %s |\n' "$label" "$c" "$g" "$r" "$ratio"
  done
done
