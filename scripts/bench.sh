#!/usr/bin/env bash
# bench.sh runs the storage and replication benchmarks (internal/tablet,
# bench_test.go) with fixed settings and prints a table against the targets.
# Self-contained: builds the test binary, runs each benchmark once, takes
# about 2-4 minutes. Nothing fails on a slow machine; missed targets are
# reported, not fatal. The raw `go test` output is kept in $BENCH_OUT
# (default: a temporary file) for benchstat.
#
#   scripts/bench.sh              # everything
#   BENCH=LeaderRead scripts/bench.sh   # only benchmarks matching a regexp
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=${BENCH_OUT:-$tmp/raw.txt}
: >"$raw"
only=${BENCH:-.}

echo "# ShaleDB core benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# commit  $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
echo "# cpus    $(nproc) x $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
echo "# memory  $(free -g 2>/dev/null | awk '/^Mem:/{print $2 " GiB"}')   kernel $(uname -r)   $($GO version | cut -d' ' -f3)"
echo "# load    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) before the run"
echo

$GO test -c -o "$tmp/tablet.test" ./internal/tablet/

# name, -benchtime: writes and reads per client count; the idle window is
# 10 s; three snapshot transfers.
for spec in ReplicatedWrite:5s LeaderRead:3s IdleMultiRaft:10s SnapshotTransfer:3x; do
	name=${spec%%:*} benchtime=${spec#*:}
	[[ $name =~ $only ]] || continue
	echo "running Benchmark$name (-benchtime $benchtime) ..." >&2
	(cd internal/tablet && "$tmp/tablet.test" -test.run '^$' -test.bench "^Benchmark$name\$" \
		-test.benchtime "$benchtime" -test.timeout 15m -test.v) >"$tmp/out.txt" 2>&1 || {
		cat "$tmp/out.txt" >&2
		echo "Benchmark$name failed" >&2
		exit 1
	}
	grep -E '^(Benchmark|goos|goarch|pkg|cpu)|bench_test.go' "$tmp/out.txt" >>"$raw" || true
done
echo "# load    $(cut -d' ' -f1-3 /proc/loadavg) after the run"
echo

awk '
function metric(u) { return (u in m) ? m[u] : "" }
function row(name, figure, target, ok) {
	printf "%-34s %-44s %-24s %s\n", name, figure, target, ok
}
/^Benchmark.* ns\/op/ {
	delete m
	for (i = 3; i < NF; i += 2) m[$(i+1)] = $i
	name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
	if (name ~ /^ReplicatedWrite/) {
		fig = sprintf("%8.0f ops/s  avg %.3f ms  p99 %.2f ms", metric("ops/s"), metric("avg-ms/op"), metric("p99-ms"))
		if (name ~ /writers=64$/) row(name, fig, ">= 10,000 ops/s", metric("ops/s") >= 10000 ? "ok" : "MISSED")
		else if (name ~ /writers=1$/) row(name, fig, "avg < 1 ms", metric("avg-ms/op") < 1 ? "ok" : "MISSED")
		else row(name, fig, "", "")
	} else if (name ~ /^LeaderRead/) {
		fig = sprintf("%8.0f ops/s  avg %.3f ms  p99 %.2f ms", metric("ops/s"), metric("avg-ms/op"), metric("p99-ms"))
		if (name ~ /readers=64$/) row(name, fig, ">= 50,000 ops/s", metric("ops/s") >= 50000 ? "ok" : "MISSED")
		else row(name, fig, "", "")
	} else if (name ~ /^IdleMultiRaft/) {
		row(name " (4000 tablets)", sprintf("%.1f frames/s, %.1f raft msgs/s", metric("frames/s"), metric("msgs/s")), "<= 100 msgs/s", (metric("frames/s") <= 100 && metric("msgs/s") <= 100) ? "ok" : "MISSED")
		row("", sprintf("%.2f%% of one core", metric("cpu-%")), "< 5% of a core", metric("cpu-%") < 5 ? "ok" : "MISSED")
		row("", sprintf("%.3f goroutines, %.1f KB heap per tablet", metric("goroutines/tablet"), metric("heap-KB/tablet")), "(report)", "")
		row("", sprintf("%.1f%% of replicas quiesced", metric("quiesced-%")), "100%", metric("quiesced-%") >= 100 ? "ok" : "MISSED")
	} else if (name ~ /^SnapshotTransfer/) {
		row(name " (100k rows)", sprintf("%.1f MB/s, %.0f keys/s, %.1f MB", metric("MB/s"), metric("keys/s"), metric("MB/snapshot")), "(report)", "")
	}
}
BEGIN { row("benchmark", "figure", "target", "") ; row("---------", "------", "------", "") }
' "$raw"
