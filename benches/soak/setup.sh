# Sourced by the scripts of this folder, from the checkout's root: builds the release binaries and
# sets B (their folder), S (this folder), d (a scratch folder, removed on exit, holding the
# full-size cluster as $d/cluster.json) and pids (processes to kill on exit).
cargo build --release --quiet
B=$PWD/target/release
S=$PWD/benches/soak
d=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$d"; }
trap cleanup EXIT
python3 "$S/cluster.py" "$d/cluster.json"
