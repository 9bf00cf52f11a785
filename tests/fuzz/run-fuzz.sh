#!/bin/sh
# Runs each libFuzzer target for a while and says what it found.
#   tests/fuzz/run-fuzz.sh [SECONDS [TARGET...]]     (make fuzz FUZZ_SECONDS=N)
# Expects build/fuzz/fuzz_<target> (the Makefile builds them). Each target
# starts from tests/fuzz/corpus/<target> plus what earlier runs added in
# build/fuzz/corpus/<target>, uses tests/fuzz/<target>.dict when there is
# one, and writes a crashing input to build/fuzz/crashes/<target>/ (copy it
# to tests/fuzz/regress/<target>/ once fixed: `make test` replays those).
# Prints one line per target: runs, final coverage, crash or not. Exits
# non-zero if any target crashed.
set -u
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-proto bound conf snapshot}
status=0

max_len() {
	case $1 in
	proto) echo 4096 ;;	# room for lines over PROTO_LINE_MAX (2048)
	bound) echo 600 ;;	# four tokens, keys of 250 bytes
	snapshot) echo 16384 ;;	# a header and a few blocks
	*) echo 8192 ;;		# conf/anchorkv.conf is about 5 KiB
	esac
}

for t in $targets; do
	bin=build/fuzz/fuzz_$t
	work=build/fuzz/corpus/$t
	crashes=build/fuzz/crashes/$t
	log=build/fuzz/$t.log
	if [ ! -x "$bin" ]; then
		echo "FAIL $t: $bin is not built"
		status=1
		continue
	fi
	mkdir -p "$work" "$crashes"
	dict=
	[ -f "tests/fuzz/$t.dict" ] && dict=-dict=tests/fuzz/$t.dict
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
		"$bin" -max_total_time="$secs" -max_len="$(max_len "$t")" \
		-timeout=10 -print_final_stats=1 $dict \
		-artifact_prefix="$crashes/" \
		"$work" "tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	[ -n "$runs" ] || runs=$(echo "$last" | sed -n 's/^#\([0-9]*\).*/\1/p')
	cov=$(echo "$last" | sed -n 's/.*\(cov: [0-9]*\) \(ft: [0-9]*\).*/\1 \2/p')
	if [ $rc -ne 0 ]; then
		input=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log" | tail -n 1)
		echo "FAIL $t: ${runs:-?} runs, ${cov:-no coverage line}; found a crash, input ${input:-?} (log $log)"
		grep -E 'property violated|ERROR: (Address|Leak|libFuzzer)|runtime error' "$log" | head -n 3
		status=1
	else
		echo "ok   $t: ${runs:-?} runs in ${secs} s, ${cov:-?}, no crash"
	fi
done
exit $status
