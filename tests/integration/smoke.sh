#!/bin/sh
# smoke.sh - a quick end-to-end check of the daemon, by hand or in CI:
# start it, run a few commands, push the limits the server enforces, stop.
#
#   tests/integration/smoke.sh [BIN]      (default: build/anchorkv)
#
# Ends with "N passed, N failed"; exit status non-zero on any failure.
# Checks: a bad setting exits 1 naming it; set/get; stats and its
# sub-commands; 2000 pipelined requests in one write; a 1 MiB value both
# ways; -c (the connection over the limit gets memcached's
# "ERROR Too many open connections"); a client that never reads its
# replies does not block the others; SIGTERM exits 0 and removes the
# pidfile.
set -u
BIN=${1:-${ANCHORKV_BIN:-build/anchorkv}}
PY=/usr/bin/python3
[ -x "$BIN" ] || { echo "smoke: no executable $BIN"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$PY" - "$BIN" "$tmp" <<'PYEOF'
import os, signal, socket, subprocess, sys, time

BIN, TMP = sys.argv[1], sys.argv[2]
passed = failed = 0

def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print("ok   " + what)
    else:
        failed += 1
        print("FAIL " + what)

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p

def connect(port, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s

def read_until(s, end, limit=1 << 26):
    buf = b""
    while not buf.endswith(end) and len(buf) < limit:
        d = s.recv(1 << 20)
        if not d:
            break
        buf += d
    return buf

def talk(port, data, end=b"END\r\n"):
    s = connect(port)
    s.sendall(data)
    r = read_until(s, end)
    s.close()
    return r

# a bad value is refused at start, naming the setting
r = subprocess.run([BIN, "-t", "abc"], capture_output=True, text=True)
check(r.returncode == 1 and "threads (-t)" in r.stderr and '"abc"' in r.stderr,
      "bad -t value: exit 1, message names threads (-t)")

port = free_port()
pidfile = os.path.join(TMP, "anchorkv.pid")
p = subprocess.Popen([BIN, "-p", str(port), "-c", "16", "-P", pidfile,
                      "-t", "2"], stderr=subprocess.PIPE)
for _ in range(100):
    try:
        if talk(port, b"version\r\n", b"\r\n").startswith(b"VERSION "):
            break
    except OSError:
        time.sleep(0.05)
check(os.path.exists(pidfile) and
      open(pidfile).read().strip() == str(p.pid), "pidfile holds the pid")

r = talk(port, b"set a 0 0 1\r\nx\r\nget a\r\n")
check(r == b"STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n", "set then get")

r = talk(port, b"stats\r\n").decode()
lines = r.split("\r\n")
names = [l.split()[1] for l in lines if l.startswith("STAT ")]
check(names[:3] == ["pid", "uptime", "time"] and r.endswith("END\r\n"),
      "stats starts with pid, uptime, time and ends with END")
check(all(n in names for n in ("curr_connections", "cmd_get", "get_hits",
                               "bytes_read", "curr_items", "threads",
                               "conn_yields", "allocator")),
      "stats has memcached's and anchorkv's fields")
for sub in (b"settings", b"items", b"slabs", b"conns", b"anchorkv"):
    r = talk(port, b"stats " + sub + b"\r\n")
    check(r.endswith(b"END\r\n") and b"ERROR" not in r, "stats " + sub.decode())
check(talk(port, b"stats reset\r\n", b"\r\n") == b"RESET\r\n", "stats reset")

# 1000 sets and 1000 gets in one write
req = b"".join(b"set k%d 0 0 4\r\nv%03d\r\n" % (i, i % 1000) for i in range(1000))
req += b"".join(b"get k%d\r\n" % i for i in range(1000))
s = connect(port)
s.sendall(req)
buf = b""
while buf.count(b"END\r\n") < 1000:
    d = s.recv(1 << 20)
    if not d:
        break
    buf += d
s.close()
check(buf.count(b"STORED\r\n") == 1000 and buf.count(b"VALUE ") == 1000,
      "2000 pipelined requests answered in order")
check(b"VALUE k999 0 4\r\nv999\r\nEND\r\n" in buf, "the last pipelined get")

# a 1 MiB value (the default -I is 1m: 1 MiB of value does not fit with
# its header, as in memcached; 1000000 bytes does)
big = os.urandom(1000000)
s = connect(port)
s.sendall(b"set big 0 0 %d\r\n" % len(big) + big + b"\r\n")
check(read_until(s, b"\r\n") == b"STORED\r\n", "store a 1 MB value")
s.sendall(b"get big\r\n")
r = read_until(s, b"END\r\n")
check(r == b"VALUE big 0 %d\r\n" % len(big) + big + b"\r\nEND\r\n",
      "read the 1 MB value back intact")
s.sendall(b"set huge 0 0 %d\r\n" % (2 << 20) + b"z" * (2 << 20) + b"\r\n")
r = read_until(s, b"\r\n")
check(r.startswith(b"SERVER_ERROR"), "a 2 MiB value is refused")
s.sendall(b"version\r\n")
check(read_until(s, b"\r\n").startswith(b"VERSION"),
      "the connection is usable after the refused value")
s.close()

# a client that never reads: the others are still served
lazy = socket.socket()
lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
lazy.connect(("127.0.0.1", port))
lazy.setblocking(False)
try:
    for _ in range(400):
        lazy.send(b"get big big big big\r\n" * 50)
except (BlockingIOError, OSError):
    pass
t = time.time()
r = talk(port, b"get a\r\n")
check(r == b"VALUE a 0 1\r\nx\r\nEND\r\n" and time.time() - t < 2,
      "served while another client never reads")

# -c 16: with the lazy one open, 15 more fit; the next is refused
conns = []
for i in range(15):
    c = connect(port)
    c.sendall(b"version\r\n")
    read_until(c, b"\r\n")
    conns.append(c)
extra = connect(port)
r = read_until(extra, b"\r\n")
check(r == b"ERROR Too many open connections\r\n",
      "over -c: ERROR Too many open connections")
for c in conns:
    c.close()
lazy.close()
extra.close()
time.sleep(0.3)
r = talk(port, b"stats\r\n").decode()
check("STAT rejected_connections 1\r\n" in r, "rejected_connections counts it")

# SIGTERM: exit 0, pidfile removed
p.send_signal(signal.SIGTERM)
try:
    rc = p.wait(10)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "timeout"
err = p.stderr.read().decode(errors="replace")
check(rc == 0, "SIGTERM: exit status 0 (got %s)" % rc)
check(not os.path.exists(pidfile), "SIGTERM: pidfile removed")
check("ERROR: AddressSanitizer" not in err and "runtime error" not in err,
      "no sanitizer report")
if failed:
    print(err[-3000:])
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PYEOF
