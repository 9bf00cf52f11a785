"""The range extension (anchorkv only): range, ranges, rrange, rranges,
keys, count, delete_range. Semantics: the range extension in
protocol/PROTOCOL.md. Expected answers come from keyspace.Model, an
independent model of the ordered keyspace.

These tests flush the shared server first: a range sees every key.
"""
import base64
import itertools
import re
import time

import pytest

from keyspace import Model, inverted, is_int_key

pytestmark = pytest.mark.anchorkv_only

BAD_RANGE = b"CLIENT_ERROR bad range\r\n"

# Keys chosen for the order rules: integers by value (not by their digits),
# then other keys bytewise with prefixes first; near-integers are strings.
ORDER_KEYS = [
    b"0", b"1", b"2", b"9", b"10", b"11", b"100", b"1000000",
    b"18446744073709551614", b"18446744073709551615",
    b"+1", b"-1", b"00", b"007", b"01", b"1.5", b"18446744073709551616",
    b"1a", b"99999999999999999999", b"A", b"Z", b"a", b"aa", b"aaa",
    b"ab", b"b", b"ba", b"z", b"~", b"\x80", b"\xc3\xa9", b"\xff",
]


@pytest.fixture
def rc(conn):
    """A connection to the shared server, emptied."""
    conn.send(b"flush_all\r\n")
    conn.expect(b"OK\r\n")
    return conn


def fill(c, model, keys, value_of=None, flags_of=None):
    out = []
    for key in keys:
        v = value_of(key) if value_of else b"v-" + key
        f = flags_of(key) if flags_of else len(key)
        out.append(b"set %s %d 0 %d noreply\r\n%s\r\n" % (key, f, len(v), v))
        model.set(key, f, v)
    c.send(b"".join(out))
    assert c.cmd("version").startswith(b"VERSION ")


def do_range(c, cmd, lo, hi, count=None):
    line = b"%s %s %s" % (cmd, lo, hi)
    if count is not None:
        line += b" %d" % count
    c.send(line + b"\r\n")
    if cmd in (b"range", b"rrange"):
        return c.read_values()
    if cmd in (b"ranges", b"rranges"):
        return c.read_values(with_cas=True)
    if cmd == b"keys":
        return c.read_keys()
    raise ValueError(cmd)


def expect_range(c, model, cmd, lo, hi, count=None, cap=10000):
    n = min(100 if count is None else count, cap)
    keys = model.range(lo, hi, n, reverse=cmd.startswith(b"rr"))
    got = do_range(c, cmd, lo, hi, count)
    if cmd == b"keys":
        assert got == keys, (cmd, lo, hi, count)
        return got
    assert [g[0] for g in got] == keys, (cmd, lo, hi, count)
    for g in got:
        assert (g[1], g[2]) == model.items[g[0]], g[0]
    return [g[0] for g in got]


def test_key_classes_and_order(rc):
    m = Model()
    # insert in a scrambled order
    fill(rc, m, ORDER_KEYS[::-1][::2] + ORDER_KEYS[::-1][1::2])
    want = [k for k in ORDER_KEYS]
    assert [k for k in m.keys_in(b"-", b"+")] == want
    rc.send(b"keys - + 1000\r\n")
    assert rc.read_keys() == want
    rc.send(b"rrange - + 1000\r\n")
    assert [g[0] for g in rc.read_values()] == want[::-1]
    rc.send(b"count - +\r\n")
    rc.expect(b"COUNT %d\r\n" % len(want))
    ints = [k for k in want if is_int_key(k)]
    assert ints == want[:10]
    rc.send(b"count - [18446744073709551615\r\n")
    rc.expect(b"COUNT 10\r\n")
    # "007" and "-1" are string keys, after every integer
    rc.send(b"keys [007 [01\r\n")
    assert rc.read_keys() == [b"007", b"01"]


