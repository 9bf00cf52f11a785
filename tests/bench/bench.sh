#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench.sh - anchorkv against memcached and redis-server, side by side in
# one run (called by `make bench`, which builds build/anchorkv and
# build/akbench first).
#
#  1. throughput: every server (anchorkv -t 1 and -t 2, memcached -t 1 and
#     -t 2, redis-server) runs every workload, interleaved round by round;
#     ops/s and p50/p99 latency from the load generator, server CPU time
#     per operation from /proc/<pid>/stat; medians over the rounds;
#  1b. inserts: new string keys into an empty server (memtier only):
#     anchorkv -t 1 and -t 4, memcached -t 1, redis-server;
#  2. memory: RSS and bytes per item after loading 1M and 10M items;
#  3. ranges: anchorkv's range/keys/count at -t 1 and -t 4 against Redis
#     sorted sets;
#  4. meta: mg pipelined against memcached's;
#  5. snapshot: the warm-restart snapshot written and loaded against
#     Redis's BGSAVE and RDB load, and p99 while one is written;
#  6. tls: p1 and p16 over TLS (memtier_benchmark --tls) against anchorkv
#     -Z and memcached -Z, with the same certificate, beside anchorkv's
#     plain-text run (memtier only, built with TLS);
#  7. hitratio: a cache-aside replay of seeded traces (build/hitratio)
#     against anchorkv -t 2 -m M, memcached -t 2 -m M and redis-server
#     maxmemory M (allkeys-lru and allkeys-lfu), M from 2 % to 20 % of
#     the keys' bytes: hit ratio, items held, server CPU per request, and
#     exact LRU and S3-FIFO simulated at anchorkv's item count. Written
#     to hitratio-latest.md (section 7 is not in the default list: run it
#     with BENCH_SECTIONS=hitratio; about 25 minutes with the defaults).
#
# Knobs (environment):
#   BENCH_ROUNDS=3          rounds of section 1 (and 3)
#   BENCH_SECONDS=10        seconds per workload run
#   BENCH_QUICK=1           smoke run of about two minutes
#   BENCH_MEM_ITEMS="1000000 10000000"   item counts of section 2
#   BENCH_RANGE_SECONDS=3   seconds per range measurement
#   BENCH_RANGE_KEYS=1000000 string and integer keys of section 3
#   BENCH_INSERT_KEYS=3000000 new keys per run of section 1b
#   BENCH_GENERATOR=auto    auto, memtier or memcaslap
#   BENCH_SNAP_ITEMS=10000000  items of section 5 (snapshot)
#   BENCH_SECTIONS="load inserts memory range meta snapshot tls"
#   BENCH_HR_TRACES="zipf1.0 zipf0.8 zipf0.7 zipf1.2 scan ttl sizes shift"
#                           traces of section 7: zipfA (Zipf exponent A,
#                           100-byte values), scan (Zipf 0.9 and 5,000
#                           one-hit keys after every 20,000 requests), ttl
#                           (Zipf 1.0, a quarter of the keys with a TTL of
#                           2-5 s), sizes (Zipf 1.0, values of 50-2,000
#                           bytes), shift (Zipf 1.0 whose 5,000 hottest
#                           keys go cold after every 250,000 requests)
#   BENCH_HR_SIZES="2 5 10 20"   cache sizes of section 7, in % of the keys'
#                           bytes (200 bytes a key, 640 with sizes)
#   BENCH_HR_KEYS=1000000   distinct keys of a trace
#   BENCH_HR_REQUESTS=4000000  requests of a trace (the first half warms)
#   BENCH_HR_ROUNDS=1       plays of each row per server; the report
#                           takes each figure's median (the ttl trace
#                           varies from run to run: its TTLs are real time)
#   BENCH_HR_FILL="10 32 50 100 300 1000 2000 16384 100000"
#                           value sizes of section 7's
#                           fill rows: each server at BENCH_HR_FILL_MB is
#                           sent 1.5 times the keys that fit (key:<n>, up
#                           to 10 bytes), values of one size, and asked
#                           how many items it holds ("" for none)
#   BENCH_HR_FILL_MB=12
#   BENCH_OUT=tests/bench/results
#   BENCH_BASELINE=             a second anchorkv binary (say, built from an
#                               older commit) run in sections 1 and 3
#                               beside this one, as bl1 and bl2 (-t 1, -t
#                               2) and bl1 and bl4 (-t 1, -t 4)
#   BENCH_SERVERS="ak1 ak2 mc1 mc2 redis"   servers of section 1 (with
#                               BENCH_BASELINE, bl1 beside ak1, bl2 beside
#                               ak2)
#   BENCH_WORKLOADS="p1 p16 int16 set16 big4 multiget"   workloads of section 1
#
# Writes $BENCH_OUT/latest.md (the tables, machine, versions) and
# $BENCH_OUT/bench.png (gnuplot chart) and prints the tables.
set -eu

