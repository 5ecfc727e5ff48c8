#!/usr/bin/env bash
# Usage, from the checkout's root: bash benches/soak/secrets.sh   (not in CI; ~1 minute)
# Whether any secret reaches endpointd's log at the loudest level, dependencies included
# (RUST_LOG=trace,ureq=trace,ureq_proto=trace): kube-sim with the full-size cluster and a bearer
# token, a kubeconfig whose server URL carries a password; then a readiness flip, every watch
# dropped, a 3 s outage and a 3 s proxy (502) outage. Counts every 8-character piece of either
# secret in the log; the JSON line last; exit 1 on any hit or if the outages went unnoticed.
set -euo pipefail
. benches/soak/setup.sh
TOKEN="tok-$(head -c 24 /dev/urandom | base64 | tr -dc a-zA-Z0-9)"
PASS="pw-$(head -c 24 /dev/urandom | base64 | tr -dc a-zA-Z0-9)"
"$B/kube-sim" --listen 127.0.0.1:0 --token "$TOKEN" --load "$d/cluster.json" \
  --kubeconfig-out "$d/kc" > "$d/sim.out" 2>/dev/null &
pids+=($!)
for _ in $(seq 150); do [ -s "$d/sim.out" ] && [ -s "$d/kc" ] && break; sleep 0.2; done
url=$(cat "$d/sim.out")
sed -i -E "s#server: (\"?)http://#server: \1http://alice:$PASS@#" "$d/kc"
grep -q "alice:$PASS@" "$d/kc" || { echo "the kubeconfig's server URL was not rewritten" >&2; exit 1; }
printf '[kubernetes]\nkubeconfig = "%s"\n[leader_election]\nidentity = "secrets"\n[server]\nlisten = ""\n' \
  "$d/kc" > "$d/ed.toml"
RUST_LOG=trace,ureq=trace,ureq_proto=trace "$B/endpointd" run --config "$d/ed.toml" > "$d/ed.log" 2>&1 &
ep=$!
pids+=($ep)
sleep 15
H="Authorization: Bearer $TOKEN"
fault() { curl -s -o /dev/null -H "$H" -H "Content-Type: application/json" -X POST --data "$1" "$url/sim/faults"; }
curl -s -H "$H" "$url/api/v1/namespaces/bench/pods/p-7" | python3 -c '
import json, sys
p = json.load(sys.stdin)
c = p["status"]["conditions"][0]
c["status"] = "False" if c["status"] == "True" else "True"
print(json.dumps(p))' > "$d/p.json"
curl -s -o /dev/null -H "$H" -H "Content-Type: application/json" -X PUT --data @"$d/p.json" \
  "$url/api/v1/namespaces/bench/pods/p-7/status"
sleep 2
fault '{"closeAllWatches": true}'
sleep 3
fault '{"outageMs": 3000}'
sleep 8
fault '{"gatewayOutageMs": 3000}'
sleep 10
kill "$ep"; wait "$ep" || true
hits=0
for s in "$TOKEN" "$PASS"; do
  for ((i = 0; i + 8 <= ${#s}; i++)); do
    hits=$((hits + $(grep -c -F -- "${s:i:8}" "$d/ed.log" || true)))
  done
done
lines=$(wc -l < "$d/ed.log")
returns=$(grep -c 'answers again' "$d/ed.log" || true)
echo "log lines: $lines; the server's returns noticed: $returns; secret pieces found: $hits"
echo "{\"log_lines\":$lines,\"returns\":$returns,\"secret_hits\":$hits}"
[ "$hits" -eq 0 ] && [ "$returns" -ge 2 ]
