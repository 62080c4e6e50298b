#!/usr/bin/env bash
# bench-tpcb-ab.sh compares shale binaries on ONE loaded TPC-B cluster: it
# creates a local 3-node RF 3 cluster with the first binary, loads it
# (pgbench -i -s $SCALE), then for each round and each binary restarts the
# three nodes on that binary, lets them settle $SETTLE seconds (leaders move
# back, the first seconds after a restart are slow) and runs TPC-B for
# $DURATION seconds with $CLIENTS clients (default 8, split over the three
# nodes). WORKLOAD=select or WORKLOAD=insert runs bench-ysql.sh's point
# SELECT or single-row INSERT instead of TPC-B. One line per run:
#
#   label  tps  node-cpu-us/txn  cycles/txn  fsyncs/txn  sst-KB/txn  failed
#
# Fresh clusters right after the load differ from each other by more than
# most changes do; restarting one cluster's nodes on each binary in turn
# gives both the same data and layout. Nothing fails on a slow machine.
#
#   scripts/bench-tpcb-ab.sh old=/tmp/shale-old new=bin/shale
#   ROUNDS=3 SCALE=2 scripts/bench-tpcb-ab.sh a=/tmp/a b=/tmp/b
#   WORKLOAD=select CLIENTS=64 scripts/bench-tpcb-ab.sh a=/tmp/a b=/tmp/b
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-10}
DURATION=${DURATION:-20}
SETTLE=${SETTLE:-40}
ROUNDS=${ROUNDS:-2}
CLIENTS=${CLIENTS:-8}
WORKLOAD=${WORKLOAD:-tpcb}
if [ $# -lt 2 ]; then
	echo "usage: $0 label=BINARY label=BINARY [...]" >&2
	exit 2
fi
labels=() bins=()
for a in "$@"; do
	labels+=("${a%%=*}")
	bins+=("$(realpath "${a#*=}")")
done
base=$(mktemp -d)/cluster
first=${bins[0]}
trap '"$first" cluster destroy --base-dir "$base" >/dev/null 2>&1 || true; rm -rf "$(dirname "$base")"' EXIT
export PGUSER=yugabyte PGDATABASE=yugabyte PGPORT=5433

echo "# $WORKLOAD A/B on one cluster, $(date -u '+%Y-%m-%d %H:%M UTC'), $CLIENTS clients, ${DURATION}s runs, $ROUNDS rounds"
echo "# cpus $(nproc) x $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
"$first" cluster create --nodes 3 --rf 3 --base-dir "$base" >/dev/null
script=()
sql="env PGOPTIONS=-cclient_min_messages=warning psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1"
case $WORKLOAD in
tpcb)
	pgbench -h 127.0.0.1 -i -q -s "$SCALE" 2>&1 | tail -1
	;;
select)
	$sql -c "CREATE TABLE bench_select (k int PRIMARY KEY, v text)"
	$sql -c "COPY bench_select FROM STDIN" < <(seq 1 100000 | awk '{printf "%d\t%064d\n", $1, $1}')
	printf '\\set k random(1, 100000)\nSELECT v FROM bench_select WHERE k = :k;\n' >"$(dirname "$base")/w.sql"
	script=(-f "$(dirname "$base")/w.sql")
	;;
insert)
	$sql -c "CREATE TABLE bench_insert (k uuid PRIMARY KEY DEFAULT gen_random_uuid(), v text)"
	echo "INSERT INTO bench_insert (v) VALUES ('0123456789012345678901234567890123456789012345678901234567890123');" >"$(dirname "$base")/w.sql"
	script=(-f "$(dirname "$base")/w.sql")
	;;
*)
	echo "unknown WORKLOAD $WORKLOAD (tpcb, select, insert)" >&2
	exit 2
	;;
esac

# totals: node CPU seconds, scheduler cycles, fsyncs and bytes written to
# sstables (flushes and compactions) over the three nodes.
totals() {
	for i in 1 2 3; do curl -s "127.0.0.$i:7000/metrics"; done | awk '
		/^process_cpu_seconds_total/ {c += $2}
		/^shale_raft_scheduler_cycles_total/ {y += $2}
		/^shale_raft_fsyncs_total/ {f += $2}
		/^shale_pebble_(flushed|compacted)_bytes_total/ {b += $2}
		END {print c, y, f, b}'
}

for ((r = 1; r <= ROUNDS; r++)); do
	for k in "${!bins[@]}"; do
		bin=${bins[$k]}
		for i in 1 2 3; do
			"$bin" cluster stop-node "$i" --base-dir "$base" >/dev/null
			"$bin" cluster start-node "$i" --base-dir "$base" >/dev/null
		done
		sleep "$SETTLE"
		read -r c0 y0 f0 b0 < <(totals)
		out=$(mktemp -d)
		for i in 1 2 3; do
			c=$((CLIENTS / 3 + (i <= CLIENTS % 3 ? 1 : 0)))
			[ "$c" = 0 ] && continue
			j=$((c < 2 ? 1 : 2))
			pgbench -h "127.0.0.$i" -n -M prepared -T "$DURATION" -j "$j" -c "$c" "${script[@]}" >"$out/$i.log" 2>&1 &
		done
		wait
		read -r c1 y1 f1 b1 < <(totals)
		python3 - "$out" "${labels[$k]}" "$c1-$c0" "$y1-$y0" "$f1-$f0" "$b1-$b0" <<'EOF'
import glob, re, sys
out, label = sys.argv[1], sys.argv[2]
cpu, cycles, fsyncs, sst = (eval(x) for x in sys.argv[3:7])
tps = txns = failed = 0
for f in glob.glob(out + "/*.log"):
    s = open(f).read()
    tps += float(re.search(r"^tps = ([0-9.]+)", s, re.M).group(1))
    txns += int(re.search(r"actually processed: (\d+)", s).group(1))
    m = re.search(r"number of failed transactions: (\d+)", s)
    failed += int(m.group(1)) if m else 0
n = max(txns, 1)
print(f"{label}\t{tps:.1f} tps\t{cpu * 1e6 / n:.0f} us cpu/txn\t{cycles / n:.1f} cycles/txn\t{fsyncs / n:.1f} fsyncs/txn\t{sst / n / 1024:.1f} KB sst/txn\t{failed} failed")
EOF
		rm -rf "$out"
	done
done
