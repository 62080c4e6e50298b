#!/usr/bin/env bash
# bench-ysql.sh runs the same pgbench workloads against PostgreSQL 15 on
# this machine (one node, then a primary with two synchronous standbys,
# synchronous_standby_names = 'ANY 1 (s1, s2)') and against a local 3-node
# RF 3 ShaleDB cluster, and prints one line per run:
#
#   target  workload  clients  tps  avg-latency-ms  failed
#
# Workloads (pgbench -M prepared, $DURATION each, default 15s):
#   insert  single-row INSERT of a 64-byte value (uuid primary key)
#   select  point SELECT by primary key over 100,000 rows
#   tpcb    pgbench's TPC-B at scale $SCALE (default 10), 8 and 32 clients
# at 1, 8 and 64 clients for insert and select. ShaleDB clients are spread
# over the three nodes (one pgbench per node, results summed), as a driver
# with yb_servers() would spread them. Nothing fails on a slow machine.
#
#   scripts/bench-ysql.sh                      # everything
#   TARGETS=shale WORKLOADS="select" scripts/bench-ysql.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DURATION=${DURATION:-15}
SCALE=${SCALE:-10}
TARGETS=${TARGETS:-"pg pg-sync shale"}
WORKLOADS=${WORKLOADS:-"insert select tpcb"}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || true)}
tmp=$(mktemp -d)
chmod 755 "$tmp"
bin=$tmp/shale
PGUSER_OS=postgres # initdb refuses to run as root

