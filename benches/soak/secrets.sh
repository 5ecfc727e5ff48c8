#!/usr/bin/env bash
# Usage, from the checkout's root: bash benches/soak/secrets.sh   (not in CI; ~1 minute)
# Whether any secret reaches endpointd's log at the loudest level, dependencies included
# (RUST_LOG=trace,ureq=trace,ureq_proto=trace): kube-sim with the full-size cluster and a bearer
# token, a kubeconfig whose server URL carries a password; then a readiness flip, every watch
# dropped, a 3 s outage and a 3 s proxy (502) outage. endpointd believes it runs under systemd
# ($JOURNAL_STREAM names its stderr), so it also writes journal records, to a stand-in for
# journald bound at its socket (skipped where a real journald owns it). Counts every 8-character
# piece of either secret in the log and in the journal records; the JSON line last; exit 1 on any
# hit, if the outages went unnoticed, or if no journal record named a Service.
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
J=/run/systemd/journal/socket
journal=0
if [ ! -e "$J" ]; then
  mkdir -p "$(dirname "$J")"
  python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "wb") as f:
    while True:
        f.write(s.recv(1 << 18) + b"\n\x1e\n")
        f.flush()' "$J" "$d/journal.bin" &
  pids+=($!)
  for _ in $(seq 50); do [ -S "$J" ] && break; sleep 0.1; done
  journal=1
  trap 'cleanup; rm -f "$J"' EXIT
else
  echo "a journald owns $J here: the journal part is skipped" >&2
fi
: > "$d/ed.log"
JOURNAL_STREAM=$(stat -c '%d:%i' "$d/ed.log") RUST_LOG=trace,ureq=trace,ureq_proto=trace \
  "$B/endpointd" run --config "$d/ed.toml" >> "$d/ed.log" 2>&1 &
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
touch "$d/journal.bin"
hits=0
for s in "$TOKEN" "$PASS"; do
  for ((i = 0; i + 8 <= ${#s}; i++)); do
    hits=$((hits + $({ grep -a -c -F -- "${s:i:8}" "$d/ed.log" "$d/journal.bin" || true; } | awk -F: '{n += $NF} END {print n + 0}')))
  done
done
lines=$(wc -l < "$d/ed.log")
records=$(grep -a -c '^PRIORITY=' "$d/journal.bin" || true)
named=$(grep -a -c '^ENDPOINTD_SERVICE=' "$d/journal.bin" || true)
returns=$(cat "$d/ed.log" "$d/journal.bin" | grep -a -c 'answers again' || true)
echo "log lines: $lines; journal records: $records ($named naming a Service); the server's returns noticed: $returns; secret pieces found: $hits"
echo "{\"log_lines\":$lines,\"journal_records\":$records,\"journal_service_records\":$named,\"returns\":$returns,\"secret_hits\":$hits}"
[ "$hits" -eq 0 ] && [ "$returns" -ge 2 ] && { [ "$journal" -eq 0 ] || [ "$named" -gt 0 ]; }