def test_range_values_flags_and_cas(rc):
    m = Model()
    keys = [b"5", b"50", b"k1", b"k2"]
    fill(rc, m, keys, value_of=lambda k: b"val\r\nEND\r\n\x00" + k,
         flags_of=lambda k: 4000000000 + len(k))
    rc.send(b"range - +\r\n")
    assert rc.read_values() == [(k,) + m.items[k] for k in keys]
    gets = rc.gets(*keys)
    rc.send(b"ranges - +\r\n")
    got = rc.read_values(with_cas=True)
    assert [(g[0], g[1], g[2]) for g in got] == [(k,) + m.items[k]
                                                 for k in keys]
    for g in got:
        assert g[3] == gets[g[0]][2]
    rc.send(b"rranges - +\r\n")
    assert rc.read_values(with_cas=True) == got[::-1]
    # exact bytes of one reply
    rc.send(b"range [50 [50\r\n")
    rc.expect(b"VALUE 50 4000000002 13\r\nval\r\nEND\r\n\x0050\r\nEND\r\n")
    rc.send(b"keys [k1 [k2\r\n")
    rc.expect(b"KEY k1\r\nKEY k2\r\nEND\r\n")
    rc.send(b"count [k1 [k2\r\n")
    rc.expect(b"COUNT 2\r\n")
    rc.send(b"range [zz +\r\n")
    rc.expect(b"END\r\n")
    rc.send(b"count [zz +\r\n")
    rc.expect(b"COUNT 0\r\n")


BOUND_KEYS = [b"0", b"1", b"5", b"10", b"18446744073709551615", b"007",
              b"a", b"ab", b"b", b"zz"]


def bounds():
    out = [b"-", b"+"]
    for k in BOUND_KEYS:
        out += [b"[" + k, b"(" + k]
    return out


def test_every_bound_form(rc):
    m = Model()
    # present: some of the bound keys, plus keys between them
    fill(rc, m, [b"1", b"3", b"5", b"7", b"10", b"12", b"007", b"a", b"aa",
                 b"ab", b"abc", b"b", b"c", b"zz", b"zzz"])
    checked = 0
    for lo, hi in itertools.product(bounds(), bounds()):
        if inverted(lo, hi):
            for cmd in (b"range", b"keys", b"count", b"rrange"):
                rc.send(b"%s %s %s\r\n" % (cmd, lo, hi))
                rc.expect(BAD_RANGE)
            continue
        for cmd in (b"range", b"rrange", b"keys"):
            expect_range(rc, m, cmd, lo, hi, 1000)
        rc.send(b"count %s %s\r\n" % (lo, hi))
        rc.expect(b"COUNT %d\r\n" % len(m.keys_in(lo, hi)))
        checked += 1
    assert checked > 150


@pytest.mark.parametrize("args", [
    b"x +", b"- x", b"a b", b"[ +", b"( +", b"- [", b"{a +", b"]a +",
    b"[b [a", b"(b (a", b"[10 [9", b"[a [10", b"+ -", b"+ [a", b"[a -",
    b"- + 0", b"- + -1", b"- + abc", b"- + 1.5", b"- + 1x", b"- + +5",
    b"[" + b"k" * 251 + b" +",
])
def test_bad_range(rc, args):
    for cmd in (b"range", b"ranges", b"rrange", b"rranges", b"keys"):
        rc.send(cmd + b" " + args + b"\r\n")
        rc.expect(BAD_RANGE)
    if args.count(b" ") == 1:
        rc.send(b"count " + args + b"\r\n")
        rc.expect(BAD_RANGE)
        rc.send(b"delete_range " + args + b"\r\n")
        rc.expect(BAD_RANGE)
    assert rc.cmd("version").startswith(b"VERSION ")