cleanup() {
	[ -x "$bin" ] && "$bin" cluster destroy --base-dir "$tmp/shale-data" >/dev/null 2>&1 || true
	for d in s2 s1 p; do
		[ -d "$tmp/pg/$d" ] && as_pg "$PGBIN/pg_ctl" -D "$tmp/pg/$d" -m immediate stop >/dev/null 2>&1 || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

as_pg() {
	if [ "$(id -u)" = 0 ]; then runuser -u "$PGUSER_OS" -- "$@"; else "$@"; fi
}

echo "# YSQL side by side with PostgreSQL 15 (pgbench -M prepared), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# commit  $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
echo "# cpus    $(nproc) x $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
echo "# load    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) before the run"
printf '%-9s %-7s %7s %10s %10s %7s\n' target workload clients tps lat_ms failed

cat >"$tmp/insert.sql" <<'EOF'
INSERT INTO bench_insert (v) VALUES ('0123456789012345678901234567890123456789012345678901234567890123');
EOF
cat >"$tmp/select.sql" <<'EOF'
\set k random(1, 100000)
SELECT v FROM bench_select WHERE k = :k;
EOF
chmod 644 "$tmp"/*.sql

# pgb HOSTS PORT CLIENTS SCRIPT-ARGS...: runs one pgbench per host with the
# clients split between them; prints "tps latency failed" summed/averaged.
pgb() {
	local hosts=($1) port=$2 clients=$3
	shift 3
	local n=${#hosts[@]}
	[ "$clients" -lt "$n" ] && n=$clients
	local i pids=()
	for ((i = 0; i < n; i++)); do
		local c=$((clients / n + (i < clients % n ? 1 : 0)))
		local j=$((c < 2 ? 1 : 2))
		pgbench -n -M prepared -h "${hosts[$i]}" -p "$port" -U "$PGUSER" -c "$c" -j "$j" -T "$DURATION" "$@" \
			>"$tmp/out.$i" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || true; done
	local tps=0 lat=0 failed=0
	for ((i = 0; i < n; i++)); do
		local t l f
		t=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$tmp/out.$i")
		l=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$tmp/out.$i")
		f=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$tmp/out.$i")
		if [ -z "$t" ]; then
			echo "# pgbench on ${hosts[$i]} failed:" >&2
			tail -5 "$tmp/out.$i" >&2
			t=0 l=0 f=0
		fi
		tps=$(echo "$tps + $t" | bc -l)
		lat=$(echo "$lat + $l / $n" | bc -l)
		failed=$((failed + ${f:-0}))
	done
	printf '%.0f %.2f %d\n' "$tps" "$lat" "$failed"
}

run_target() {
	local target=$1 hosts=$2 port=$3
	local sql="env PGOPTIONS=-cclient_min_messages=warning psql -X -q -v ON_ERROR_STOP=1 -h ${hosts%% *} -p $port -U $PGUSER"
	for w in $WORKLOADS; do
		case $w in
		insert)
			$sql -c "DROP TABLE IF EXISTS bench_insert" -c "CREATE TABLE bench_insert (k uuid PRIMARY KEY DEFAULT gen_random_uuid(), v text)"
			for c in 1 8 64; do
				printf '%-9s %-7s %7s %10s %10s %7s\n' "$target" insert "$c" $(pgb "$hosts" "$port" "$c" -f "$tmp/insert.sql")
			done
			;;
		select)
			$sql -c "DROP TABLE IF EXISTS bench_select" -c "CREATE TABLE bench_select (k int PRIMARY KEY, v text)"
			$sql -c "COPY bench_select FROM STDIN" < <(seq 1 100000 | awk '{printf "%d\t%064d\n", $1, $1}')
			for c in 1 8 64; do
				printf '%-9s %-7s %7s %10s %10s %7s\n' "$target" select "$c" $(pgb "$hosts" "$port" "$c" -f "$tmp/select.sql")
			done
			;;
		tpcb)
			if ! pgbench -i -q -s "$SCALE" -h "${hosts%% *}" -p "$port" -U "$PGUSER" >"$tmp/init.out" 2>&1; then
				echo "# pgbench -i -s $SCALE on $target failed:" >&2
				tail -3 "$tmp/init.out" >&2
				continue
			fi
			for c in 8 32; do
				printf '%-9s %-7s %7s %10s %10s %7s\n' "$target" tpcb "$c" $(pgb "$hosts" "$port" "$c")
			done
			$sql -A -t -c "SELECT 'balances ' || (SELECT sum(abalance) FROM pgbench_accounts) || ' ' || (SELECT sum(bbalance) FROM pgbench_branches) || ' ' || (SELECT sum(tbalance) FROM pgbench_tellers) || ' ' || (SELECT coalesce(sum(delta), 0) FROM pgbench_history)" | sed 's/^/# /'
			;;
		esac
	done
}

start_pg() {
	local sync=$1
	mkdir -p "$tmp/pg" && chown "$PGUSER_OS" "$tmp/pg"
	as_pg "$PGBIN/initdb" -A trust -U postgres -D "$tmp/pg/p" >/dev/null
	cat >>"$tmp/pg/p/postgresql.conf" <<EOF
port = 55432
listen_addresses = '127.0.0.1'
unix_socket_directories = '$tmp/pg'
max_connections = 200
shared_buffers = 512MB
wal_level = replica
max_wal_senders = 4
EOF
	echo "host replication all 127.0.0.1/32 trust" >>"$tmp/pg/p/pg_hba.conf"
	as_pg "$PGBIN/pg_ctl" -D "$tmp/pg/p" -l "$tmp/pg/p.log" -w start >/dev/null
	if [ "$sync" = 1 ]; then
		local i=1
		for s in s1 s2; do
			as_pg "$PGBIN/pg_basebackup" -h 127.0.0.1 -p 55432 -U postgres -D "$tmp/pg/$s" -R -X stream >/dev/null
			# After pg_basebackup -R's own primary_conninfo, which lacks the
			# application_name that synchronous_standby_names matches.
			cat >>"$tmp/pg/$s/postgresql.auto.conf" <<EOF
port = $((55432 + i))
primary_conninfo = 'host=127.0.0.1 port=55432 user=postgres application_name=$s'
EOF
			as_pg "$PGBIN/pg_ctl" -D "$tmp/pg/$s" -l "$tmp/pg/$s.log" -w start >/dev/null
			i=$((i + 1))
		done
		as_pg "$PGBIN/psql" -X -q -h 127.0.0.1 -p 55432 -U postgres -c "ALTER SYSTEM SET synchronous_standby_names = 'ANY 1 (s1, s2)'" -c "SELECT pg_reload_conf()" >/dev/null
	fi
}

stop_pg() {
	for d in s2 s1 p; do
		[ -d "$tmp/pg/$d" ] && as_pg "$PGBIN/pg_ctl" -D "$tmp/pg/$d" -m fast stop >/dev/null 2>&1 || true
	done
	rm -rf "$tmp/pg"
}

for target in $TARGETS; do
	case $target in
	pg | pg-sync)
		if [ -z "$PGBIN" ]; then
			echo "# PostgreSQL 15 server not installed (apt-get install postgresql-15): $target skipped" >&2
			continue
		fi
		start_pg "$([ "$target" = pg-sync ] && echo 1 || echo 0)"
		PGUSER=postgres run_target "$target" "127.0.0.1" 55432
		stop_pg
		;;
	shale)
		$GO build -o "$bin" ./cmd/shale
		"$bin" cluster create --nodes 3 --rf 3 --base-dir "$tmp/shale-data" >/dev/null
		PGUSER=yugabyte run_target shale "127.0.0.1 127.0.0.2 127.0.0.3" 5433
		"$bin" cluster destroy --base-dir "$tmp/shale-data" >/dev/null
		;;
	esac
done
