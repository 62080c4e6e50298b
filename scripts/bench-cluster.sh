#!/usr/bin/env bash
# bench-cluster.sh measures a local 3-node RF 3 cluster of real processes
# with `shale workload` (KeyValue, 64-byte values): 64 writers, then 64
# readers, then 1 writer, each for $DURATION (default 20s), and prints the
# JSON summaries with the node and client CPU per operation; each run
# starts once the nodes are idle. Nothing fails on a slow machine. Uses base dir
# $BASE (default a temporary dir) and the standard ports on 127.0.0.1-3.
#
#   scripts/bench-cluster.sh
#   DURATION=60s scripts/bench-cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DURATION=${DURATION:-20s}
tmp=$(mktemp -d)
BASE=${BASE:-$tmp/cluster}
bin=$tmp/shale
trap '"$bin" cluster destroy --base-dir "$BASE" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

echo "# ShaleDB cluster benchmarks (shale workload), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# commit  $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
echo "# cpus    $(nproc) x $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
echo "# load    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) before the run"
$GO build -o "$bin" ./cmd/shale
"$bin" cluster create --nodes 3 --rf 3 --base-dir "$BASE" >/dev/null
nodes=127.0.0.1:7100,127.0.0.2:7100,127.0.0.3:7100
# node_cpu prints the CPU seconds the three node processes have used.
node_cpu() {
	for i in 1 2 3; do
		curl -s "http://127.0.0.$i:7000/metrics" | awk '/^process_cpu_seconds_total/ {print $2}'
	done | awk '{s += $1} END {printf "%.3f\n", s}'
}
# settle waits (up to 90 s) until the nodes are idle (under 0.1 core for
# 2 s): the flushes, compactions and applies a run leaves behind would
# otherwise run inside the next one and make its figures depend on the
# order of the runs.
settle() {
	local i a b
	for ((i = 0; i < 45; i++)); do
		a=$(node_cpu)
		sleep 2
		b=$(node_cpu)
		if [ "$(echo "($b - $a) / 2 < 0.1" | bc -l)" = 1 ]; then
			return
		fi
	done
	echo "# nodes still busy after 90 s"
}
# run prints the workload's JSON summary and the CPU each operation cost
# the nodes and the workload client (microseconds of user + system time).
run() {
	echo "## $1"
	shift
	settle
	local c0 c1 out timer=()
	echo "0 0" >"$tmp/time"
	[ -x /usr/bin/time ] && timer=(/usr/bin/time -f "%U %S" -o "$tmp/time")
	c0=$(node_cpu)
	out=$("${timer[@]}" "$bin" workload --nodes "$nodes" --num-unique-keys 200000 \
		--value-size 64 --num-tablets 6 --duration "$DURATION" --report-every 5s --json-summary "$@" | tail -1)
	c1=$(node_cpu)
	echo "$out"
	python3 - "$out" "$c0" "$c1" "$(cat "$tmp/time")" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
ops = d["read"]["ops"] + d["write"]["ops"]
user, system = (float(x) for x in sys.argv[4].split()[-2:])
if ops:
    client = "%.1f us" % ((user + system) / ops * 1e6) if user + system > 0 else "? (no /usr/bin/time)"
    print("# cpu per op: nodes %.1f us, client %s" % ((float(sys.argv[3]) - float(sys.argv[2])) / ops * 1e6, client))
PY
}
run "64 writers" --num-threads-write 64 --num-threads-read 0
run "64 readers" --num-threads-write 0 --num-threads-read 64
run "1 writer" --num-threads-write 1 --num-threads-read 0
run "1 reader" --num-threads-write 0 --num-threads-read 1
