# SPDX-License-Identifier: MIT
"""Glue of bench.sh: reads the load generators' output, makes the tables.

  report.py parse memtier|memcaslap FILE CPU_TICKS CLK_TCK SERVED TIME SECS
      prints "ops ops_per_s p50_ms p99_ms server_cpu_us_per_op valid
      generator_cpu_percent"; valid is 0 when the server counted under
      half as many commands (SERVED) as the generator reports operations:
      it refused them; TIME holds the generator's "user system elapsed"
      seconds (bash's time), its CPU is (user + system) over the shorter
      of elapsed and SECS, the run's length (memtier_benchmark idles a
      second outside its test time)
  report.py report RAW META OUTDIR GENERATOR PLOTDIR
      writes OUTDIR/latest.md and PLOTDIR/bench.gp (which draws
      OUTDIR/bench.png)
  report.py hitratio RAW OUT_MD COMMAND
      writes OUT_MD: section 7's tables from RAW (trace, size %, MB,
      server, then hitratio's name=value line per row) and COMMAND, the
      make bench line that made them
  report.py docs DOC LATEST_MD
      puts LATEST_MD (headings one level down) into DOC (docs/benchmarks.md)
      after the line <!-- BENCH RESULTS -->, in place of what was there up
      to the next <!-- marker or ## heading
"""
import json
import re
import statistics
import sys

SERVERS = ["ak1", "ak2", "ak4", "bl1", "bl2", "mc1", "mc2", "redis"]
SERVER_NAMES = {
    "ak1": "anchorkv -t 1", "ak2": "anchorkv -t 2", "ak4": "anchorkv -t 4",
    "bl1": "baseline -t 1", "bl2": "baseline -t 2", "bl4": "baseline -t 4",
    "mc1": "memcached -t 1", "mc2": "memcached -t 2",
    "redis": "redis-server",
    "akt1": "anchorkv -t 1, TLS", "mct1": "memcached -t 1, TLS",
}
WORKLOADS = ["p1", "p16", "int16", "set16", "big4", "multiget", "bp1",
             "bp16", "ins16"]
WORKLOAD_TEXT = {
    "p1": "1:10 set:get, 32 B values, no pipelining",
    "p16": "1:10 set:get, 32 B values, pipeline 16",
    "int16": "p16 with integer keys (empty key prefix)",
    "set16": "sets only, 32 B values, pipeline 16",
    "big4": "1:10 set:get, 4096 B values, pipeline 4",
    "multiget": "gets of 16 keys per request, 32 B values (an op is a request)",
    "bp1": "p1 in memcached's binary protocol",
    "bp16": "p16 in memcached's binary protocol",
    "ins16": "new string keys only: 50 connections set each its own slice "
             "of BENCH_INSERT_KEYS keys once (--key-pattern=P:P), pipeline 16, "
             "32 B values, into a fresh server",
}


def parse_memtier(path):
    """ops/s = operations / the run's wall time: memtier's own Ops/sec
    came out ten times too high once in a one-second run."""
    stats = json.load(open(path))["ALL STATS"]
    tot = stats["Totals"]
    pct = tot["Percentile Latencies"]
    ms = stats["Runtime"]["Total duration"]
    return (tot["Count"], tot["Count"] * 1000.0 / ms, pct["p50.00"],
            pct["p99.00"])


def parse_memcaslap(path):
    """Ops and TPS of the last line; p50/p99 from the log2 histogram of
    the Total Statistics (upper bound of the bucket, so coarse)."""
    text = open(path).read()
    m = re.search(r"Ops: (\d+) TPS: (\d+)", text)
    ops, rate = int(m.group(1)), float(m.group(2))
    tot = text[text.rindex("Total Statistics ("):]
    dist = tot[tot.index("Log2 Dist:"):].splitlines()[1:]
    buckets = []
    for line in dist:
        m = re.match(r"\s*(\d+):\s+(.*)", line)
        if not m:
            break
        base = int(m.group(1))
        for i, c in enumerate(m.group(2).split()):
            buckets.append((2 ** (base + i + 1), int(c)))
    total = sum(c for _, c in buckets)

    def pct(p):
        seen = 0
        for upper, c in buckets:
            seen += c
            if seen >= p * total:
                return upper / 1000.0
        return float("nan")
    return ops, rate, pct(0.5), pct(0.99)


def cmd_parse(gen, path, ticks, clk, served, timefile, secs):
    ops, rate, p50, p99 = (parse_memtier if gen == "memtier"
                           else parse_memcaslap)(path)
    cpu = int(ticks) * 1e6 / int(clk) / ops if ops else float("nan")
    user, system, elapsed = (float(x) for x in
                             open(timefile).read().split()[-3:])
    print(ops, rate, p50, p99, "%.3f" % cpu,
          1 if ops and int(served) >= 0.5 * ops else 0,
          "%.1f" % (100 * (user + system) / min(elapsed, float(secs))
                    if elapsed else 0))


