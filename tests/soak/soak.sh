#!/bin/sh
# The soak test (make soak; not part of make test): the sanitizer daemon
# (build/asan/anchorkv, -m 64 so that it evicts) under a mixed load for
# SOAK_SECONDS (default 600): pipelined sets, gets, deletes, incr, range,
# rrange, keys, count and delete_range from several connections
# (tests/integration/loadgen.py), and memcaslap's sets and gets beside them;
# then, with the load stopped:
#   - every reply was well formed, no set was refused, memcaslap saw no
#     error;
#   - curr_items from stats equals the number of keys a paged
#     "keys - +" walk returns;
#   - SIGTERM: exit status 0, and no AddressSanitizer, UndefinedBehavior-
#     Sanitizer or LeakSanitizer report on its stderr.
# Prints "N passed, N failed" and exits non-zero on a failure.
#   SOAK_SECONDS  load duration (default 600)
#   SOAK_CONNS    connections of the mixed load (default 6)
#   ANCHORKV_BIN  the daemon (default build/asan/anchorkv)
set -u
cd "$(dirname "$0")/../.."
SECS=${SOAK_SECONDS:-600}
CONNS=${SOAK_CONNS:-6}
BIN=${ANCHORKV_BIN:-build/asan/anchorkv}
PY=/usr/bin/python3
out=build/soak
mkdir -p "$out"
passed=0
failed=0
check() { # $1: name, $2: 0 if it held
	if [ "$2" -eq 0 ]; then
		echo "ok   soak: $1"; passed=$((passed + 1))
	else
		echo "FAIL soak: $1"; failed=$((failed + 1))
	fi
}

port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	"$BIN" -l 127.0.0.1 -p "$port" -m 64 >"$out/daemon.log" 2>&1 &
pid=$!
i=0
until $PY -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 150 ] || ! kill -0 $pid 2>/dev/null; then
		echo "FAIL soak: the daemon did not start"; cat "$out/daemon.log"
		echo "0 passed, 1 failed"; exit 1
	fi
	sleep 0.1
done
echo "soak: $BIN on 127.0.0.1:$port for $SECS s, $CONNS mixed connections + 2 set-heavy + memcaslap -T 2 -c 16"

# the load: mixed and set-heavy connections side by side, and memcaslap
# (90% sets, 10% gets of 16..48-byte keys, 512..4096-byte values)
printf 'key\n16 48 1\nvalue\n512 4096 1\ncmd\n0 0.9\n1 0.1\n' >"$out/memcaslap.cfg"
memcaslap -s "127.0.0.1:$port" -T 2 -c 16 -t "${SECS%.*}s" \
	-F "$out/memcaslap.cfg" >"$out/memcaslap.txt" 2>&1 &
mcs=$!
$PY tests/integration/loadgen.py 127.0.0.1 "$port" "$SECS" mixed "$CONNS" 7 \
	>"$out/mixed.txt" 2>&1 &
mixed=$!
$PY tests/integration/loadgen.py 127.0.0.1 "$port" "$SECS" sets 2 8 \
	>"$out/sets.txt" 2>&1
sets_rc=$?
wait $mixed
mixed_rc=$?
wait $mcs
mcs_rc=$?
echo "mixed load:"; sed 's/^/    /' "$out/mixed.txt"
echo "set-heavy load:"; sed 's/^/    /' "$out/sets.txt"
check "mixed load: every reply well formed" $mixed_rc
check "set-heavy load: every set STORED" $sets_rc
echo "memcaslap:"; tail -n 9 "$out/memcaslap.txt" | sed 's/^/    /'
! grep -qE "ERROR|error" "$out/memcaslap.txt" && [ $mcs_rc -eq 0 ] &&
	grep -qE "^Run time: .* Ops: [1-9]" "$out/memcaslap.txt"
check "memcaslap: operations, no error (exit $mcs_rc)" $?

# counters add up, with the load stopped
$PY - "$port" >"$out/counts.txt" 2>&1 <<'PYEOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 30)
buf = b""
def line():
    global buf
    while b"\r\n" not in buf:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise SystemExit("closed")
        buf += chunk
    out, buf = buf.split(b"\r\n", 1)
    return out
s.sendall(b"stats\r\n")
st = {}
while True:
    l = line()
    if l == b"END":
        break
    _, k, v = l.split(b" ", 2)
    st[k.decode()] = v.decode()
walked, lo, pages = 0, b"-", 0
while True:
    s.sendall(b"keys %s + 1000\r\n" % lo)
    page = []
    while True:
        l = line()
        if l == b"END":
            break
        page.append(l[4:])
    walked += len(page)
    pages += 1
    if len(page) < 1000:
        break
    lo = b"(" + page[-1]
print("curr_items %s walked %d pages %d evictions %s total_items %s "
      "cmd_range %s cmd_delete_range %s" % (st["curr_items"], walked, pages,
      st["evictions"], st["total_items"], st["cmd_range"],
      st["cmd_delete_range"]))
sys.exit(0 if int(st["curr_items"]) == walked else 1)
PYEOF
check "curr_items equals the keys of a full paged walk" $?
sed 's/^/    /' "$out/counts.txt"

kill -TERM $pid
i=0
while kill -0 $pid 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $pid 2>/dev/null; then
	kill -KILL $pid
fi
wait $pid
rc=$?
check "SIGTERM: exit status 0 (was $rc)" $rc
if grep -qE "ERROR: AddressSanitizer|runtime error:|LeakSanitizer|ERROR: UndefinedBehaviorSanitizer" "$out/daemon.log"; then
	grep -A30 -E "ERROR: AddressSanitizer|runtime error:|LeakSanitizer" "$out/daemon.log" | head -60
	check "no sanitizer or leak report" 1
else
	check "no sanitizer or leak report" 0
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