def test_nul_in_range_bounds_ends_the_line(rc):
    """A NUL ends a command line as in memcached (PROTOCOL.md, "Lines and
    tokens"), range commands included: a bound never holds a NUL, and the
    line answers as the line cut at the NUL does (it used to be refused as
    a bad range)."""
    keys = [b"a", b"ab", b"b", b"c", b"5"]
    m = Model()

    fill(rc, m, keys)

    def answer(cmd, args):
        if cmd == b"delete_range":
            fill(rc, m, keys)	# again: delete_range takes them
        rc.send(b"%s %s\r\nversion\r\n" % (cmd, args))
        got = rc.recv_until(b"VERSION ")
        rc.recv_line()
        return got

    for cmd in (b"range", b"ranges", b"rrange", b"rranges", b"keys",
                b"count", b"delete_range"):
        for args in (b"[a\0 +", b"- (a\0zz", b"[a +\0 1", b"- + 2\0 x",
                     b"[\0a +"):
            cut = args[:args.index(b"\0")]
            want = answer(cmd, cut)
            assert answer(cmd, args) == want, (cmd, args, want)


def test_base64_keys_listed_encoded_and_as_bounds(rc):
    """A key stored with ms ... b may hold any byte (Dalli sends white
    space and non-ASCII keys so); the range replies list it base64 with a
    b at the end of its line, and b[ / b( bounds take a key in base64."""
    raw = [b"a b", b"a\nb", b"a\r\n", b"\0", b"plain"]
    for k in raw:
        rc.send(b"ms %s 2 b F7\r\nhi\r\n" % base64.b64encode(k))
        rc.expect(b"HD\r\n")
    rc.set(b"text", b"t")
    order = sorted(raw + [b"text"])	# bytewise: no integer keys here

    def listed(k):
        return (b"%s b" % base64.b64encode(k)) if k in raw else k

    def bound(c, k):
        return b"b%s%s" % (c, base64.b64encode(k))

    rc.send(b"keys - +\r\n")
    assert rc.recv_until(b"END\r\n") == b"".join(
        b"KEY %s\r\n" % listed(k) for k in order) + b"END\r\n"
    rc.send(b"range - +\r\n")
    want = b""
    for k in order:
        enc = base64.b64encode(k)
        want += (b"VALUE %s 7 2 b\r\nhi\r\n" % enc if k in raw
                 else b"VALUE text 0 1\r\nt\r\n")
    assert rc.recv_until(b"END\r\n") == want + b"END\r\n"
    rc.send(b"rranges - + 1\r\n")
    line = rc.recv_line()
    assert re.fullmatch(rb"VALUE text 0 1 \d+", line), line
    rc.recv_until(b"END\r\n")
    rc.send(b"ranges %s + 1\r\n" % bound(b"[", b"a b"))
    line = rc.recv_line()
    assert re.fullmatch(rb"VALUE %s 7 2 \d+ b" % re.escape(
        base64.b64encode(b"a b")), line), line
    rc.recv_until(b"END\r\n")
    # bounds in base64, and paging on from the last key listed
    for lo in range(len(order)):
        for hi in range(lo, len(order)):
            rc.send(b"count %s %s\r\n" % (bound(b"[", order[lo]),
                                            bound(b"(", order[hi])))
            rc.expect(b"COUNT %d\r\n" % (hi - lo))
    got, frm = [], b"-"
    while True:
        rc.send(b"keys %s + 2\r\n" % frm)
        page = rc.recv_until(b"END\r\n").split(b"\r\n")[:-2]
        got += page
        if len(page) < 2:
            break
        last = page[-1][4:]
        frm = (b"b(" + last[:-2]) if last.endswith(b" b") else b"(" + last
    assert got == [b"KEY %s" % listed(k) for k in order]
    # a base64 bound must decode, and is at most 250 bytes as sent
    for bad in (b"b[", b"b(!!!!", b"b[QQ", b"b[" + b"QUFB" * 63, b"b-",
                b"b+"):
        rc.send(b"count %s +\r\n" % bad)
        rc.expect(BAD_RANGE)
    rc.send(b"count b[%s +\r\n" % (b"QUFB" * 62))	# 186 "A"s
    rc.expect(b"COUNT 5\r\n")
    rc.send(b"delete_range %s %s\r\n" % (bound(b"[", b"\0"),
                                          bound(b"[", b"a\r\n")))
    rc.expect(b"DELETED 3\r\n")