cd "$(dirname "$0")/../.."
ROOT=$(pwd)
AK=$ROOT/build/anchorkv
AKB=$ROOT/build/akbench
HR=$ROOT/build/hitratio
BASELINE=${BENCH_BASELINE:-}
PY=/usr/bin/python3
OUT=${BENCH_OUT:-$ROOT/tests/bench/results}

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	ROUNDS=${BENCH_ROUNDS:-1}
	SECONDS_RUN=${BENCH_SECONDS:-2}
	MEM_ITEMS=${BENCH_MEM_ITEMS:-"100000 1000000"}
	RANGE_SECONDS=${BENCH_RANGE_SECONDS:-1}
	RANGE_KEYS=${BENCH_RANGE_KEYS:-100000}
	INS_KEYS=${BENCH_INSERT_KEYS:-300000}
	HR_TRACES=${BENCH_HR_TRACES-"zipf1.0 scan"}
	HR_SIZES=${BENCH_HR_SIZES:-"5"}
	HR_REQUESTS=${BENCH_HR_REQUESTS:-1000000}
	HR_FILL=${BENCH_HR_FILL-"32 100"}
else
	ROUNDS=${BENCH_ROUNDS:-3}
	SECONDS_RUN=${BENCH_SECONDS:-10}
	MEM_ITEMS=${BENCH_MEM_ITEMS:-"1000000 10000000"}
	RANGE_SECONDS=${BENCH_RANGE_SECONDS:-3}
	RANGE_KEYS=${BENCH_RANGE_KEYS:-1000000}
	INS_KEYS=${BENCH_INSERT_KEYS:-3000000}
	HR_TRACES=${BENCH_HR_TRACES-"zipf1.0 zipf0.8 zipf0.7 zipf1.2 scan ttl sizes shift"}
	HR_SIZES=${BENCH_HR_SIZES:-"2 5 10 20"}
	HR_REQUESTS=${BENCH_HR_REQUESTS:-4000000}
	HR_FILL=${BENCH_HR_FILL-"10 32 50 100 300 1000 2000 16384 100000"}
fi
HR_FILL_MB=${BENCH_HR_FILL_MB:-12}
HR_KEYS=${BENCH_HR_KEYS:-1000000}
HR_ROUNDS=${BENCH_HR_ROUNDS:-1}
SECTIONS=${BENCH_SECTIONS:-"load inserts memory range meta snapshot tls"}
GEN=${BENCH_GENERATOR:-auto}
if [ "$GEN" = auto ]; then
	if command -v memtier_benchmark >/dev/null; then
		GEN=memtier
	else
		GEN=memcaslap
	fi
fi
KEYS=100000
CLK_TCK=$(getconf CLK_TCK)

for f in "$AK" "$AKB" "$HR" $BASELINE; do
	[ -x "$f" ] || { echo "bench: $f missing (run make bench)" >&2; exit 1; }
done
for c in memcached redis-server redis-cli gnuplot; do
	command -v $c >/dev/null || { echo "bench: $c missing" >&2; exit 1; }
done
command -v "${GEN/memtier/memtier_benchmark}" >/dev/null ||
	{ echo "bench: no load generator ($GEN)" >&2; exit 1; }

TMP=$(mktemp -d)
# every measurement, written as it is made (report.py report reads it)
mkdir -p "$OUT"
RAW=$OUT/raw.tsv
# sections that report through raw.tsv and latest.md (all but hitratio,
# which writes files of its own): without one, those files are left alone
GENERAL=$(echo " $SECTIONS " | sed 's/ hitratio / /g; s/^ *//; s/ *$//')
[ -z "$GENERAL" ] || : >"$RAW"
PIDS=""

cleanup() {
	local p
	for p in $PIDS; do
		kill "$p" 2>/dev/null || true
	done
	for p in $PIDS; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() {
	echo "bench: $*" >&2
}

free_port() {
	$PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() {
	local i
	for i in $(seq 100); do
		$PY -c "import socket; socket.create_connection(('127.0.0.1', $1), 1)" \
			2>/dev/null && return 0
		sleep 0.1
	done
	echo "bench: nothing listens on port $1" >&2
	return 1
}

# start_server NAME: starts server NAME on a free port; sets
# PORT_<NAME> and PID_<NAME>. Names: ak1 ak2 ak4 bl1 bl2 mc1 mc2 redis,
# and akt1 mct1: -Z on TLSPORT_<NAME>, PORT_<NAME> plain beside it (for
# loading and stats), with the certificate of make_cert.
start_server() {
	local name=$1 port pid user="" tport tls
	port=$(free_port)
	[ "$(id -u)" = 0 ] && user="-u nobody"
	case $name in
	akt1|mct1)
		tport=$(free_port)
		tls="-Z -o ssl_chain_cert=$TMP/tls.pem,ssl_key=$TMP/tls.key"
		tls="$tls -l notls:127.0.0.1:$port,127.0.0.1:$tport"
		eval "TLSPORT_$name=$tport"
		;;
	esac
	case $name in
	akt1)
		# shellcheck disable=SC2086
		"$AK" -p "$port" -t 1 -m 4096 -c 4096 $tls 2>"$TMP/$name.log" &
		;;
	mct1)
		# shellcheck disable=SC2086
		memcached $user -p "$port" -t 1 -m 4096 -c 4096 $tls \
			2>"$TMP/$name.log" &
		;;
	ak1|ak2|ak4)
		"$AK" -p "$port" -t "${name#ak}" -m 4096 -c 4096 \
			2>"$TMP/$name.log" &
		;;
	bl1|bl2|bl4)
		"$BASELINE" -p "$port" -t "${name#bl}" -m 4096 -c 4096 \
			2>"$TMP/$name.log" &
		;;
	mc1|mc2)
		memcached $user -l 127.0.0.1 -p "$port" -t "${name#mc}" \
			-m 4096 -c 4096 2>"$TMP/$name.log" &
		;;
	redis)
		redis-server --port "$port" --bind 127.0.0.1 --save '' \
			--appendonly no --daemonize no --maxclients 4096 \
			>"$TMP/$name.log" 2>&1 &
		;;
	esac
	pid=$!
	PIDS="$PIDS $pid"
	wait_port "$port"
	eval "PORT_$name=$port PID_$name=$pid"
}