def med(xs):
    return statistics.median(xs) if xs else None


def fmt(x, digits=0):
    if x is None:
        return "n/a"
    if digits == 0:
        return "{:,.0f}".format(x)
    return "{:.{}f}".format(x, digits)


def kv(text):
    return {k: float(v) for k, v in re.findall(r"(\w+)=([-\d.]+)", text)}


def cmd_report(raw, meta_path, outdir, gen, plotdir):
    meta = dict(line.rstrip("\n").split("=", 1) for line in open(meta_path))
    load, mem, rng, snap, tls = {}, [], {}, {}, {}
    by_round = {}   # (workload, server) -> {round: (ops/s, cpu/op)}
    for line in open(raw):
        f = line.rstrip("\n").split("\t")
        if f[0] == "tls":
            # tls ROUND WORKLOAD SERVER, then the columns of a load row
            if f[4] != "n/a":
                tls.setdefault((f[2], f[3]), []).append(
                    [float(x) for x in f[4:11]])
        elif f[0] == "load":
            key = (f[2], f[3])
            load.setdefault(key, [])
            if f[4] != "n/a":
                # rows of older runs have no generator CPU column
                load[key].append([float(x) for x in f[4:11]] +
                                 [float("nan")] * (11 - len(f)))
                by_round.setdefault(key, {})[f[1]] = (float(f[5]),
                                                      float(f[8]))
        elif f[0] == "mem":
            mem.append(f[1:])
        elif f[0] == "snap":
            # snap ROUND SERVER save|load|p99 VALUES...
            snap.setdefault((f[2], f[3]), []).append(
                [float(x) for x in f[4:]])
        elif f[0] == "range":
            a = kv(f[4])
            c = kv(f[5])
            a["cpu"] = (c["cpu_ticks"] * 1e6 / c["clk_tck"] / a["requests"]
                        if a["requests"] else float("nan"))
            a["round"] = f[1]
            rng.setdefault((f[2], f[3]), []).append(a)

    out = []
    w = out.append
    w("# anchorkv benchmark\n")
    w("%s; %s CPUs (%s), %s RAM; %s; %s; %s; load generator: %s.\n" % (
        meta["date"], meta["nproc"], meta["cpu"], meta["mem"],
        meta["anchorkv"], meta["memcached"], meta["redis"],
        meta["generator"]))
    w("Run: `%s` (medians over the rounds).\n" % meta["run"])
    if "baseline" in meta:
        w("Baseline (BENCH_BASELINE, an older build run beside this one): "
          "%s.\n" % meta["baseline"])

    medians = {}
    if load:
        w("## Throughput\n")
        if gen == "memtier":
            w("memtier_benchmark: one client thread, 50 connections, "
              "keyspace of 100,001 keys prefilled, uniform random keys; "
              "ops/s and latency as it reports them; CPU = server utime "
              "+ stime per operation; generator CPU = memtier_benchmark's "
              "own utime + stime over the test time (100 % is one "
              "core: the client, not the server, sets the rate).\n")
        else:
            w("memcaslap: one client thread; it has no pipelining, so "
              "a pipeline of N runs as 50 x N connections; its own random "
              "16-byte keys; p50/p99 are the upper bounds of its log2 "
              "latency buckets; CPU = server utime + stime per "
              "operation; generator CPU = memcaslap's own utime + stime "
              "over the test time (100 % is one core).\n")
        w("| workload | server | ops/s | p50 ms | p99 ms | server CPU µs/op "
          "| generator CPU % |")
        w("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        for wl in WORKLOADS:
            for s in SERVERS:
                rows = load.get((wl, s))
                if rows is None:
                    continue
                if not rows:
                    why = ("memtier_benchmark has no multi-key get for "
                           "the redis protocol" if gen == "memtier" and
                           s == "redis" else
                           "memcaslap speaks only memcached's protocols"
                           if s == "redis" else
                           "memcaslap's keys are random strings")
                    w("| %s | %s | n/a | n/a | n/a | n/a (%s) | |" % (
                        wl, SERVER_NAMES[s], why))
                    continue
                if not all(r[5] for r in rows):
                    w("| %s | %s | invalid | | | (the server counted under "
                      "half the commands the generator sent: it refused "
                      "them) | |" % (wl, SERVER_NAMES[s]))
                    continue
                m = [med([r[i] for r in rows]) for i in range(5)]
                m.append(med([r[6] for r in rows if r[6] == r[6]]))
                medians[(wl, s)] = m
                w("| %s | %s | %s | %s | %s | %s | %s |" % (
                    wl, SERVER_NAMES[s], fmt(m[1]), fmt(m[2], 3),
                    fmt(m[3], 3), fmt(m[4], 2), fmt(m[5], 0)))
        w("")
        w("Workloads: " + "; ".join("**%s** %s" % (k, WORKLOAD_TEXT[k])
                                    for k in WORKLOADS) + ".\n")
        refs = any((wl, s) in medians for wl in WORKLOADS
                   for s in ("mc1", "mc2", "redis"))
        if refs:
            w("### Against the targets of issue 5\n")
            w("| workload | CPU/op memcached ÷ anchorkv (-t 1) | CPU/op redis ÷ "
              "anchorkv | ops/s anchorkv ÷ best other | p99 anchorkv vs that "
              "server (ms) |")
            w("| --- | ---: | ---: | ---: | --- |")
            for wl in WORKLOADS:
                a1, m1, r = (medians.get((wl, s)) for s in ("ak1", "mc1", "redis"))
                if not a1:
                    continue
                ak = max((medians[(wl, s)] for s in ("ak1", "ak2")
                          if (wl, s) in medians), key=lambda m: m[1])
                others = [(medians[(wl, s)], s) for s in ("mc1", "mc2", "redis")
                          if (wl, s) in medians]
                best, bs = max(others, key=lambda o: o[0][1]) if others else (None, None)
                w("| %s | %s | %s | %s | %s |" % (
                    wl,
                    "%.2fx" % (m1[4] / a1[4]) if m1 else "n/a",
                    "%.2fx" % (r[4] / a1[4]) if r else "n/a",
                    "%.2fx (vs %s)" % (ak[1] / best[1], SERVER_NAMES[bs])
                    if best else "n/a",
                    "%.3f vs %.3f" % (ak[3], best[3]) if best else "n/a"))
        base = [(a, b) for a, b in (("ak1", "bl1"), ("ak2", "bl2"))
                if any((wl, b) in medians for wl in WORKLOADS)]
        if base:
            w("\n### Against the baseline\n")
            w("Each round runs a workload on anchorkv and then on the "
              "baseline, so the two see the same state of the machine; "
              "**change** is the median over the rounds of the CPU/op "
              "ratio of the two runs of one round (its range in brackets), "
              "which the machine's drift from round to round cancels out "
              "of; the medians of each are beside it.\n")
            w("| workload | threads | CPU/op change, paired by round "
              "| server CPU µs/op anchorkv vs baseline | ops/s anchorkv vs "
              "baseline |")
            w("| --- | --- | ---: | ---: | ---: |")
            for wl in WORKLOADS:
                for a, b in base:
                    ma, mb = medians.get((wl, a)), medians.get((wl, b))
                    ra = by_round.get((wl, a), {})
                    rb = by_round.get((wl, b), {})
                    ratios = sorted(ra[r][1] / rb[r][1] for r in ra
                                    if r in rb and rb[r][1] > 0)
                    if not ma or not mb or not ratios:
                        continue
                    w("| %s | -t %s | %+.1f %% (%+.1f .. %+.1f) | %s vs %s "
                      "| %s vs %s |" % (
                          wl, a[2], 100 * (med(ratios) - 1),
                          100 * (ratios[0] - 1), 100 * (ratios[-1] - 1),
                          fmt(ma[4], 3), fmt(mb[4], 3), fmt(ma[1]),
                          fmt(mb[1])))
        bin_rows = [(t, b) for t, b in (("p1", "bp1"), ("p16", "bp16"))
                    if (b, "ak1") in medians]
        if bin_rows:
            w("\n### The binary protocol (targets of issue 30)\n")
            w("| workload | CPU/op binary ÷ text, anchorkv -t 1 (target "
              "<= 1) | CPU/op anchorkv ÷ memcached, binary, -t 1 (target "
              "<= 0.5 at bp16) |")
            w("| --- | ---: | ---: |")
            for t, b in bin_rows:
                ab, at, mb = (medians.get(k) for k in
                              ((b, "ak1"), (t, "ak1"), (b, "mc1")))
                w("| %s | %s | %s |" % (
                    b, "%.2fx" % (ab[4] / at[4]) if at else "n/a",
                    "%.2fx" % (ab[4] / mb[4]) if mb else "n/a"))
        if ("p1", "ak1") in medians and ("p1", "ak2") in medians:
            a1, a2 = medians[("p1", "ak1")], medians[("p1", "ak2")]
            w("\n-t 2 scaling on p1: anchorkv %.2fx, memcached %s; the "
              "load generator used %s %% of a core against anchorkv -t 1 "
              "and %s %% against -t 2, and the servers %.0f %% and %.0f %% "
              "(CPU/op x ops/s), on %s cores.\n" % (
                a2[1] / a1[1],
                "%.2fx" % (medians[("p1", "mc2")][1] / medians[("p1", "mc1")][1])
                if ("p1", "mc2") in medians and ("p1", "mc1") in medians
                else "n/a", fmt(a1[5]), fmt(a2[5]),
                a1[4] * a1[1] / 1e4, a2[4] * a2[1] / 1e4, meta["nproc"]))
        w("")

    if mem:
        w("## Memory\n")
        w("Fresh server (-t 1), items loaded with 32-byte values by "
          "build/akbench (4 connections, 64 sets in flight each, every "
          "reply checked, item count checked with stats/DBSIZE); bytes "
          "per item = (RSS after load - RSS empty) / items. String keys "
          "are `key:<n>`, integer keys `<n>`.\n")
        w("| server | keys | items | RSS empty MiB | RSS MiB | bytes/item | load rate (sets/s) |")
        w("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        for s, kind, n, rss0, rss, rate in mem:
            w("| %s | %s | %s | %.1f | %.1f | %.1f | %s |" % (
                SERVER_NAMES[s], kind, fmt(int(n)), int(rss0) / 1024,
                int(rss) / 1024, (int(rss) - int(rss0)) * 1024 / int(n),
                fmt(kv(rate).get("rate"))))
        per = {(r[0], r[1], int(r[2])): (int(r[4]) - int(r[3])) * 1024 / int(r[2])
               for r in mem}
        top = max(int(r[2]) for r in mem)
        for kind, goal in (("string", "1"), ("integer", "0.5")):
            a = per.get(("ak1", kind, top))
            m = per.get(("mc1", kind, top))
            if a and m:
                w("\nAt %s items, %s keys: anchorkv takes %.2fx memcached's "
                  "bytes per item (issue 5 asks for at most %s)." % (
                      fmt(top), kind, a / m, goal))
        w("")

    if rng:
        w("## Ranges\n")
        w("anchorkv -t 1 and -t 4, each holding %s `key:<n>` and %s integer keys (32-byte "
          "values), against redis-server holding two sorted sets: the same "
          "string keys with score 0 (`zs`) and the integer keys as scores "
          "(`zi`). build/akbench: 4 connections (1 for the counts), closed "
          "loop, random start key with at least <count> keys after it, "
          "every reply checked for exactly <count> entries. `range` returns "
          "values too, `keys` and Redis only the keys: `keys` is the fair "
          "comparison. `count - +` counts all %s keys of anchorkv; the "
          "`1k` counts cover 1000 keys from a random start (<end> is the "
          "1000th key from <start>). `meta mg 16`: memcached's meta get "
          "of one random key with its value, 16 a batch pipelined and "
          "closed by `mn`, against memcached -t 1 holding the same keys; "
          "requests/s and CPU are per key, the latencies per batch.\n" % (
              fmt(int(meta["range_keys"])), fmt(int(meta["range_keys"])),
              fmt(2 * int(meta["range_keys"]))))
        w("| query | server | command | requests/s | p50 µs | p99 µs | server CPU µs/request |")
        w("| --- | --- | --- | ---: | ---: | ---: | ---: |")
        commands = {
            "range": "range [<start> + %s",
            "keys": "keys [<start> + %s",
            "zrangebylex": "ZRANGEBYLEX zs [<start> + LIMIT 0 %s",
            "zrange-byscore": "ZRANGE zi <start> +inf BYSCORE LIMIT 0 %s",
            "all": "count - +",
            "zlexcount": "ZLEXCOUNT zs - +",
            "zcount": "ZCOUNT zi -inf +inf",
            "count1k": "count [<start> [<end>",
            "zlexcount1k": "ZLEXCOUNT zs [<start> [<end>",
            "zcount1k": "ZCOUNT zi <start> <end>",
            "mg": "mg <key> v (%s keys a batch, then mn)",
        }
        for (label, s), rows in rng.items():
            parts = label.split()
            cmd = commands[parts[1]]
            if "%s" in cmd:
                cmd = cmd % parts[2]
            w("| %s | %s | `%s` | %s | %s | %s | %s |" % (
                label, SERVER_NAMES[s], cmd,
                fmt(med([r["rps"] for r in rows])),
                fmt(med([r["p50_us"] for r in rows]), 1),
                fmt(med([r["p99_us"] for r in rows]), 1),
                fmt(med([r["cpu"] for r in rows]), 2)))
        w("")
        write_range_baseline(w, rng)
        # the targets of issue 11 need the range section's rows (a run
        # of the meta section alone has only its own)
        if any(label.endswith("keys 10") for label, _ in rng):
            write_issue11(w, rng, medians)
    if snap:
        write_snapshots(w, snap, meta)
    if tls:
        write_tls(w, tls)

    with open(outdir + "/latest.md", "w") as fp:
        fp.write("\n".join(out) + "\n")
    if medians:
        write_plot(medians, outdir, plotdir)


def write_range_baseline(w, rng):
    """The range rows of anchorkv against BENCH_BASELINE's, paired by
    round as section 1's are."""
    pairs = [(label, a, "bl" + a[2:]) for label, a in rng
             if a.startswith("ak") and (label, "bl" + a[2:]) in rng]
    if not pairs:
        return
    w("### Ranges against the baseline\n")
    w("Each round runs a query on anchorkv and then on the baseline; "
      "**change** is the median over the rounds of the CPU/request ratio "
      "of the two runs of one round (its range in brackets).\n")
    w("| query | threads | CPU/request change, paired by round | server "
      "CPU µs/request anchorkv vs baseline | requests/s anchorkv vs "
      "baseline |")
    w("| --- | --- | ---: | ---: | ---: |")
    for label, a, b in pairs:
        ra = {r["round"]: r for r in rng[(label, a)]}
        rb = {r["round"]: r for r in rng[(label, b)]}
        ratios = sorted(ra[r]["cpu"] / rb[r]["cpu"] for r in ra
                        if r in rb and rb[r]["cpu"] > 0)
        if not ratios:
            continue
        w("| %s | -t %s | %+.1f %% (%+.1f .. %+.1f) | %s vs %s | %s vs %s "
          "|" % (label, a[2:], 100 * (med(ratios) - 1),
                 100 * (ratios[0] - 1), 100 * (ratios[-1] - 1),
                 fmt(med([r["cpu"] for r in rng[(label, a)]]), 2),
                 fmt(med([r["cpu"] for r in rng[(label, b)]]), 2),
                 fmt(med([r["rps"] for r in rng[(label, a)]])),
                 fmt(med([r["rps"] for r in rng[(label, b)]]))))
    w("")


def write_tls(w, tls):
    """Section 6: TLS against memcached -Z and anchorkv's plain text."""
    w("## TLS\n")
    w("memtier_benchmark --tls (one thread, 50 connections, 1:10 set:get, "
      "32 B values, 100,001 keys prefilled), against anchorkv -Z and "
      "memcached -Z with the same P-256 certificate (TLS 1.3, "
      "TLS_AES_256_GCM_SHA384), and anchorkv's plain text in the same "
      "rounds; medians.\n")
    w("| workload | server | ops/s | p50 ms | p99 ms | server CPU µs/op |")
    w("| --- | --- | ---: | ---: | ---: | ---: |")
    m = {}
    for wl in ("p1", "p16"):
        for s in ("ak1", "akt1", "mct1"):
            rows = tls.get((wl, s))
            if not rows:
                continue
            m[(wl, s)] = [med([r[i] for r in rows]) for i in range(5)]
            v = m[(wl, s)]
            w("| %s | %s | %s | %s | %s | %s |" % (
                wl, SERVER_NAMES[s], fmt(v[1]), fmt(v[2], 3), fmt(v[3], 3),
                fmt(v[4], 2)))
    w("")
    for wl in ("p1", "p16"):
        a, t, c = (m.get((wl, s)) for s in ("ak1", "akt1", "mct1"))
        if not t:
            continue
        w("- %s: CPU/op anchorkv TLS ÷ memcached TLS %s (target <= 1); "
          "ops/s anchorkv TLS ÷ memcached TLS %s; CPU/op anchorkv TLS ÷ "
          "anchorkv plain %s%s." % (
              wl, "%.2fx" % (t[4] / c[4]) if c else "n/a",
              "%.2fx" % (t[1] / c[1]) if c else "n/a",
              "%.2fx" % (t[4] / a[4]) if a else "n/a",
              " (target <= 1.5 on p16)" if wl == "p16" else ""))
    w("")


def write_snapshots(w, snap, meta):
    """Section 5: the warm-restart snapshot against Redis's RDB."""
    w("## Snapshots (warm restart)\n")
    w("%s items of 32 bytes (keys key:0...). Save: anchorkv's `snapshot` "
      "command until `stats` says it ended, Redis's `BGSAVE` until "
      "`rdb_bgsave_in_progress:0`. Load: a start with the file until the "
      "server answers (`version`; Redis: `PING` until `PONG`, not "
      "`-LOADING`). Medians over the rounds.\n" %
      fmt(int(meta.get("snap_items", 0))))
    w("| | anchorkv | Redis | anchorkv / Redis |")
    w("| --- | ---: | ---: | ---: |")
    for what, label in (("save", "save, s"), ("load", "load, s")):
        a = snap.get(("anchorkv", what))
        r = snap.get(("redis", what))
        if not a or not r:
            continue
        am, rm = med([x[0] for x in a]), med([x[0] for x in r])
        w("| %s | %s | %s | %s |" % (label, fmt(am, 2), fmt(rm, 2),
                                     fmt(am / rm, 2)))
    a = snap.get(("anchorkv", "save"))
    r = snap.get(("redis", "save"))
    if a and r and len(a[0]) > 1:
        w("| file, MB | %s | %s | %s |" % (
            fmt(med([x[1] for x in a]) / 1e6, 1),
            fmt(med([x[1] for x in r]) / 1e6, 1),
            fmt(med([x[1] for x in a]) / med([x[1] for x in r]), 2)))
    w("")
    p = snap.get(("anchorkv", "p99"))
    if p:
        idle, busy = med([x[0] for x in p]), med([x[1] for x in p])
        w("anchorkv's p99 under memtier_benchmark p1 (50 connections, 1:10 "
          "set:get, 32 bytes) for %d s: %s ms idle, %s ms while a snapshot "
          "is written (%s x; the target is at most 2 x).\n" % (
              int(med([x[2] for x in p])), fmt(idle, 3), fmt(busy, 3),
              fmt(busy / idle if idle else float("nan"), 2)))


def write_issue11(w, rng, medians):
    """The targets of issue 11, from the range rows and the ins16 load
    rows: each a ratio of medians in this run."""
    def m(label, server, what):
        rows = rng.get((label, server))
        return med([r[what] for r in rows]) if rows else None

    def ratio(a, b, digits=2):
        return "%.*fx" % (digits, a / b) if a and b else "n/a"

    lines = []
    for kind, ref in (("string", "zrangebylex"),
                      ("integer", "zrange-byscore")):
        for l in ("10", "100"):
            q = "%s keys %s" % (kind, l)
            r = "%s %s %s" % (kind, ref, l)
            lines.append((
                "`keys` %s, %s keys: req/s and CPU/req against Redis" % (l, kind),
                "%s / %s" % (ratio(m(q, "ak1", "rps"), m(r, "redis", "rps")),
                             ratio(m(r, "redis", "cpu"), m(q, "ak1", "cpu"))),
                "%s / %s" % (ratio(m(q, "ak4", "rps"), m(r, "redis", "rps")),
                             ratio(m(r, "redis", "cpu"), m(q, "ak4", "cpu"))),
                "at least 1x / 1x (aim 1.5x)"))
        q = "%s range 100" % kind
        r = "%s %s 100" % (kind, ref)
        lines.append(("`range` 100 (with values), %s keys: req/s against "
                      "Redis's keys-only" % kind,
                      ratio(m(q, "ak1", "rps"), m(r, "redis", "rps")),
                      ratio(m(q, "ak4", "rps"), m(r, "redis", "rps")),
                      "at least 0.8x"))
    f1, f4 = m("floor count1k", "ak1", "cpu"), m("floor count1k", "ak4", "cpu")
    for kind in ("string", "integer"):
        for l in ("10", "100"):
            q = "%s keys %s" % (kind, l)
            c1, c4 = m(q, "ak1", "cpu"), m(q, "ak4", "cpu")
            lines.append(("CPU/req of `keys` %s, %s keys, -t 4 over -t 1"
                          % (l, kind), "", ratio(c4, c1), "at most 1.15x"))
            if f1 and f4 and c1 and c4:
                # a net cost within a tenth of the floor is the noise of
                # two medians: show both nets, not their ratio
                net = (ratio(c4 - f4, c1 - f1) if c1 - f1 > f1 / 10 else
                       "%.2f against %.2f µs" % (c4 - f4, c1 - f1))
                lines.append((
                    "the same, less each server's request floor", "",
                    net, "(the range's own cost)"))
    if f1 and f4:
        lines.append(("the request floor (`floor count1k`: a count of "
                      "1000 integer keys from the radix counts, 4 "
                      "connections), CPU/req -t 4 over -t 1", "",
                      ratio(f4, f1), ""))
    lines.append(("`count - +` (all keys) req/s against ZLEXCOUNT - +",
                  ratio(m("count all", "ak1", "rps"),
                        m("string zlexcount", "redis", "rps"), 4),
                  ratio(m("count all", "ak4", "rps"),
                        m("string zlexcount", "redis", "rps"), 4),
                  "at least 0.5x"))
    for kind, ref in (("string", "zlexcount1k"), ("integer", "zcount1k")):
        lines.append(("count of 1000 %s keys: req/s against %s" % (
                          kind, ref.replace("1k", "").upper()),
                      ratio(m("%s count1k" % kind, "ak1", "rps"),
                            m("%s %s" % (kind, ref), "redis", "rps")),
                      ratio(m("%s count1k" % kind, "ak4", "rps"),
                            m("%s %s" % (kind, ref), "redis", "rps")),
                      "at least 0.5x"))
    a1, a4, mc = (medians.get(("ins16", s)) for s in ("ak1", "ak4", "mc1"))
    if a1 and mc:
        lines.append(("new string keys (ins16): CPU/set memcached over "
                      "anchorkv, and sets/s anchorkv over memcached",
                      "%s / %s" % (ratio(mc[4], a1[4]), ratio(a1[1], mc[1])),
                      "%s / %s" % (ratio(mc[4], a4[4]), ratio(a4[1], mc[1]))
                      if a4 else "n/a",
                      "at least 1x / 1x"))
    w("### Against the targets of issue 11\n")
    w("Ratios of the medians above (higher is better for anchorkv, except "
      "the -t 4 over -t 1 CPU rows).\n")
    w("| target | anchorkv -t 1 | anchorkv -t 4 | wanted |")
    w("| --- | ---: | ---: | --- |")
    for row in lines:
        w("| %s | %s | %s | %s |" % row)
    w("")


def write_plot(medians, outdir, plotdir):
    servers = [s for s in SERVERS if any((wl, s) in medians
                                         for wl in WORKLOADS)]
    for i, name in ((1, "ops"), (4, "cpu")):
        with open("%s/%s.dat" % (plotdir, name), "w") as fp:
            for wl in WORKLOADS:
                vals = []
                for s in servers:
                    m = medians.get((wl, s))
                    v = m[i] / 1000 if m and i == 1 else m[i] if m else None
                    vals.append("?" if v is None else "%.3f" % v)
                fp.write("%s %s\n" % (wl, " ".join(vals)))
    cols = " ".join(
        "'%s/%%s.dat' using %d:xtic(1) title '%s'%s" % (
            plotdir, i + 2, SERVER_NAMES[s],
            "," if i < len(servers) - 1 else "")
        for i, s in enumerate(servers))
    with open(plotdir + "/bench.gp", "w") as fp:
        fp.write("""set terminal pngcairo size 1100,900 noenhanced font ',10'
set output '%s/bench.png'
set datafile missing '?'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set key outside right top vertical
set grid ytics
set multiplot layout 2,1
set title 'throughput (thousand ops/s, higher is better; multiget: 16-key requests)'
plot %s
set title 'server CPU per operation (microseconds, lower is better)'
plot %s
unset multiplot
""" % (outdir, cols.replace("%s", "ops"), cols.replace("%s", "cpu")))


def cmd_docs(readme, latest):
    marker = "<!-- BENCH RESULTS -->\n"
    text = open(readme).read()
    head, tail = text.split(marker, 1)
    # what follows the results: the next marker or top-level section
    ends = [m.start() + 1 for m in re.finditer(r"\n(<!-- |## )", "\n" + tail)]
    rest = tail[ends[0] - 1:] if ends else ""
    body = []
    for line in open(latest).read().splitlines()[1:]:
        if line.startswith("#"):
            line = "#" + line
        body.append(line)
    body = "\n".join(body).strip("\n")
    new = ("### Latest results\n\n" + body +
           "\n\n![ops/s and server CPU per operation]"
           "(../tests/bench/results/bench.png)\n\n")
    with open(readme, "w") as fp:
        fp.write(head + marker + "\n" + new + rest)


HR_SERVERS = [("ak", "anchorkv"), ("mc", "memcached"),
              ("lru", "Redis allkeys-lru"), ("lfu", "Redis allkeys-lfu")]


def cmd_hitratio(raw, out_md, command):
    rows = {}
    order = []
    with open(raw) as fp:
        for line in fp:
            f = line.rstrip("\n").split("\t")
            if len(f) < 5:
                continue
            key = (f[0], int(f[1]), int(f[2]))
            if key not in rows:
                rows[key] = {}
                order.append(key)
            rows[key].setdefault(f[3], []).append(kv(" ".join(f[4:])))
    runs = max((len(v) for r in rows.values() for v in r.values()),
               default=1)
    # a row played more than once (BENCH_HR_ROUNDS): each figure's median
    for r in rows.values():
        for k, v in r.items():
            r[k] = {f: statistics.median(x[f] for x in v if f in x)
                    for f in v[0]}
    w = ["## Hit ratio at equal memory (make bench, section 7)", "",
         "Cache-aside replay (tests/bench/hitratio.c): one connection, "
         "batches of 64 gets, a set for each miss; the hit ratio is over "
         "the second half of the trace. Servers -t 2 -m MB; Redis "
         "maxmemory MB. *sim* columns: exact LRU and S3-FIFO simulated at "
         "the items anchorkv held; where values have many sizes, S3-FIFO "
         "at its bytes too (stats bytes; an item weighs 48 bytes + key + "
         "value): a policy that weighs sizes holds more small items than "
         "a FIFO of as many items could hold in its memory. Points: "
         "hundredths of hit ratio." +
         (" Each figure is the median of the runs of its row (up to %d)."
          % runs if runs > 1 else ""), "",
         "Made by `%s`." % command, ""]
    head = ("| trace | size | MB | " +
            " | ".join(n for _, n in HR_SERVERS) +
            " | anchorkv - best peer | sim LRU | sim S3-FIFO | "
            "anchorkv - sim S3-FIFO | sim S3-FIFO at ak's bytes | "
            "items ak / mc | CPU us/req ak / mc / lfu |")
    w += [head, "|" + "---|" * (head.count("|") - 1)]
    deltas, sims, items, bsims = [], [], [], []
    for key in order:
        r = rows[key]
        if key[0] == "fill" or not all(k in r for k, _ in HR_SERVERS):
            continue
        hit = {k: r[k]["hit"] for k, _ in HR_SERVERS}
        best = max(hit["mc"], hit["lru"], hit["lfu"])
        d = (hit["ak"] - best) * 100
        sd = (hit["ak"] - r["ak"]["s3fifo"]) * 100
        deltas.append(d)
        sims.append(sd)
        items.append(r["ak"]["items"] / max(1, r["mc"]["items"]))
        cpu = " / ".join("%.2f" % r[k]["cpu_us"] if "cpu_us" in r[k] else "-"
                         for k in ("ak", "mc", "lfu"))
        bsim = "-"
        if "s3fifo_bytes" in r["ak"]:
            bsims.append((hit["ak"] - r["ak"]["s3fifo_bytes"]) * 100)
            bsim = "%.4f (%+.1f)" % (r["ak"]["s3fifo_bytes"], bsims[-1])
        w.append("| %s | %d %% | %d | %s | %+.1f | %.4f | %.4f | %+.1f | "
                 "%s | %d / %d | %s |" % (
                     key[0], key[1], key[2],
                     " | ".join("%.4f" % hit[k] for k, _ in HR_SERVERS),
                     d, r["ak"]["lru"], r["ak"]["s3fifo"], sd, bsim,
                     r["ak"]["items"], r["mc"]["items"], cpu))
    if deltas:
        w += ["", "Over %d rows: anchorkv - best peer %+.2f points on "
              "average, %+.2f at worst; anchorkv - its simulated policy "
              "%+.2f points on average, %+.2f at worst; items held %.3f "
              "of memcached's on average, %.3f at least." % (
                  len(deltas), statistics.mean(deltas), min(deltas),
                  statistics.mean(sims), min(sims),
                  statistics.mean(items), min(items))]
        if bsims:
            w[-1] += (" Over the %d rows of many sizes, anchorkv - S3-FIFO "
                      "at its bytes %+.2f points on average, %+.2f at "
                      "worst." % (len(bsims), statistics.mean(bsims),
                                  min(bsims)))
    fills = [k for k in order if k[0] == "fill" and
             all(n in rows[k] for n, _ in HR_SERVERS)]
    if fills:
        w += ["", "### Items held at equal memory, one value size", "",
              "`hitratio fill`: each server at %d MB is sent 1.5 times the "
              "keys that fit (key:<n>, up to 10 bytes) with values of one "
              "size, then asked how many items it holds (stats curr_items, "
              "DBSIZE)." % fills[0][2], "",
              "| value bytes | MB | " +
              " | ".join(n for _, n in HR_SERVERS) + " | anchorkv / "
              "memcached |", "|" + "---|" * (len(HR_SERVERS) + 3)]
        ratios = []
        for k in fills:
            r = rows[k]
            ratios.append(r["ak"]["items"] / max(1, r["mc"]["items"]))
            w.append("| %d | %d | %s | %.3f |" % (
                k[1], k[2], " | ".join("%d" % r[n]["items"]
                                       for n, _ in HR_SERVERS),
                ratios[-1]))
        w += ["", "anchorkv holds %.3f of memcached's items on average, "
              "%.3f at least." % (statistics.mean(ratios), min(ratios))]
    with open(out_md, "w") as fp:
        fp.write("\n".join(w) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "hitratio":
        cmd_hitratio(*sys.argv[2:5])
    elif sys.argv[1] == "docs":
        cmd_docs(*sys.argv[2:4])
    elif sys.argv[1] == "parse":
        cmd_parse(*sys.argv[2:9])
    else:
        cmd_report(*sys.argv[2:7])