def test_equal_bounds(rc):
    # the brackets do not matter to the from <= to check
    for key in (b"a", b"5"):
        rc.set(key, b"x")
        for lo, hi, want in ((b"[", b"[", [key]), (b"(", b"[", []),
                             (b"[", b"(", []), (b"(", b"(", [])):
            rc.send(b"keys %s%s %s%s\r\n" % (lo, key, hi, key))
            assert rc.read_keys() == want, (lo, hi, key)
            rc.send(b"count %s%s %s%s\r\n" % (lo, key, hi, key))
            rc.expect(b"COUNT %d\r\n" % len(want))
    for lo, hi in ((b"-", b"-"), (b"+", b"+")):
        rc.send(b"range %s %s\r\ncount %s %s\r\n" % (lo, hi, lo, hi))
        rc.expect(b"END\r\nCOUNT 0\r\n")
    rc.send(b"delete_range (a [a\r\n")
    rc.expect(b"DELETED 0\r\n")


@pytest.mark.parametrize("line", [
    b"range -", b"keys", b"ranges", b"rrange +", b"rranges", b"count -",
    b"delete_range -", b"count - + 5", b"range - + 5 6",
    b"delete_range - + noreply x",
])
def test_range_wrong_token_count(rc, line):
    rc.send(line + b"\r\n")
    rc.expect(b"ERROR\r\n")
    assert rc.cmd("version").startswith(b"VERSION ")


def test_delete_range_bad_fourth_token(rc):
    rc.set(b"1", b"x")
    rc.send(b"delete_range - + foo\r\n")
    rc.expect(b"CLIENT_ERROR bad command line format\r\n")
    rc.send(b"count - +\r\n")
    rc.expect(b"COUNT 1\r\n")


def test_count_forms(rc):
    for i in range(5):
        rc.set(b"%d" % i, b"x")
    # digits only, positive; huge counts are capped, not refused
    rc.send(b"keys - + 00\r\n")
    rc.expect(BAD_RANGE)
    rc.send(b"keys - + 99999999999999999999999\r\n")
    assert rc.read_keys() == [b"%d" % i for i in range(5)]
    rc.send(b"keys - + 002\r\n")
    assert rc.read_keys() == [b"0", b"1"]


def test_bound_key_of_250_bytes(rc):
    k250 = b"k" * 250
    rc.set(k250, b"x")
    rc.send(b"keys [" + k250 + b" +\r\n")
    assert rc.read_keys() == [k250]


def test_count_default_and_cap(rc):
    m = Model()
    keys = [b"%d" % i for i in range(150)] + [b"s%03d" % i
                                              for i in range(100)]
    fill(rc, m, keys)
    for cmd in (b"range", b"ranges", b"rrange", b"rranges", b"keys"):
        got = do_range(rc, cmd, b"-", b"+")
        assert len(got) == 100, cmd
    assert expect_range(rc, m, b"keys", b"-", b"+") == keys[:100]
    assert expect_range(rc, m, b"rrange", b"-", b"+") == keys[::-1][:100]
    expect_range(rc, m, b"keys", b"-", b"+", 1)
    expect_range(rc, m, b"keys", b"-", b"+", 249)
    expect_range(rc, m, b"keys", b"-", b"+", 250)
    expect_range(rc, m, b"keys", b"-", b"+", 100000)
    rc.send(b"count - +\r\n")
    rc.expect(b"COUNT 250\r\n")


def test_range_max_caps_count(start_server):
    srv = start_server(["--range-max=7"])
    with srv.conn() as c:
        assert c.stats("settings")["range_max"] == "7"
        for i in range(20):
            c.set(b"%d" % i, b"x")
        for cmd in (b"range", b"ranges", b"rrange", b"rranges", b"keys"):
            assert len(do_range(c, cmd, b"-", b"+")) == 7
            assert len(do_range(c, cmd, b"-", b"+", 1000)) == 7
            assert len(do_range(c, cmd, b"-", b"+", 3)) == 3
        c.send(b"count - +\r\n")
        c.expect(b"COUNT 20\r\n")
        c.send(b"delete_range - +\r\n")
        c.expect(b"DELETED 20\r\n")