stop_server() {
	local pid
	eval "pid=\$PID_$1"
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

proto_of() {
	case $1 in redis|rds) echo resp ;; *) echo mc ;; esac
}

# cpu_ticks PID: utime + stime of PID, in clock ticks
cpu_ticks() {
	sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# mc_stats PORT: "name value" per line of a memcached-protocol "stats"
mc_stats() {
	$PY - "$1" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"stats\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    buf += s.recv(65536)
for line in buf.decode().split("\r\n"):
    if line.startswith("STAT "):
        print(line[5:])
EOF
}

# item_count NAME: items the server holds (stats curr_items / DBSIZE)
item_count() {
	local port
	eval "port=\$PORT_$1"
	if [ "$1" = redis ] || [ "$1" = rds ]; then
		redis-cli -p "$port" DBSIZE
	else
		mc_stats "$port" | awk '$1 == "curr_items" { print $2 }'
	fi
}

# served NAME: commands the server has counted (memcached protocol:
# cmd_get + cmd_set, cmd_get counting keys; Redis: all commands)
served() {
	local port
	eval "port=\$PORT_$1"
	if [ "$1" = redis ]; then
		redis-cli -p "$port" INFO stats |
			awk -F: '/^total_commands_processed:/ { print $2 + 0 }'
	else
		mc_stats "$port" |
			awk '$1 == "cmd_get" || $1 == "cmd_set" { n += $2 }
			     END { print n + 0 }'
	fi
}

# load NAME FIRST N PREFIX BYTES [ZKEY]
load() {
	local port proto z=""
	eval "port=\$PORT_$1"
	proto=$(proto_of "$1")
	[ $# -ge 6 ] && z="-z $6"
	"$AKB" load -P "$proto" -p "$port" -s "$2" -n "$3" -x "$4" -d "$5" \
		-c 4 -D 64 $z >"$TMP/load.out" ||
		{ cat "$TMP/load.out" >&2; echo "bench: load failed" >&2; exit 1; }
}

# ---- section 1: throughput ----

SERVERS=${BENCH_SERVERS:-"ak1 ak2 mc1 mc2 redis"}
# the baseline runs beside each anchorkv: bl1 right after ak1, bl2 after ak2
if [ -n "$BASELINE" ]; then
	with=""
	for s in $SERVERS; do
		case $s in ak*) with="$with $s bl${s#ak}" ;; *) with="$with $s" ;; esac
	done
	SERVERS=${with# }
fi
WORKLOADS=${BENCH_WORKLOADS:-"p1 p16 int16 set16 big4 multiget bp1 bp16"}

# memtier_args WORKLOAD PROTO: prints the workload's options, or nothing
# if the generator cannot run it for that protocol
memtier_args() {
	local base="--ratio=1:10 -d 32"
	case $1 in
	p1)	echo "$base --pipeline=1" ;;
	p16)	echo "$base --pipeline=16" ;;
	int16)	echo "$base --pipeline=16 --key-prefix=" ;;
	set16)	echo "--ratio=1:0 -d 32 --pipeline=16" ;;
	big4)	echo "--ratio=1:10 -d 4096 --pipeline=4 --key-prefix=big-" ;;
	multiget)
		# memtier has no multi-key get for the redis protocol
		[ "$2" = resp ] || echo "--ratio=0:16 -d 32 --multi-key-get=16"
		;;
	# p1 and p16 in memcached's binary protocol (not Redis's business)
	bp1)	[ "$2" = resp ] || echo "$base --pipeline=1" ;;
	bp16)	[ "$2" = resp ] || echo "$base --pipeline=16" ;;
	# new string keys only: each of the 50 connections sets its own
	# slice of INS_KEYS keys once, into an empty server
	ins16)	echo "--ratio=1:0 -d 32 --pipeline=16 --key-pattern=P:P" ;;
	esac
}

