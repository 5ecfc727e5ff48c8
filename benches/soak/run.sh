#!/usr/bin/env bash
# Soak: endpointd (release) against a kube-sim on loopback with the e2e bench's full-size cluster,
# MINUTES of lifecycle churn (soak.py), then every soak pod deleted again. Reports the RSS over time,
# whether every Service is exact (check.py), and glibc's in-use heap of the soaked process against a
# fresh one on the same cluster (needs gdb; a per-change leak shows as the difference growing with
# MINUTES). Not run in CI. Prints a JSON summary last.
#   bash benches/soak/run.sh [MINUTES]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/../.."
minutes=${1:-10}
. benches/soak/setup.sh
"$B/kube-sim" --listen 127.0.0.1:0 --load "$d/cluster.json" --kubeconfig-out "$d/kc" >"$d/sim.out" 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do [ -s "$d/sim.out" ] && [ -s "$d/kc" ] && break; sleep 0.2; done
url=$(cat "$d/sim.out")
cat >"$d/ed.toml" <<EOT
[kubernetes]
kubeconfig = "$d/kc"
qps = 1000.0
burst = 2000
[leader_election]
identity = "soak"
[log]
level = "warn"
[server]
listen = "127.0.0.1:0"
EOT
start() {
  "$B/endpointd" run --config "$d/ed.toml" >"$d/ed-$1.out" 2>&1 &
  pids+=($!)
  echo $! >"$d/ed.pid"
  sleep 8
}
in_use() { # glibc's in-use heap bytes of PID (empty without gdb)
  command -v gdb >/dev/null || return 0
  gdb -p "$1" -batch -ex 'call (void)malloc_stats()' >/dev/null 2>&1 || return 0
  sleep 0.2
  grep 'in use bytes' "$2" | tail -1 | awk '{print $NF}'
}
rss() { awk '/VmRSS/{print $2}' "/proc/$1/status"; }
start soaked
ep=$(cat "$d/ed.pid")
rss_start=$(rss "$ep")
python3 "$S/soak.py" "$url" "$minutes" "$ep" | tee "$d/soak.out"
python3 - "$url" <<'PY'
import json, sys, urllib.request
u = sys.argv[1]
for p in json.load(urllib.request.urlopen(u + "/api/v1/namespaces/bench/pods"))["items"]:
    n = p["metadata"]["name"]
    if n.startswith("soak"):
        urllib.request.urlopen(urllib.request.Request(
            u + "/api/v1/namespaces/bench/pods/" + n + "?gracePeriodSeconds=0", method="DELETE")).read()
PY
sleep 5
exact=true
python3 "$S/check.py" "$url" || exact=false
soaked_rss=$(rss "$ep")
soaked_heap=$(in_use "$ep" "$d/ed-soaked.out")
kill -TERM "$ep"; sleep 3
start fresh
ep=$(cat "$d/ed.pid")
fresh_rss=$(rss "$ep")
fresh_heap=$(in_use "$ep" "$d/ed-fresh.out")
kill -TERM "$ep"
changes=$(awk '/^done/{print $3}' "$d/soak.out")
echo "{\"minutes\":$minutes,\"changes\":${changes:-0},\"exact\":$exact,\"rss_kib\":{\"start\":$rss_start,\"soaked\":$soaked_rss,\"fresh\":$fresh_rss},\"heap_in_use_bytes\":{\"soaked\":${soaked_heap:-null},\"fresh\":${fresh_heap:-null}}}"
$exact