def page_all(c, cmd, lo, hi, count):
    """Page to the end; return every key in the order returned."""
    seen = []
    reverse = cmd.startswith(b"rr")
    for _ in range(100000):
        got = do_range(c, cmd, lo, hi, count)
        keys = got if cmd == b"keys" else [g[0] for g in got]
        seen += keys
        if len(keys) < count:
            return seen
        if reverse:
            hi = b"(" + keys[-1]
        else:
            lo = b"(" + keys[-1]
    raise AssertionError("paging did not end")


def test_paging_both_directions(rc):
    m = Model()
    keys = ([b"%d" % (i * 37 % 1000) for i in range(400)]
            + [b"key:%05d" % (i * 7919 % 600) for i in range(600)]
            + [b"18446744073709551615", b"007", b"-5"])
    fill(rc, m, keys)
    full = m.keys_in(b"-", b"+")
    assert len(full) == len(set(keys))
    for count in (1, 37, 100):
        assert page_all(rc, b"keys", b"-", b"+", count) == full
    assert page_all(rc, b"range", b"-", b"+", 64) == full
    assert page_all(rc, b"ranges", b"-", b"+", 99) == full
    assert page_all(rc, b"rrange", b"-", b"+", 64) == full[::-1]
    assert page_all(rc, b"rranges", b"-", b"+", 7) == full[::-1]
    # a sub-range, paged from both ends
    sub = m.keys_in(b"[500", b"(key:00300")
    assert page_all(rc, b"keys", b"[500", b"(key:00300", 50) == sub
    assert page_all(rc, b"rrange", b"[500", b"(key:00300", 50) == sub[::-1]


def test_expired_keys_never_returned(rc):
    m = Model()
    live = [b"%d" % i for i in range(0, 40, 2)] + [b"e%02d" % i
                                                   for i in range(0, 40, 2)]
    short = [b"%d" % i for i in range(1, 40, 2)] + [b"e%02d" % i
                                                    for i in range(1, 40, 2)]
    fill(rc, m, live)
    out = []
    for key in short:
        out.append(b"set %s 0 1 1 noreply\r\nx\r\n" % key)
    # already expired: never visible
    for key in (b"100", b"e99"):
        out.append(b"set %s 0 -1 1 noreply\r\nx\r\n" % key)
    rc.send(b"".join(out))
    rc.send(b"count - +\r\n")
    rc.expect(b"COUNT %d\r\n" % (len(live) + len(short)))
    deadline = time.monotonic() + 5
    while True:
        rc.send(b"count - +\r\n")
        line = rc.recv_line()
        if line == b"COUNT %d" % len(live):
            break
        assert time.monotonic() < deadline, line
        time.sleep(0.1)
    want = m.keys_in(b"-", b"+")
    for cmd in (b"range", b"ranges", b"keys"):
        assert page_all(rc, cmd, b"-", b"+", 7) == want
    for cmd in (b"rrange", b"rranges"):
        assert page_all(rc, cmd, b"-", b"+", 7) == want[::-1]
    rc.send(b"delete_range - +\r\n")
    rc.expect(b"DELETED %d\r\n" % len(live))


def test_delete_range(rc):
    m = Model()
    fill(rc, m, [b"%d" % i for i in range(100)]
         + [b"a%02d" % i for i in range(50)] + [b"b", b"c"])
    rc.send(b"delete_range [10 (20\r\n")
    rc.expect(b"DELETED 10\r\n")
    m.delete_range(b"[10", b"(20")
    rc.send(b"delete_range [a10 [a19\r\n")
    rc.expect(b"DELETED 10\r\n")
    m.delete_range(b"[a10", b"[a19")
    rc.send(b"delete_range [a10 [a19\r\n")
    rc.expect(b"DELETED 0\r\n")
    # noreply: the next reply is the next command's
    rc.send(b"delete_range (a48 + noreply\r\ncount - +\r\n")
    m.delete_range(b"(a48", b"+")
    rc.expect(b"COUNT %d\r\n" % len(m.items))
    assert page_all(rc, b"keys", b"-", b"+", 30) == m.keys_in(b"-", b"+")
    assert page_all(rc, b"range", b"-", b"+", 30) == m.keys_in(b"-", b"+")
    assert rc.get(b"15", b"a15", b"a49", b"b", b"9", b"a48") == {
        b"9": m.items[b"9"][1], b"a48": m.items[b"a48"][1]}
    # the keys can be stored again
    assert rc.store("add", b"15", b"new") == b"STORED"
    rc.send(b"keys [14 [16\r\n")
    assert rc.read_keys() == [b"15"]
    rc.send(b"delete_range - +\r\n")
    rc.expect(b"DELETED %d\r\n" % (len(m.items) + 1))
    rc.send(b"count - +\r\nrange - +\r\n")
    rc.expect(b"COUNT 0\r\nEND\r\n")