# memtier_proto WORKLOAD PROTO: memtier's -P for it
memtier_proto() {
	if [ "$2" = resp ]; then
		echo redis
	else
		case $1 in
		bp*)	echo memcache_binary ;;
		*)	echo memcache_text ;;
		esac
	fi
}

# memcaslap_args WORKLOAD: memcaslap has no pipelining: the closest is as
# many connections as memtier keeps requests in flight (50 x pipeline);
# its keys are random strings, so int16 cannot be run
memcaslap_args() {
	case $1 in
	p1)	echo "-c 50 -X 32 10" ;;
	p16)	echo "-c 800 -X 32 10" ;;
	set16)	echo "-c 800 -X 32 0" ;;
	big4)	echo "-c 200 -X 4096 10" ;;
	multiget) echo "-c 50 -X 32 10 -d 16" ;;
	esac
}

# run_workload ROUND WORKLOAD NAME: one measured run, appends a row to RAW
# (the load generator's own CPU use comes from the shell's time: user,
# system and elapsed seconds, over the test time)
run_workload() {
	local round=$1 w=$2 name=$3 port pid proto args t0 t1 f s0 s1 tport
	local TIMEFORMAT='%U %S %R'
	# a timed run over the prefilled keys, or (ins16) a fixed number of
	# new keys, however long that takes
	local span="--key-maximum=$KEYS --test-time=$SECONDS_RUN"
	local secs=$SECONDS_RUN
	if [ "$w" = ins16 ]; then
		span="--key-maximum=$INS_KEYS --requests=$((INS_KEYS / 50))"
		secs=1000000
	fi
	eval "port=\$PORT_$name pid=\$PID_$name tport=\${TLSPORT_$name:-}"
	proto=$(proto_of "$name")
	f=$TMP/run.json
	rm -f "$f"
	if [ "$GEN" = memtier ]; then
		args=$(memtier_args "$w" "$proto")
		if [ -z "$args" ]; then
			printf '%s\t%s\t%s\t%s\tn/a\n' "$ROWKIND" "$round" "$w" "$name" >>"$RAW"
			return
		fi
		# a TLS server: the load goes to its TLS port
		[ -z "$tport" ] || { port=$tport; args="$args --tls --tls-skip-verify"; }
		s0=$(served "$name")
		t0=$(cpu_ticks "$pid")
		# shellcheck disable=SC2086
		{ time memtier_benchmark -s 127.0.0.1 -p "$port" \
			-P "$(memtier_proto "$w" "$proto")" \
			-t 1 -c 50 $span \
			--hide-histogram --json-out-file="$f" $args \
			>"$TMP/gen.out" 2>&1; } 2>"$TMP/gen.time" ||
			{ tail -5 "$TMP/gen.out" >&2; echo "bench: memtier failed" >&2; exit 1; }
		t1=$(cpu_ticks "$pid")
		s1=$(served "$name")
	else
		if [ "$proto" = resp ] || [ "$w" = int16 ] || [ "$w" = ins16 ] ||
		   [ "${w#bp}" != "$w" ]; then
			printf '%s\t%s\t%s\t%s\tn/a\n' "$ROWKIND" "$round" "$w" "$name" >>"$RAW"
			return
		fi
		set -- $(memcaslap_args "$w")
		local conc=$2 size=$4 gets=$5
		shift 5
		{
			echo "key"; echo "16 16 1"
			echo "value"; echo "$size $size 1"
			echo "cmd"
			echo "0 $($PY -c "print(1 / ($gets + 1))")"
			echo "1 $($PY -c "print($gets / ($gets + 1))")"
		} >"$TMP/memcaslap.cfg"
		s0=$(served "$name")
		t0=$(cpu_ticks "$pid")
		{ time memcaslap -s "127.0.0.1:$port" -T 1 -c "$conc" \
			-t "${SECONDS_RUN}s" -S "${SECONDS_RUN}s" \
			-F "$TMP/memcaslap.cfg" "$@" >"$TMP/gen.out" 2>&1; } \
			2>"$TMP/gen.time" ||
			{ tail -5 "$TMP/gen.out" >&2; echo "bench: memcaslap failed" >&2; exit 1; }
		t1=$(cpu_ticks "$pid")
		s1=$(served "$name")
		f=$TMP/gen.out
	fi
	$PY "$ROOT/tests/bench/report.py" parse "$GEN" "$f" "$((t1 - t0))" \
		"$CLK_TCK" "$((s1 - s0))" "$TMP/gen.time" "$secs" |
		while read -r ops rate p50 p99 cpu ok gen; do
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
			"$ROWKIND" "$round" "$w" "$name" "$ops" "$rate" "$p50" "$p99" \
			"$cpu" "$ok" "$gen" >>"$RAW"
	done
	log "round $round $w $name: $(tail -1 "$RAW" | cut -f6-11)"
}

# rows of run_workload: "load" (section 1) or "tls" (section 6)
ROWKIND=load

