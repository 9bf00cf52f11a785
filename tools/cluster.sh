#!/bin/sh
# cluster.sh - three anchorkv instances behind nutcracker (twemproxy), in
# the foreground: "make cluster". Ctrl-C (or SIGTERM) stops all four.
#
#   tools/cluster.sh [nutcracker.yml]      default: conf/nutcracker.yml
#
# The instances listen where the pool's "servers" say (127.0.0.1:11212,
# 11213, 11214 in conf/nutcracker.yml), with conf/anchorkv.conf for the
# rest; the proxy where its "listen" says (127.0.0.1:22121). Every log
# goes to the terminal (an anchorkv line names its pid, printed at start).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
yml=${1:-$here/conf/nutcracker.yml}
bin=$here/build/anchorkv
conf=$here/conf/anchorkv.conf
nutcracker=$(command -v nutcracker || echo /usr/sbin/nutcracker)

[ -x "$bin" ] || { echo "cluster.sh: $bin is not built (make)" >&2; exit 1; }
[ -x "$nutcracker" ] || {
	echo "cluster.sh: nutcracker is not installed (apt-get install nutcracker)" >&2
	exit 1
}
"$nutcracker" -t -c "$yml" >/dev/null

pids=""
stop() {
	trap - INT TERM EXIT
	[ -n "$pids" ] && kill $pids 2>/dev/null || true
	wait 2>/dev/null || true
	echo "cluster.sh: stopped"
}
# Ctrl-C or SIGTERM: a clean stop of all four, exit 0
trap 'stop; exit 0' INT TERM
trap stop EXIT

# "   - 127.0.0.1:11212:1 anchorkv1" -> 127.0.0.1 11212 anchorkv1
servers=$(sed -n 's/^[[:space:]]*-[[:space:]]*\([0-9.]*\):\([0-9]*\):[0-9]*[[:space:]]*\([^[:space:]#]*\).*/\1 \2 \3/p' "$yml")
[ -n "$servers" ] || { echo "cluster.sh: no servers in $yml" >&2; exit 1; }
for line in $(echo "$servers" | tr ' ' ','); do
	host=${line%%,*}; rest=${line#*,}; port=${rest%%,*}; name=${rest#*,}
	[ -n "$name" ] || name=$host:$port
	"$bin" -f "$conf" -l "$host" -p "$port" &
	pids="$pids $!"
	echo "cluster.sh: $name on $host:$port, pid $!"
done
listen=$(sed -n 's/^[[:space:]]*listen:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$yml" | head -n 1)
"$nutcracker" -c "$yml" &
pids="$pids $!"
echo "cluster.sh: nutcracker on $listen, pid $!; Ctrl-C stops all"
wait