def test_range_after_flush_and_overwrite(rc):
    for i in range(30):
        rc.set(b"%d" % i, b"old")
    rc.send(b"flush_all\r\n")
    rc.expect(b"OK\r\n")
    rc.send(b"keys - +\r\ncount - +\r\n")
    rc.expect(b"END\r\nCOUNT 0\r\n")
    rc.set(b"5", b"new")
    rc.set(b"5", b"newer", flags=2)
    rc.send(b"range - +\r\n")
    rc.expect(b"VALUE 5 2 5\r\nnewer\r\nEND\r\n")


def test_range_big_values(rc):
    value = bytes(range(256)) * 400	# 100 kB
    for i in range(40):
        rc.set(b"big%02d" % i, value)
    rc.send(b"range - + 40\r\n")
    got = rc.read_values()
    assert [g[0] for g in got] == [b"big%02d" % i for i in range(40)]
    assert all(g[2] == value for g in got)


def test_range_stats(rc):
    s0 = rc.stats()
    for i in range(5):
        rc.set(b"%d" % i, b"x")
        rc.set(b"s%d" % i, b"x")
    rc.send(b"range - + 3\r\nkeys - +\r\nrrange - +\r\ncount - +\r\n"
            b"delete_range [s3 +\r\n")
    assert len(rc.read_values()) == 3
    assert len(rc.read_keys()) == 10
    assert len(rc.read_values()) == 10
    rc.expect(b"COUNT 10\r\nDELETED 2\r\n")
    s1 = rc.stats()
    for name in ("cmd_range", "cmd_count", "cmd_delete_range",
                 "range_items", "curr_int_items", "curr_str_items"):
        assert s1[name].isdigit(), name
    assert int(s1["cmd_range"]) - int(s0["cmd_range"]) == 3
    assert int(s1["cmd_count"]) - int(s0["cmd_count"]) == 1
    assert int(s1["cmd_delete_range"]) - int(s0["cmd_delete_range"]) == 1
    assert int(s1["range_items"]) - int(s0["range_items"]) == 23
    assert int(s1["curr_int_items"]) == 5
    assert int(s1["curr_str_items"]) == 3
    assert int(s1["curr_items"]) == 8
    own = rc.stats("anchorkv")
    for name in ("cmd_range", "cmd_count", "cmd_delete_range", "range_items",
                 "curr_int_items", "curr_str_items", "index_bytes",
                 "shards", "partitions", "partition_splits",
                 "partition_merges"):
        assert own[name].isdigit(), name
    assert own["curr_int_items"] == "5"
    assert int(own["range_items"]) >= int(s1["range_items"])


def test_range_pipelined_with_classic(rc):
    rc.send(b"set 1 0 0 1\r\na\r\nkeys - +\r\nset 2 0 0 1\r\nb\r\n"
            b"range - +\r\ndelete 1\r\ncount - +\r\nget 1 2\r\n")
    rc.expect(b"STORED\r\nKEY 1\r\nEND\r\nSTORED\r\n"
              b"VALUE 1 0 1\r\na\r\nVALUE 2 0 1\r\nb\r\nEND\r\n"
              b"DELETED\r\nCOUNT 1\r\nVALUE 2 0 1\r\nb\r\nEND\r\n")