section_load() {
	local s w r order
	for s in $SERVERS; do
		start_server "$s"
		load "$s" 0 $((KEYS + 1)) memtier- 32
		load "$s" 0 $((KEYS + 1)) "" 32
		load "$s" 0 $((KEYS + 1)) big- 4096
	done
	# even rounds run the servers in the reverse order, so that no server
	# always runs right after the same one
	for r in $(seq "$ROUNDS"); do
		order=$SERVERS
		[ $((r % 2)) = 0 ] && order=$(echo $SERVERS | tr ' ' '\n' | tac)
		for w in $WORKLOADS; do
			for s in $order; do
				run_workload "$r" "$w" "$s"
			done
		done
	done
	for s in $SERVERS; do
		stop_server "$s"
	done
}

# ---- section 1b: inserts ----

# New string keys into an empty server, each run on a fresh one:
# anchorkv -t 1 and -t 4, memcached -t 1, redis-server (memtier only).
section_inserts() {
	local r s
	for r in $(seq "$ROUNDS"); do
		for s in ak1 ak4 mc1 redis; do
			start_server "$s"
			run_workload "$r" ins16 "$s"
			stop_server "$s"
		done
	done
}

# ---- section 2: memory ----

section_memory() {
	local s kind prefix rss0 rss n have loaded
	for s in ak1 mc1 redis; do
		for kind in string integer; do
			[ $kind = string ] && prefix=key: || prefix=""
			start_server "$s"
			sleep 0.5
			eval "rss0=\$(rss_kb \$PID_$s)"
			loaded=0
			for n in $MEM_ITEMS; do
				load "$s" "$loaded" $((n - loaded)) "$prefix" 32
				loaded=$n
				sleep 0.5
				eval "rss=\$(rss_kb \$PID_$s)"
				have=$(item_count "$s")
				[ "$have" = "$n" ] ||
					{ echo "bench: $s holds $have items, want $n" >&2; exit 1; }
				printf 'mem\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$kind" \
					"$n" "$rss0" "$rss" "$(grep -o 'rate=.*' "$TMP/load.out")" >>"$RAW"
				log "memory $s $kind $n: RSS ${rss0} -> ${rss} kB"
			done
			stop_server "$s"
		done
	done
}

# ---- section 3: ranges ----

# range_run ROUND NAME LABEL akbench-range-args...
range_run() {
	local round=$1 name=$2 label=$3 port pid t0 t1
	shift 3
	eval "port=\$PORT_$name pid=\$PID_$name"
	t0=$(cpu_ticks "$pid")
	"$AKB" range -p "$port" -T "$RANGE_SECONDS" "$@" >"$TMP/range.out" ||
		{ cat "$TMP/range.out" >&2; echo "bench: range check failed" >&2; exit 1; }
	t1=$(cpu_ticks "$pid")
	printf 'range\t%s\t%s\t%s\t%s\t%s\n' "$round" "$label" "$name" \
		"$(cat "$TMP/range.out")" \
		"cpu_ticks=$((t1 - t0)) clk_tck=$CLK_TCK" >>"$RAW"
	log "range $round $label $name: $(cat "$TMP/range.out")"
}

section_range() {
	local n=$RANGE_KEYS r l a aks="ak1 ak4"
	# with a baseline, each query runs on bl1 right after ak1, bl4 after ak4
	[ -n "$BASELINE" ] && aks="ak1 bl1 ak4 bl4"
	for a in $aks; do
		start_server $a
		load $a 0 "$n" key: 32
		load $a 0 "$n" "" 32
	done
	start_server redis
	load redis 0 "$n" key: 0 zs
	load redis 0 "$n" "" 0 zi
	for r in $(seq "$ROUNDS"); do
		for l in 10 100; do
			for a in $aks; do
				range_run "$r" $a "string range $l" -m range -l $l -n "$n" -x key: -c 4
				range_run "$r" $a "string keys $l" -m keys -l $l -n "$n" -x key: -c 4
			done
			range_run "$r" redis "string zrangebylex $l" -m zlex -z zs -l $l -n "$n" -x key: -c 4
			for a in $aks; do
				range_run "$r" $a "integer range $l" -m range -l $l -n "$n" -x "" -c 4
				range_run "$r" $a "integer keys $l" -m keys -l $l -n "$n" -x "" -c 4
			done
			range_run "$r" redis "integer zrange-byscore $l" -m zscore -z zi -l $l -n "$n" -x "" -c 4
		done
		for a in $aks; do
			# the floor: a request that costs next to nothing
			# (two radix descents), over the same 4 connections
			range_run "$r" $a "floor count1k" -m count -l 1000 -n "$n" -x "" -c 4
			range_run "$r" $a "count all" -m count -e $((2 * n)) -n "$n" -c 1
			range_run "$r" $a "string count1k" -m count -l 1000 -n "$n" -x key: -c 1
			range_run "$r" $a "integer count1k" -m count -l 1000 -n "$n" -x "" -c 1
		done
		range_run "$r" redis "string zlexcount" -m zlexcount -z zs -e "$n" -n "$n" -c 1
		range_run "$r" redis "integer zcount" -m zcount -z zi -e "$n" -n "$n" -c 1
		range_run "$r" redis "string zlexcount1k" -m zlexcount -z zs -l 1000 -n "$n" -x key: -c 1
		range_run "$r" redis "integer zcount1k" -m zcount -z zi -l 1000 -n "$n" -x "" -c 1
	done
	for a in $aks redis; do
		stop_server $a
	done
}

