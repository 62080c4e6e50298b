#!/usr/bin/env bash
# bench-cluster.sh measures a local 3-node RF 3 cluster of real processes
# with `shale workload` (KeyValue, 64-byte values): 64 writers, then 64
# readers, then 1 writer, each for $DURATION (default 20s), and prints the
# JSON summaries. Nothing fails on a slow machine. Uses base dir
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
run() {
	echo "## $1"
	shift
	"$bin" workload --nodes "$nodes" --num-unique-keys 200000 --value-size 64 --num-tablets 6 \
		--duration "$DURATION" --report-every 5s --json-summary "$@" | tail -1
}
run "64 writers" --num-threads-write 64 --num-threads-read 0
run "64 readers" --num-threads-write 0 --num-threads-read 64
run "1 writer" --num-threads-write 1 --num-threads-read 0
run "1 reader" --num-threads-write 0 --num-threads-read 1
