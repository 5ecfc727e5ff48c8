#!/usr/bin/env bash
# Conformance suite: the official Python client and kubectl against the
# kube-sim binary. Creates a venv under target/ (once), installs the pinned
# requirements, builds kube-sim (debug) unless KUBE_SIM names one, and runs
# pytest.
#   crates/kube-sim/tests/conformance/run.sh [pytest args...]
set -euo pipefail
crate="$(cd "$(dirname "$0")/../.." && pwd)"
root="$(cd "$crate/../.." && pwd)"
venv="$root/target/conformance-venv"
req="$crate/tests/requirements.txt"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
stamp="$venv/.requirements.sha"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
fi
# `cargo test` (tests/it/transport_conformance.rs) passes the kube-sim it
# built as KUBE_SIM; run by hand, build it here.
if [ -z "${KUBE_SIM:-}" ]; then
  (cd "$root" && cargo build --quiet --bin kube-sim)
  export KUBE_SIM="$root/target/debug/kube-sim"
fi
cd "$crate/tests/conformance"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