# ---- section 4: the meta get ----

# mg <key> v, 16 random keys a batch pipelined and closed by mn, over 4
# connections, against memcached's: server CPU per key
section_meta() {
	local n=$RANGE_KEYS r a
	for a in ak1 mc1; do
		start_server $a
		load $a 0 "$n" key: 32
	done
	for r in $(seq "$ROUNDS"); do
		for a in ak1 mc1; do
			range_run "$r" $a "meta mg 16" -m mg -l 16 -n "$n" -x key: -c 4
		done
	done
	stop_server ak1
	stop_server mc1
}

# ---- section 5: snapshots (warm restart) ----

SNAP_ITEMS=${BENCH_SNAP_ITEMS:-$([ "${BENCH_QUICK:-0}" = 1 ] && echo 1000000 || echo 10000000)}

now_s() {
	$PY -c 'import time; print("%.3f" % time.time())'
}

# answered PORT PROTO: waits until a request gets its answer (Redis says
# -LOADING while it loads; anchorkv accepts into the backlog only)
answered() {
	$PY - "$1" "$2" <<'EOF'
import socket, sys, time
port, proto = int(sys.argv[1]), sys.argv[2]
req, ok = ((b"PING\r\n", b"+PONG") if proto == "resp" else
           (b"version\r\n", b"VERSION"))
deadline = time.time() + 600
while time.time() < deadline:
    try:
        s = socket.create_connection(("127.0.0.1", port), 1)
        s.settimeout(600)
        s.sendall(req)
        if s.recv(100).startswith(ok):
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.01)
sys.exit(1)
EOF
}

# ak_snapshot PORT: sends "snapshot" and waits until stats says it ended
ak_snapshot() {
	$PY - "$1" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"snapshot\r\n")
assert s.recv(100) == b"OK\r\n"
while True:
    s.sendall(b"stats\r\n")
    buf = b""
    while not buf.endswith(b"END\r\n"):
        buf += s.recv(65536)
    st = dict(l.split(" ", 2)[1:] for l in buf.decode().split("\r\n")
              if l.startswith("STAT "))
    if st["snapshot_in_progress"] == "0":
        assert st["last_snapshot_status"] == "ok", st["last_snapshot_status"]
        break
    time.sleep(0.01)
EOF
}

# p99_run NAME SECONDS: memtier p1 for SECONDS; prints its p99 in ms
p99_run() {
	local port
	eval "port=\$PORT_$1"
	memtier_benchmark -s 127.0.0.1 -p "$port" -P memcache_text -t 1 -c 50 \
		--ratio=1:10 -d 32 --pipeline=1 --key-prefix=key: \
		--key-maximum="$SNAP_ITEMS" --test-time="$2" --hide-histogram \
		--json-out-file="$TMP/p99.json" >"$TMP/p99.out" 2>&1 ||
		{ tail -5 "$TMP/p99.out" >&2; exit 1; }
	$PY -c '
import json, sys
d = json.load(open(sys.argv[1]))["ALL STATS"]["Totals"]
print(d["Percentile Latencies"]["p99.00"])' "$TMP/p99.json"
}

