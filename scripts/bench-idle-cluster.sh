#!/usr/bin/env bash
# bench-idle-cluster.sh: a local 3-node RF 3 cluster of processes with one
# table of $TABLETS tablets (default 4000; 12,000 replicas), left idle:
# reports the CREATE TABLE time, then over a 10 s window the frames and raft
# messages the nodes send (from /metrics) and the CPU the node processes use
# (from /proc). Uses the standard ports on 127.0.0.1-3.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TABLETS=${TABLETS:-4000}
tmp=$(mktemp -d)
BASE=$tmp/cluster
bin=$tmp/shale
trap '"$bin" cluster destroy --base-dir "$BASE" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
echo "# ShaleDB idle cluster, $TABLETS tablets RF 3, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)"
echo "# load $(cut -d' ' -f1-3 /proc/loadavg) before"
$GO build -o "$bin" ./cmd/shale
"$bin" cluster create --nodes 3 --rf 3 --base-dir "$BASE" >/dev/null
start=$(date +%s.%N)
"$bin" workload --nodes 127.0.0.1 --table idle --num-tablets "$TABLETS" --num-threads-write 1 --num-threads-read 0 \
	--num-unique-keys 1 --duration 1s --report-every 1h >/dev/null
echo "create table + 1 s of one writer: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
sum_metric() { # metric name -> sum over the three nodes
	for i in 1 2 3; do curl -s "http://127.0.0.$i:7000/metrics"; done | awk -v m="$1" '$1 == m {s += $2} END {printf "%.0f", s}'
}
cpu_ticks() { # utime+stime of the node processes, in clock ticks
	local t=0
	for p in $(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "$BASE/cluster.json"); do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo $t
}
# Let everything quiesce: wait until no raft message is sent for 2 s.
prev=$(sum_metric shale_raft_messages_sent_total)
for _ in $(seq 1 60); do
	sleep 2
	cur=$(sum_metric shale_raft_messages_sent_total)
	[ "$cur" = "$prev" ] && break
	prev=$cur
done
f0=$(sum_metric shale_transport_frames_sent_total); m0=$(sum_metric shale_transport_messages_sent_total); c0=$(cpu_ticks)
sleep 10
f1=$(sum_metric shale_transport_frames_sent_total); m1=$(sum_metric shale_transport_messages_sent_total); c1=$(cpu_ticks)
hz=$(getconf CLK_TCK)
echo "idle over 10 s: $(( (f1 - f0) / 10 )) frames/s, $(( (m1 - m0) / 10 )) raft msgs/s between the nodes, $(awk -v d=$((c1 - c0)) -v hz="$hz" 'BEGIN {printf "%.2f", d * 100 / hz / 10}')% of one core for the three node processes"
