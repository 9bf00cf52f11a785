#!/bin/bash
# SPDX-License-Identifier: MIT
#
# callgrind.sh - user instructions a request in steady state, counted by
# callgrind: steadier than CPU time on a shared machine, and what the
# commit messages quote for a change that claims speed.
#
#   make bench-callgrind                       p16 int16 set16 p1
#   CG_WORKLOADS='p16 int16' CG_BASELINE=<an older anchorkv> make bench-callgrind
#
# For each workload and binary: the server, -t 1 -m 1024, under valgrind
# --tool=callgrind; memtier_benchmark stores 100,000 keys (32-byte values,
# keys in order, --ratio=1:0) and reads each once (--ratio=0:1), so that
# the table has grown and every item has been fetched; the counters are
# zeroed (callgrind_control -z); the workload runs 200,000 requests (-t 1
# -c 4, 50,000 a connection, over the same 100,000 keys); the counters are
# dumped (callgrind_control -d) and the dumped part's instructions are
# divided by 200,000. int16 uses integer keys (--key-prefix=) in all three
# steps. With CG_BASELINE, the baseline binary runs each workload right
# after anchorkv and the change is printed beside it. The dumps are kept
# in build/callgrind/ (callgrind_annotate reads them).
#
# Needs memtier_benchmark on PATH (it is not packaged for Debian 12; see
# docs/benchmarks.md), and valgrind (make deps-bench installs it).
set -u

cd "$(dirname "$0")/../.."
BIN=${CG_BIN:-build/anchorkv}
BASE=${CG_BASELINE:-}
WORKLOADS=${CG_WORKLOADS:-"p16 int16 set16 p1"}
OUT=build/callgrind
KEYS=100000
REQUESTS=200000
CONNS=4

for tool in memtier_benchmark valgrind callgrind_control nc; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "callgrind.sh: $tool is not on PATH" >&2
		exit 1
	fi
done
mkdir -p $OUT

# the options of a workload's measured step (bench.sh's, without -t/-c)
workload_args() {
	case $1 in
	p1)	echo "--ratio=1:10 -d 32 --pipeline=1" ;;
	p16)	echo "--ratio=1:10 -d 32 --pipeline=16" ;;
	int16)	echo "--ratio=1:10 -d 32 --pipeline=16 --key-prefix=" ;;
	set16)	echo "--ratio=1:0 -d 32 --pipeline=16" ;;
	*)	return 1 ;;
	esac
}

# count NAME BINARY WORKLOAD: prints instructions a request
count() {
	local name=$1 bin=$2 w=$3 port file pid i prefix=""
	local args

	args=$(workload_args "$w") || { echo "unknown workload $w" >&2; return 1; }
	[ "$w" = int16 ] && prefix="--key-prefix="
	port=$((23000 + RANDOM % 2000))
	file=$OUT/$name.$w.out
	rm -f "$file" "$file".*
	valgrind --tool=callgrind --callgrind-out-file="$file" \
		"$bin" -p $port -t 1 -m 1024 >/dev/null 2>$OUT/$name.$w.err &
	pid=$!
	for i in $(seq 100); do
		sleep 0.3
		echo version | nc -q 1 127.0.0.1 $port 2>/dev/null |
			grep -q VERSION && break
	done
	memtier_benchmark -s 127.0.0.1 -p $port -P memcache_text -t 1 -c 50 \
		--ratio=1:0 -d 32 --key-maximum=$KEYS --key-pattern=P:P \
		--requests=$((KEYS / 50)) $prefix --hide-histogram \
		>/dev/null 2>&1
	memtier_benchmark -s 127.0.0.1 -p $port -P memcache_text -t 1 -c 50 \
		--ratio=0:1 --key-maximum=$KEYS --key-pattern=P:P \
		--requests=$((KEYS / 50)) $prefix --hide-histogram \
		>/dev/null 2>&1
	callgrind_control -z $pid >/dev/null 2>&1
	# shellcheck disable=SC2086
	memtier_benchmark -s 127.0.0.1 -p $port -P memcache_text -t 1 \
		-c $CONNS --key-maximum=$KEYS --requests=$((REQUESTS / CONNS)) \
		--hide-histogram $args >/dev/null 2>&1
	callgrind_control -d $pid >/dev/null 2>&1
	sleep 0.5
	kill -TERM $pid
	wait $pid 2>/dev/null
	# the dumped part is the first numbered file; its totals line
	awk -v n=$REQUESTS '/^(summary|totals):/ { printf "%.1f\n", $2 / n;
		exit }' "$(ls "$file".* 2>/dev/null | sort | head -1)"
}

if [ -n "$BASE" ]; then
	printf "workload\tanchorkv\tbaseline\tchange\n"
else
	printf "workload\tanchorkv\n"
fi
for w in $WORKLOADS; do
	a=$(count anchorkv "$BIN" "$w") || exit 1
	if [ -n "$BASE" ]; then
		b=$(count baseline "$BASE" "$w") || exit 1
		awk -v w="$w" -v a="$a" -v b="$b" 'BEGIN {
			printf "%s\t%s\t%s\t%+.1f %%\n", w, a, b,
			       (a / b - 1) * 100 }'
	else
		printf "%s\t%s\n" "$w" "$a"
	fi
done