# SNAP_ITEMS items of 32 bytes: anchorkv's snapshot command (until stats
# says it ended) and its load (a start with -e until it answers) against
# Redis's BGSAVE (until rdb_bgsave_in_progress:0) and its load (a start
# until PING gets PONG); then anchorkv's p99 under memtier p1 while a
# snapshot is written, against the same run idle
section_snapshot() {
	local dir=$TMP/snap t0 t1 secs n port idle busy r
	mkdir -p "$dir"
	for r in $(seq "$ROUNDS"); do
		rm -f "$dir"/*
		port=$(free_port)
		"$AK" -p "$port" -t 2 -m 4096 -c 4096 -e "$dir/ak.snap" \
			2>"$TMP/aks.log" &
		PORT_aks=$port PID_aks=$!
		wait_port "$port"
		load aks 0 "$SNAP_ITEMS" key: 32
		t0=$(now_s); ak_snapshot "$port"; t1=$(now_s)
		printf 'snap\t%s\tanchorkv\tsave\t%s\t%s\n' "$r" \
			"$($PY -c "print($t1 - $t0)")" "$(stat -c %s "$dir/ak.snap")" >>"$RAW"
		secs=$($PY -c "import math; print(max(2, math.ceil($t1 - $t0)))")
		if [ "$GEN" = memtier ]; then
			idle=$(p99_run aks "$secs")
			( sleep 0.2; ak_snapshot "$port" ) &
			busy=$(p99_run aks "$secs")
			wait $!
			printf 'snap\t%s\tanchorkv\tp99\t%s\t%s\t%s\n' "$r" "$idle" \
				"$busy" "$secs" >>"$RAW"
		fi
		stop_server aks
		t0=$(now_s)
		"$AK" -p "$port" -t 2 -m 4096 -c 4096 -e "$dir/ak.snap" \
			2>"$TMP/aks.log" &
		PID_aks=$!
		answered "$port" mc; t1=$(now_s)
		n=$(item_count aks)
		[ "$n" = "$SNAP_ITEMS" ] ||
			{ echo "bench: anchorkv loaded $n items" >&2; exit 1; }
		printf 'snap\t%s\tanchorkv\tload\t%s\n' "$r" \
			"$($PY -c "print($t1 - $t0)")" >>"$RAW"
		stop_server aks

		port=$(free_port)
		redis-server --port "$port" --bind 127.0.0.1 --save '' \
			--appendonly no --dir "$dir" --dbfilename dump.rdb \
			>"$TMP/rds.log" 2>&1 &
		PORT_rds=$port PID_rds=$!
		wait_port "$port"
		load rds 0 "$SNAP_ITEMS" key: 32
		t0=$(now_s)
		redis-cli -p "$port" BGSAVE >/dev/null
		while ! redis-cli -p "$port" INFO persistence |
			grep -q '^rdb_bgsave_in_progress:0'; do sleep 0.01; done
		t1=$(now_s)
		printf 'snap\t%s\tredis\tsave\t%s\t%s\n' "$r" \
			"$($PY -c "print($t1 - $t0)")" "$(stat -c %s "$dir/dump.rdb")" >>"$RAW"
		stop_server rds
		t0=$(now_s)
		redis-server --port "$port" --bind 127.0.0.1 --save '' \
			--appendonly no --dir "$dir" --dbfilename dump.rdb \
			>"$TMP/rds.log" 2>&1 &
		PID_rds=$!
		answered "$port" resp; t1=$(now_s)
		printf 'snap\t%s\tredis\tload\t%s\n' "$r" \
			"$($PY -c "print($t1 - $t0)")" >>"$RAW"
		stop_server rds
		log "snapshot round $r: $(grep "^snap	$r	" "$RAW" | cut -f3- | tr '\t\n' ' ;')"
	done
}

# ---- section 6: TLS ----

# make_cert: a self-signed P-256 certificate for localhost in $TMP
make_cert() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout "$TMP/tls.key" -out "$TMP/tls.pem" -days 2 \
		-subj /CN=localhost >/dev/null 2>&1 ||
		{ echo "bench: openssl could not make a certificate" >&2; exit 1; }
}

# p1 and p16 over TLS: anchorkv -Z and memcached -Z (-t 1 each, same
# certificate), and anchorkv's plain run beside them, interleaved by round
section_tls() {
	local r s w
	if [ "$GEN" != memtier ] ||
	   ! memtier_benchmark --help 2>&1 | grep -q -- '--tls'; then
		log "tls: skipped (needs memtier_benchmark built with TLS)"
		return
	fi
	make_cert
	ROWKIND=tls
	for s in ak1 akt1 mct1; do
		start_server "$s"
		load "$s" 0 $((KEYS + 1)) memtier- 32
	done
	for r in $(seq "$ROUNDS"); do
		for w in p1 p16; do
			for s in ak1 akt1 mct1; do
				run_workload "$r" "$w" "$s"
			done
		done
	done
	for s in ak1 akt1 mct1; do
		stop_server "$s"
	done
	ROWKIND=load
}

# hr_start NAME MB: a server of the hit-ratio section at MB megabytes (ak,
# mc: -t 2 -m MB; lru, lfu: redis-server maxmemory MB, allkeys-lru/-lfu);
# sets HR_PORT, HR_PID
hr_start() {
	local user=""
	HR_PORT=$(free_port)
	[ "$(id -u)" = 0 ] && user="-u nobody"
	case $1 in
	ak)
		"$AK" -p "$HR_PORT" -t 2 -m "$2" 2>"$TMP/hr.log" &
		;;
	mc)
		# shellcheck disable=SC2086
		memcached $user -l 127.0.0.1 -p "$HR_PORT" -t 2 -m "$2" \
			2>"$TMP/hr.log" &
		;;
	lru|lfu)
		redis-server --port "$HR_PORT" --bind 127.0.0.1 --save '' \
			--appendonly no --daemonize no --maxmemory "${2}mb" \
			--maxmemory-policy "allkeys-$1" >"$TMP/hr.log" 2>&1 &
		;;
	esac
	HR_PID=$!
	PIDS="$PIDS $HR_PID"
	wait_port "$HR_PORT"
}

# every trace at every size against the four servers, one after another
section_hitratio() {
	local t s v mb keys name alpha mix per line raw=$OUT/hitratio-raw.tsv
	: >"$raw"
	for t in $HR_TRACES; do
		case $t in
		zipf*) alpha=${t#zipf} mix=plain per=200 ;;
		scan) alpha=0.9 mix=scan per=200 ;;
		ttl) alpha=1.0 mix=ttl per=200 ;;
		sizes) alpha=1.0 mix=sizes per=640 ;;
		shift) alpha=1.0 mix=shift per=200 ;;
		*) log "hitratio: no trace $t"; exit 1 ;;
		esac
		for s in $HR_SIZES; do
			mb=$((HR_KEYS * per * s / 100 / 1048576))
			[ "$mb" -ge 2 ] || mb=2
			for r in $(seq "$HR_ROUNDS"); do
			for name in ak mc lru lfu; do
				hr_start "$name" "$mb"
				line=$("$HR" replay -P "$(proto_of "${name/l[rf]u/redis}")" \
					-p "$HR_PORT" -i "$HR_PID" -a "$alpha" \
					-m "$mix" -k "$HR_KEYS" -n "$HR_REQUESTS")
				kill "$HR_PID"
				wait "$HR_PID" 2>/dev/null || true
				log "hitratio $t ${s}% ${mb} MB $name ($r): $line"
				printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$s" "$mb" \
					"$name" "$line" >>"$raw"
			done
			done
		done
	done
	# one value size each: what an item costs every server at its limit
	for v in $HR_FILL; do
		keys=$((HR_FILL_MB * 1048576 / (v + 48) * 3 / 2))
		for name in ak mc lru lfu; do
			hr_start "$name" "$HR_FILL_MB"
			line=$("$HR" fill -P "$(proto_of "${name/l[rf]u/redis}")" \
				-p "$HR_PORT" -v "$v" -k "$keys")
			kill "$HR_PID"
			wait "$HR_PID" 2>/dev/null || true
			log "hitratio fill ${v} B ${HR_FILL_MB} MB $name: $line"
			printf 'fill\t%s\t%s\t%s\t%s\n' "$v" "$HR_FILL_MB" \
				"$name" "$line" >>"$raw"
		done
	done
	$PY "$ROOT/tests/bench/report.py" hitratio "$raw" \
		"$OUT/hitratio-latest.md" \
		"BENCH_HR_TRACES='$HR_TRACES' BENCH_HR_SIZES='$HR_SIZES' BENCH_HR_KEYS=$HR_KEYS BENCH_HR_REQUESTS=$HR_REQUESTS BENCH_HR_ROUNDS=$HR_ROUNDS BENCH_HR_FILL='$HR_FILL' BENCH_HR_FILL_MB=$HR_FILL_MB BENCH_SECTIONS=hitratio make bench"
	cat "$OUT/hitratio-latest.md"
}

# main: the whole script is read before it runs (so editing it during a
# run cannot derail the run)
main() {
	local sec
	log "generator $GEN, $ROUNDS rounds of $SECONDS_RUN s, sections: $SECTIONS"
	for sec in $SECTIONS; do
		"section_$sec"
	done
	[ -n "$GENERAL" ] || return 0

	{
		echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "nproc=$(nproc)"
		echo "cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
		echo "mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
		echo "anchorkv=$("$AK" --version 2>&1 | head -1)"
		[ -z "$BASELINE" ] ||
			echo "baseline=$("$BASELINE" --version 2>&1 | head -1)"
		echo "memcached=$(memcached -V 2>&1 | head -1)"
		echo "redis=$(redis-server --version | head -1 | cut -d' ' -f1-3)"
		if [ "$GEN" = memtier ]; then
			echo "generator=memtier_benchmark $(memtier_benchmark --version | head -1 | cut -d' ' -f2)"
		else
			echo "generator=memcaslap $(memcaslap -V 2>&1 | head -1)"
		fi
		echo "run=BENCH_ROUNDS=$ROUNDS BENCH_SECONDS=$SECONDS_RUN BENCH_MEM_ITEMS='$MEM_ITEMS' BENCH_RANGE_SECONDS=$RANGE_SECONDS BENCH_RANGE_KEYS=$RANGE_KEYS BENCH_INSERT_KEYS=$INS_KEYS BENCH_SECTIONS='$SECTIONS'${BENCH_SERVERS:+ BENCH_SERVERS='$BENCH_SERVERS'}${BENCH_WORKLOADS:+ BENCH_WORKLOADS='$BENCH_WORKLOADS'}${BASELINE:+ BENCH_BASELINE=<older build>} make bench"
		echo "range_keys=$RANGE_KEYS"
		echo "snap_items=$SNAP_ITEMS"
	} >"$TMP/meta"
	$PY "$ROOT/tests/bench/report.py" report "$RAW" "$TMP/meta" "$OUT" "$GEN" "$TMP"
	[ -f "$TMP/bench.gp" ] && gnuplot "$TMP/bench.gp"
	cat "$OUT/latest.md"
}

main "$@"
exit
