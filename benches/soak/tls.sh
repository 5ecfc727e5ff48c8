#!/usr/bin/env bash
# What TLS costs endpointd: the full-size cluster (cluster.py) served by kube-sim over plain HTTP and
# over TLS (kube-sim's own CA in the kubeconfig, verified; a bearer token), ROUNDS runs of each,
# interleaved. Each run: endpointd synced and converged (8 s), then FLIPS readiness flips at 100 a
# second (flip.py). Reports endpointd's RSS loaded and after the flips, its CPU per 1,000 flips and
# its sockets; fails if endpointd logged anything at warn. Not run in CI. Prints a JSON summary last.
#   bash benches/soak/tls.sh [ROUNDS] [FLIPS]   (defaults 3, 2000)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
flips=${2:-2000}
. benches/soak/setup.sh
hz=$(getconf CLK_TCK)
one() { # one run of MODE (plain|tls); prints "loaded_kib steady_kib cpu_ms_per_1000 sockets"
  local mode=$1
  local args=(--listen 127.0.0.1:0 --history 1000000 --load "$d/cluster.json"
    --kubeconfig-out "$d/kc-$mode" --token "tok-$RANDOM$RANDOM")
  [ "$mode" = tls ] && args+=(--tls)
  rm -f "$d/kc-$mode" "$d/sim.out"
  "$B/kube-sim" "${args[@]}" >"$d/sim.out" 2>/dev/null &
  local sp=$!
  pids+=("$sp")
  for _ in $(seq 150); do [ -s "$d/sim.out" ] && [ -s "$d/kc-$mode" ] && break; sleep 0.2; done
  printf '[kubernetes]\nkubeconfig = "%s"\nqps = 1000.0\nburst = 2000\n[leader_election]\nidentity = "tls-bench"\n[server]\nlisten = ""\n[log]\nlevel = "warn"\n' \
    "$d/kc-$mode" >"$d/ed.toml"
  "$B/endpointd" run --config "$d/ed.toml" >"$d/ed.out" 2>&1 &
  local ep=$!
  pids+=("$ep")
  sleep 8
  local r0 c0 c1 r1 socks
  r0=$(awk '/VmRSS/{print $2}' "/proc/$ep/status")
  c0=$(awk '{print $14 + $15}' "/proc/$ep/stat")
  python3 "$S/flip.py" "$d/kc-$mode" "$flips" 100 >/dev/null
  sleep 2
  c1=$(awk '{print $14 + $15}' "/proc/$ep/stat")
  r1=$(awk '/VmRSS/{print $2}' "/proc/$ep/status")
  socks=$(find "/proc/$ep/fd" -lname 'socket:*' | wc -l)
  kill -TERM "$ep"; wait "$ep" || true
  # endpointd logs at warn: anything it logged (a refused certificate or
  # token, a failed write) makes the run's figures meaningless.
  if grep -q . "$d/ed.out"; then
    echo "endpointd ($mode) logged:" >&2; head -5 "$d/ed.out" >&2; exit 1
  fi
  kill "$sp"; wait "$sp" 2>/dev/null || true
  echo "$r0 $r1 $(( (c1 - c0) * 1000 * 1000 / hz / flips )) $socks"
}
plain=(); tls=()
for _ in $(seq "$rounds"); do
  plain+=("$(one plain)"); echo "plain: ${plain[-1]}" >&2
  tls+=("$(one tls)"); echo "tls:   ${tls[-1]}" >&2
done
json() { # the runs of one mode as a JSON object of arrays
  printf '%s\n' "$@" | python3 -c 'import json, sys
rows = [list(map(int, l.split())) for l in sys.stdin if l.strip()]
keys = ["loaded_kib", "steady_kib", "cpu_ms_per_1000_flips", "sockets"]
print(json.dumps({k: [r[i] for r in rows] for i, k in enumerate(keys)}))'
}
echo "{\"flips\":$flips,\"plain\":$(json "${plain[@]}"),\"tls\":$(json "${tls[@]}")}"
