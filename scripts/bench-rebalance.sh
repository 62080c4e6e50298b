#!/usr/bin/env bash
# bench-rebalance.sh: load about $DATA_MB MB (default 1024) into a local
# 3-node RF 3 cluster of processes with `shale workload` (4 KiB values),
# then add a fourth node and time how long the balancer takes to move a
# quarter of the replicas to it; reports MB/s of data moved (from the new
# node's data size in list-tservers). Uses the standard ports on
# 127.0.0.1-4. Takes several minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DATA_MB=${DATA_MB:-1024}
TABLETS=${TABLETS:-12}
tmp=$(mktemp -d)
BASE=$tmp/cluster
bin=$tmp/shale
trap '"$bin" cluster destroy --base-dir "$BASE" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
echo "# ShaleDB rebalance after add-node, ${DATA_MB} MB, $TABLETS tablets RF 3, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)"
$GO build -o "$bin" ./cmd/shale
"$bin" cluster create --nodes 3 --rf 3 --base-dir "$BASE" >/dev/null
keys=$((DATA_MB * 256)) # 4 KiB values
start=$(date +%s)
# Writers cover every key once, then stop at the deadline.
"$bin" workload --nodes 127.0.0.1 --num-tablets "$TABLETS" --num-threads-write 32 --num-threads-read 0 \
	--num-unique-keys "$keys" --value-size 4096 --duration 1h --report-every 2s --json-summary >"$tmp/load.out" &
wl=$!
masters=127.0.0.1:7100
written() { grep -o 'Write: [^|]*total ops' "$tmp/load.out" | tail -1 | sed -n 's/.*, \([0-9]*\) total ops/\1/p'; }
total_bytes() { "$bin" admin --master-addrs $masters list-tservers --json | tr ',' '\n' | sed -n 's/.*"data_bytes": *\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}'; }
# Stop the load once every key has been written once (DATA_MB of values).
while :; do
	w=$(written || true)
	[ "${w:-0}" -ge "$keys" ] && break
	sleep 2
done
kill -INT $wl; wait $wl || true
echo "loaded $keys values of 4 KiB in $(( $(date +%s) - start )) s: $(tail -1 "$tmp/load.out")"
per_node=$(( $(total_bytes) / 3 ))
t0=$(date +%s)
"$bin" cluster add-node --base-dir "$BASE" >/dev/null
node4() { "$bin" admin --master-addrs $masters list-tservers --json | tr -d '\n' | tr '}' '\n' | grep '"node_id": *4,' || true; }
want=$(( TABLETS * 3 / 4 ))
while :; do
	line=$(node4)
	tablets=$(echo "$line" | sed -n 's/.*"tablets": *\([0-9]*\).*/\1/p')
	if [ -n "$tablets" ] && [ "$tablets" -ge "$want" ]; then break; fi
	sleep 2
done
t1=$(date +%s)
moved=$(echo "$(node4)" | sed -n 's/.*"data_bytes": *\([0-9]*\).*/\1/p')
secs=$((t1 - t0))
logical=$((DATA_MB * want / TABLETS)) # MB of values in the replicas node 4 received
echo "add-node: node 4 holds $want of $((TABLETS * 3)) replicas after ${secs} s: ~${logical} MB of values moved ($(awk -v b="$logical" -v s="$secs" 'BEGIN {printf "%.1f", b / (s > 0 ? s : 1)}') MB/s); ${moved:-0} bytes on disk there after compression (~${per_node} per node)"
