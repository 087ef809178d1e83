#!/usr/bin/env bash
# Runs a command beside a throw-away redis-server, the edgelimit gateway in front of it, and a
# "black hole" TCP server that accepts connections and never answers. The gateway connects as the
# Redis ACL user of gateway/README.md ("Redis ACL", rules read from there), as operators run it.
#
#   bash scripts/with_gateway.sh wasm-pack test --node
#
# The command sees:
#   EDGELIMIT_TEST_URL            the gateway, e.g. http://127.0.0.1:40123
#   EDGELIMIT_TEST_TOKEN          its read-write token
#   EDGELIMIT_TEST_CLOSED_URL     a loopback port nobody listens on
#   EDGELIMIT_TEST_BLACKHOLE_URL  the black hole
#   EDGELIMIT_GATEWAY_BIN         the gateway binary, for tests that run their own
# Everything started here is stopped on exit; the exit status is the command's. With
# EDGELIMIT_GATEWAY_BIN already set (make bench: a release build), that gateway runs instead of a debug
# build of the workspace's.
set -euo pipefail

if [[ $# -eq 0 ]]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi

cd "$(dirname "$0")/.."
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"

say() { echo "with_gateway: $*" >&2; }

pids=()
workdir="$(mktemp -d)"
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Waits until `check` succeeds, or fails after about 15 s, showing the service's log.
wait_for() {
    local what="$1" log="$2" pid="$3"
    shift 3
    for _ in $(seq 150); do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            say "$what exited early:"
            cat "$log" >&2
            exit 1
        fi
        sleep 0.1
    done
    say "$what did not come up within 15 s:"
    cat "$log" >&2
    exit 1
}

# Free loopback ports: bound to port 0 at once (so they differ), then released.
read -r redis_port gateway_port closed_port blackhole_port < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
for s in socks:
    s.close()
EOF
)

if [[ -n "${EDGELIMIT_GATEWAY_BIN:-}" ]]; then
    gateway_bin="$EDGELIMIT_GATEWAY_BIN"
else
    say "building the gateway"
    cargo build -q -p edgelimit-gateway
    gateway_bin="$target_dir/debug/edgelimit-gateway"
fi

redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$workdir" >"$workdir/redis.log" 2>&1 &
pids+=($!)
wait_for redis-server "$workdir/redis.log" "$!" \
    bash -c "[[ \"\$(redis-cli -p $redis_port ping)\" == PONG ]]"

# The README's `ACL SETUSER gateway on >PASSWORD …` line, with a password of this run.
acl_line="$(sed -n 's/^ACL SETUSER gateway //p' gateway/README.md | head -n 1)"
if [[ -z "$acl_line" ]]; then
    say "gateway/README.md has no 'ACL SETUSER gateway …' line"
    exit 1
fi
acl_password="edgelimit-acl-$RANDOM$RANDOM"
read -r -a acl_rules <<<"${acl_line/>PASSWORD/>$acl_password}"
acl_reply="$(redis-cli -p "$redis_port" ACL SETUSER gateway "${acl_rules[@]}")"
if [[ "$acl_reply" != OK ]]; then
    say "ACL SETUSER gateway failed: $acl_reply"
    exit 1
fi

token="edgelimit-test-$RANDOM$RANDOM"
"$gateway_bin" --listen "127.0.0.1:$gateway_port" \
    --redis "redis://gateway:$acl_password@127.0.0.1:$redis_port" \
    --token "$token" >"$workdir/gateway.log" 2>&1 &
pids+=($!)
wait_for edgelimit-gateway "$workdir/gateway.log" "$!" \
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$gateway_port/healthz', timeout=1)"

# Accepts every connection and keeps it open, reading and discarding, never answering.
python3 -u - "$blackhole_port" >"$workdir/blackhole.log" 2>&1 <<'EOF' &
import selectors, socket, sys
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen(128)
listener.setblocking(False)
sel = selectors.DefaultSelector()
sel.register(listener, selectors.EVENT_READ)
print("listening", flush=True)
while True:
    for key, _ in sel.select():
        if key.fileobj is listener:
            conn, _ = listener.accept()
            conn.setblocking(False)
            sel.register(conn, selectors.EVENT_READ)
        else:
            try:
                data = key.fileobj.recv(65536)
            except OSError:
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                key.fileobj.close()
EOF
pids+=($!)
wait_for blackhole "$workdir/blackhole.log" "$!" grep -q listening "$workdir/blackhole.log"

export EDGELIMIT_TEST_URL="http://127.0.0.1:$gateway_port"
export EDGELIMIT_TEST_TOKEN="$token"
export EDGELIMIT_TEST_CLOSED_URL="http://127.0.0.1:$closed_port"
export EDGELIMIT_TEST_BLACKHOLE_URL="http://127.0.0.1:$blackhole_port"
export EDGELIMIT_GATEWAY_BIN="$gateway_bin"
say "gateway $EDGELIMIT_TEST_URL (redis on $redis_port), black hole on $blackhole_port"

# A wasm-bindgen test suite without `wasm_bindgen_test_configure!(run_in_browser)` runs in Node
# unless the runner is told otherwise: with a browser flag, ask for the browser.
for arg in "$@"; do
    case "$arg" in
        --chrome | --firefox | --safari) export WASM_BINDGEN_USE_BROWSER="${WASM_BINDGEN_USE_BROWSER:-1}" ;;
    esac
done

status=0
"$@" || status=$?
if [[ $status -ne 0 ]]; then
    say "command failed ($status); gateway log:"
    tail -n 20 "$workdir/gateway.log" >&2 || true
fi
exit "$status"
