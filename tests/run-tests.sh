#!/bin/sh
# Runs the test suites and prints one closing line
# "N passed, N failed, N skipped".
#   tests/run-tests.sh              unit, then integration
#   tests/run-tests.sh unit         C unit tests only (build/asan/tests/*)
#   tests/run-tests.sh integration  daemon tests only (pytest, tests/integration)
# Each unit binary ends with its own "N passed, N failed"; pytest's counts
# come from its JUnit XML. Exit status is non-zero on any failure.
# With CI=true, a test skipped because something it needs is not installed
# (memcached for the differential tests, a real client) counts as failed:
# CI installs everything, so such a skip means a missing install step.
set -u
what=${1:-all}
passed=0
failed=0
skipped=0
PY=/usr/bin/python3
out=build/test-output
mkdir -p "$out"

add_counts() { # $1: a line "N passed, M failed"
	p=$(echo "$1" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\1/p')
	f=$(echo "$1" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\2/p')
	s=$(echo "$1" | sed -n 's/.*, \([0-9][0-9]*\) skipped.*/\1/p')
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	skipped=$((skipped + ${s:-0}))
}

# The verdict on one program that ends with its own "N passed, N failed":
# $1 its name, $2 its log, $3 its exit status. A crash, a sanitizer report
# or a missing closing line counts as one more failure.
report_run() {
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$2" | tail -n 1)
	if [ -z "$line" ] || [ "$3" -ne 0 ]; then
		echo "FAIL $1 (exit $3): see $2"
		tail -n 20 "$2"
		[ -n "$line" ] && add_counts "$line"
		failed=$((failed + 1))
	else
		echo "ok   $1: $line"
		add_counts "$line"
	fi
}

if [ "$what" = all ] || [ "$what" = unit ]; then
	for t in build/asan/tests/test_*; do
		[ -x "$t" ] || continue
		name=$(basename "$t")
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
			"$t" >"$out/$name.log" 2>&1
		report_run "unit/$name" "$out/$name.log" $?
	done
fi

if [ "$what" = all ] || [ "$what" = integration ]; then
	# the release daemon, end to end, before the suites on the sanitized one
	sh tests/integration/smoke.sh build/anchorkv >"$out/smoke.log" 2>&1
	report_run integration/smoke.sh "$out/smoke.log" $?
	if ls tests/integration/test_*.py >/dev/null 2>&1; then
		ANCHORKV_BIN=${ANCHORKV_BIN:-build/asan/anchorkv} \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
			$PY -m pytest -q -p no:cacheprovider --junitxml="$out/integration.xml" \
			tests/integration >"$out/integration.log" 2>&1
		rc=$?
		line=$($PY - "$out/integration.xml" "${CI:-}" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("0 passed, 1 failed, 0 skipped"); sys.exit()
ci = sys.argv[2] == "true"
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = f = s = 0
for su in suites:
    t += int(su.get("tests", 0)); s += int(su.get("skipped", 0))
    f += int(su.get("failures", 0)) + int(su.get("errors", 0))
missing = []
for case in root.iter("testcase"):
    sk = case.find("skipped")
    if sk is not None and "is not installed" in (sk.get("message") or ""):
        missing.append("%s::%s (%s)" % (case.get("classname"),
                                        case.get("name"), sk.get("message")))
if ci and missing:
    for m in missing:
        print("FAIL skipped in CI, an install step is missing: " + m,
              file=sys.stderr)
    f += len(missing); s -= len(missing)
print(f"{t - f - s} passed, {f} failed, {s} skipped")
PYEOF
)
		tail -n 3 "$out/integration.log"
		if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
			# pytest itself broke (usage error, no tests collected)
			echo "FAIL integration: pytest exit $rc, see $out/integration.log"
			tail -n 30 "$out/integration.log"
			failed=$((failed + 1))
		elif [ $rc -eq 1 ]; then
			grep -E '^(FAILED|ERROR)' "$out/integration.log" | head -n 40
		fi
		echo "     integration: $line"
		add_counts "$line"
	fi
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
