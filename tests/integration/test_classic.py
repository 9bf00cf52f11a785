"""The memcached 1.6 text protocol, command by command, byte for byte.

Every expected reply here was checked against memcached 1.6.18 (run the
suite with ANCHORKV_BIN=/usr/bin/memcached ANCHORKV_FLAVOR=memcached).
Tests share one server and use their own key prefix (the `prefix` fixture).
"""
import time

import pytest

import mc
from conftest import is_memcached


def k(prefix, name):
    return (prefix + name).encode()


# --- storage commands -------------------------------------------------------

def test_set_get(conn, prefix):
    key = k(prefix, "a")
    assert conn.set(key, b"hello", flags=42) == b"STORED"
    conn.send(b"get " + key + b"\r\n")
    conn.expect(b"VALUE " + key + b" 42 5\r\nhello\r\nEND\r\n")
    # set replaces, flags and length included
    assert conn.set(key, b"hi", flags=7) == b"STORED"
    conn.send(b"get " + key + b"\r\n")
    conn.expect(b"VALUE " + key + b" 7 2\r\nhi\r\nEND\r\n")


def test_get_miss(conn, prefix):
    conn.send(b"get " + k(prefix, "nope") + b"\r\n")
    conn.expect(b"END\r\n")


def test_flags_range(conn, prefix):
    key = k(prefix, "f")
    for flags in (0, 1, 65535, 65536, 4294967295):
        assert conn.set(key, b"x", flags=flags) == b"STORED"
        conn.send(b"get " + key + b"\r\n")
        conn.expect(b"VALUE %s %d 1\r\nx\r\nEND\r\n" % (key, flags))


def test_empty_value(conn, prefix):
    key = k(prefix, "e")
    conn.send(b"set " + key + b" 3 0 0\r\n\r\n")
    conn.expect(b"STORED\r\n")
    conn.send(b"get " + key + b"\r\n")
    conn.expect(b"VALUE " + key + b" 3 0\r\n\r\nEND\r\n")


def test_add(conn, prefix):
    key = k(prefix, "a")
    assert conn.store("add", key, b"one") == b"STORED"
    assert conn.store("add", key, b"two") == b"NOT_STORED"
    assert conn.get1(key) == b"one"


def test_replace(conn, prefix):
    key = k(prefix, "r")
    assert conn.store("replace", key, b"one") == b"NOT_STORED"
    assert conn.get1(key) is None
    assert conn.set(key, b"one") == b"STORED"
    assert conn.store("replace", key, b"two", flags=9) == b"STORED"
    conn.send(b"get " + key + b"\r\n")
    conn.expect(b"VALUE " + key + b" 9 3\r\ntwo\r\nEND\r\n")


def test_append_prepend(conn, prefix):
    key = k(prefix, "ap")
    assert conn.store("append", key, b"x") == b"NOT_STORED"
    assert conn.store("prepend", key, b"x") == b"NOT_STORED"
    assert conn.get1(key) is None
    assert conn.set(key, b"mid", flags=3) == b"STORED"
    # the flags given to append/prepend are ignored
    assert conn.store("append", key, b"_end", flags=5) == b"STORED"
    assert conn.store("prepend", key, b"start_", flags=6) == b"STORED"
    conn.send(b"get " + key + b"\r\n")
    conn.expect(b"VALUE " + key + b" 3 13\r\nstart_mid_end\r\nEND\r\n")


def test_cas(conn, prefix):
    key = k(prefix, "c")
    assert conn.store("cas", key, b"x", cas=1) == b"NOT_FOUND"
    assert conn.set(key, b"v1") == b"STORED"
    _, _, cas1 = conn.gets(key)[key]
    assert conn.store("cas", key, b"v2", cas=cas1 + 1000) == b"EXISTS"
    assert conn.get1(key) == b"v1"
    assert conn.store("cas", key, b"v2", flags=4, cas=cas1) == b"STORED"
    flags, data, cas2 = conn.gets(key)[key]
    assert (flags, data) == (4, b"v2")
    assert cas2 != cas1
    # the old unique no longer matches
    assert conn.store("cas", key, b"v3", cas=cas1) == b"EXISTS"
    assert conn.get1(key) == b"v2"


def test_cas_unique_changes_on_every_update(conn, prefix):
    key = k(prefix, "u")
    seen = []
    conn.set(key, b"1")
    seen.append(conn.gets(key)[key][2])
    conn.store("append", key, b"2")
    seen.append(conn.gets(key)[key][2])
    conn.store("prepend", key, b"3")
    seen.append(conn.gets(key)[key][2])
    conn.set(key, b"5")
    seen.append(conn.gets(key)[key][2])
    assert conn.cmd(b"incr " + key + b" 1") == b"6"
    seen.append(conn.gets(key)[key][2])
    assert conn.cmd(b"touch " + key + b" 0") == b"TOUCHED"
    assert len(set(seen)) == len(seen), seen
    # different keys have different uniques
    other = k(prefix, "u2")
    conn.set(other, b"1")
    assert conn.gets(other)[other][2] not in seen


def test_gets(conn, prefix):
    keys = [k(prefix, "g%d" % i) for i in range(5)]
    for i, key in enumerate(keys):
        conn.set(key, b"val%d" % i, flags=i)
    missing = k(prefix, "missing")
    conn.send(b"gets " + b" ".join(keys[:3] + [missing] + keys[3:])
              + b"\r\n")
    got = conn.read_values(with_cas=True)
    assert [g[:3] for g in got] == [(key, i, b"val%d" % i)
                                    for i, key in enumerate(keys)]
    assert len({g[3] for g in got}) == 5


def test_get_many_keys_in_order(conn, prefix):
    keys = [k(prefix, "m%03d" % i) for i in range(100)]
    for i, key in enumerate(keys):
        if i % 3:
            conn.set(key, b"v%d" % i, noreply=True)
    # duplicates are answered each time, misses are skipped
    req = keys + keys[:2]
    conn.send(b"get " + b" ".join(req) + b"\r\n")
    got = conn.read_values()
    want = [(key, 0, b"v%d" % (i % 100)) for i, key in
            enumerate(req) if (i % 100) % 3]
    assert got == want


def test_value_with_crlf_and_nul(conn, prefix):
    key = k(prefix, "bin")
    value = b"a\r\nEND\r\n\x00\x00b\rc\nVALUE x 0 1\r\n" + bytes(range(256))
    assert conn.set(key, value) == b"STORED"
    conn.send(b"get " + key + b"\r\n")
    conn.expect(b"VALUE %s 0 %d\r\n" % (key, len(value)) + value
                + b"\r\nEND\r\n")


def test_bad_data_chunk(conn, prefix):
    key = k(prefix, "bd")
    assert conn.set(key, b"abc") == b"STORED"
    # the block is <bytes>+2 long and must end in \r\n: here "abcde"
    conn.send(b"set " + key + b" 0 0 3\r\nabcde")
    conn.expect(b"CLIENT_ERROR bad data chunk\r\n")
    # not stored, the old value stays, the connection goes on
    conn.send(b"get " + key + b"\r\n")
    conn.expect(b"VALUE " + key + b" 0 3\r\nabc\r\nEND\r\n")


def test_bad_data_chunk_rest_is_parsed(conn, prefix):
    # memcached consumes exactly <bytes>+2 bytes ("xy\r"); the "\n" left is
    # an empty command line, answered ERROR.
    key = k(prefix, "bd2")
    conn.send(b"set " + key + b" 0 0 1\r\nxy\r\n")
    conn.expect(b"CLIENT_ERROR bad data chunk\r\nERROR\r\n")
    assert conn.get1(key) is None
    assert conn.cmd("version").startswith(b"VERSION ")


# --- command-line errors --------------------------------------------------

@pytest.mark.parametrize("line", [
    b"foo", b"", b"GET x", b"set", b"set x", b"set x 0 0", b"get", b"gets",
    b"gat", b"gats", b"gat 10", b"incr x", b"decr x", b"delete", b"touch x",
    b"cas x 0 0 1", b"verbosity",
])
def test_unknown_or_short_command_is_error(conn, line):
    if line == b"gat 10":
        # "gat <exptime>" without keys: memcached answers END
        conn.send(line + b"\r\n")
        conn.expect(b"END\r\n")
        return
    conn.send(line + b"\r\n")
    conn.expect(b"ERROR\r\n")
    assert conn.cmd("version").startswith(b"VERSION ")


@pytest.mark.parametrize("line", [
    b"set %s abc 0 1", b"set %s -1 0 1", b"set %s 0 abc 1",
    b"set %s 0 0 abc", b"set %s 0 0 -1", b"cas %s 0 0 1 abc",
    b"cas %s 0 0 1 -1",
])
def test_bad_storage_line(conn, prefix, line):
    key = k(prefix, "x")
    conn.send(line % key + b"\r\n")
    conn.expect(b"CLIENT_ERROR bad command line format\r\n")
    # the data block was not read: nothing was stored
    conn.send(b"get " + key + b"\r\n")
    conn.expect(b"END\r\n")


def test_bad_storage_line_data_becomes_command(conn, prefix):
    # memcached cannot trust the length of a bad line, so the data block
    # that follows is read as a command line.
    key = k(prefix, "x")
    conn.send(b"set " + key + b" abc 0 1\r\nx\r\n")
    conn.expect(b"CLIENT_ERROR bad command line format\r\nERROR\r\n")


def test_delete_usage_error(conn, prefix):
    key = k(prefix, "d")
    conn.set(key, b"x")
    conn.send(b"delete " + key + b" 5\r\n")
    conn.expect(b"CLIENT_ERROR bad command line format.  "
                b"Usage: delete <key> [noreply]\r\n")
    assert conn.get1(key) == b"x"
    # "delete <key> 0" is accepted (old clients send a 0 time)
    conn.send(b"delete " + key + b" 0\r\n")
    conn.expect(b"DELETED\r\n")


def test_whitespace_and_bare_lf(conn, prefix):
    key = k(prefix, "ws")
    # a bare \n ends a line too; extra spaces separate tokens
    conn.send(b"set " + key + b" 0 0 1\nx\r\n")
    conn.expect(b"STORED\r\n")
    conn.send(b"get   " + key + b"   \n")
    conn.expect(b"VALUE " + key + b" 0 1\r\nx\r\nEND\r\n")


# --- keys -------------------------------------------------------------------

def test_key_250_ok_251_refused(conn, prefix):
    k250 = (prefix + "k" * 250)[:250].encode()
    k251 = k250 + b"z"
    assert len(k250) == 250
    assert conn.set(k250, b"v") == b"STORED"
    conn.send(b"get " + k250 + b"\r\n")
    conn.expect(b"VALUE " + k250 + b" 0 1\r\nv\r\nEND\r\n")
    conn.send(b"set " + k251 + b" 0 0 1\r\nv\r\n")
    # the bad line is refused; "v" is then an unknown command
    conn.expect(b"CLIENT_ERROR bad command line format\r\nERROR\r\n")
    for line in (b"get " + k251, b"get " + k250 + b" " + k251,
                 b"gets " + k251, b"delete " + k251, b"incr " + k251 + b" 1",
                 b"touch " + k251 + b" 1"):
        conn.send(line + b"\r\n")
        conn.expect(b"CLIENT_ERROR bad command line format\r\n")
    assert conn.get1(k250) == b"v"


CONTROL_KEYS = ["a\x01b", "tab\tkey", "del\x7f", "\x1b[0m"]


def test_keys_with_control_characters(conn, prefix):
    # memcached splits on spaces only and does not enforce protocol.txt's
    # "the key must not include control characters or whitespace"; nor does
    # anchorkv (memcaslap's keys begin with such bytes)
    keys = [k(prefix, ck) for ck in CONTROL_KEYS]
    for i, key in enumerate(keys):
        assert conn.set(key, b"v%d" % i) == b"STORED", key
    conn.send(b"get " + b" ".join(keys) + b"\r\n")
    assert conn.read_values() == [(key, 0, b"v%d" % i)
                                  for i, key in enumerate(keys)]
    conn.send(b"touch " + keys[0] + b" 0\r\n")
    conn.expect(b"TOUCHED\r\n")
    conn.send(b"delete " + keys[0] + b"\r\n")
    conn.expect(b"DELETED\r\n")
    assert conn.get1(keys[0]) is None


def test_keys_with_high_bytes(conn, prefix):
    keys = [k(prefix, "utf8-\xe9").decode().encode("utf-8"),
            k(prefix, "") + b"\x80\xff"]
    for i, key in enumerate(keys):
        assert conn.set(key, b"v%d" % i) == b"STORED", key
    conn.send(b"get " + b" ".join(keys) + b"\r\n")
    assert conn.read_values() == [(key, 0, b"v%d" % i)
                                  for i, key in enumerate(keys)]
    conn.send(b"delete " + keys[0] + b"\r\n")
    conn.expect(b"DELETED\r\n")


# --- gat / gats / touch ---------------------------------------------------

def test_gat_gats(conn, prefix):
    key = k(prefix, "g")
    conn.set(key, b"val", flags=5)
    conn.send(b"gat 100 " + key + b" " + k(prefix, "miss") + b"\r\n")
    conn.expect(b"VALUE " + key + b" 5 3\r\nval\r\nEND\r\n")
    cas = conn.gets(key)[key][2]
    conn.send(b"gats 0 " + key + b"\r\n")
    conn.expect(b"VALUE %s 5 3 %d\r\nval\r\nEND\r\n" % (key, cas))
    conn.send(b"gat abc " + key + b"\r\n")
    conn.expect(b"CLIENT_ERROR invalid exptime argument\r\n")


def test_touch(conn, prefix):
    key = k(prefix, "t")
    conn.send(b"touch " + key + b" 10\r\n")
    conn.expect(b"NOT_FOUND\r\n")
    conn.set(key, b"x")
    conn.send(b"touch " + key + b" 10\r\n")
    conn.expect(b"TOUCHED\r\n")
    conn.send(b"touch " + key + b" abc\r\n")
    conn.expect(b"CLIENT_ERROR invalid exptime argument\r\n")
    assert conn.get1(key) == b"x"


def test_touch_and_gat_change_expiry(conn, prefix):
    kt, kg, kn = k(prefix, "t"), k(prefix, "g"), k(prefix, "n")
    for key in (kt, kg, kn):
        assert conn.set(key, b"x", exptime=1) == b"STORED"
    assert conn.cmd(b"touch " + kt + b" 100") == b"TOUCHED"
    conn.send(b"gat 100 " + kg + b"\r\n")
    assert len(conn.read_values()) == 1
    # kn expires after about 1 s (memcached's clock ticks once a second)
    deadline = time.monotonic() + 4
    while conn.get1(kn) is not None:
        assert time.monotonic() < deadline, "item with exptime 1 lives on"
        time.sleep(0.1)
    time.sleep(1.1)
    assert conn.get1(kt) == b"x"
    assert conn.get1(kg) == b"x"
    # touch with a negative time expires at once
    assert conn.cmd(b"touch " + kt + b" -1") == b"TOUCHED"
    assert conn.get1(kt) is None


# --- delete -----------------------------------------------------------------

def test_delete(conn, prefix):
    key = k(prefix, "d")
    conn.send(b"delete " + key + b"\r\n")
    conn.expect(b"NOT_FOUND\r\n")
    conn.set(key, b"x")
    conn.send(b"delete " + key + b"\r\n")
    conn.expect(b"DELETED\r\n")
    assert conn.get1(key) is None
    conn.send(b"delete " + key + b"\r\n")
    conn.expect(b"NOT_FOUND\r\n")
    assert conn.store("add", key, b"y") == b"STORED"


# --- incr / decr ------------------------------------------------------------

def test_incr_decr(conn, prefix):
    key = k(prefix, "n")
    assert conn.cmd(b"incr " + key + b" 1") == b"NOT_FOUND"
    assert conn.cmd(b"decr " + key + b" 1") == b"NOT_FOUND"
    conn.set(key, b"10", flags=3)
    assert conn.cmd(b"incr " + key + b" 5") == b"15"
    assert conn.cmd(b"incr " + key + b" 0") == b"15"
    assert conn.cmd(b"decr " + key + b" 3") == b"12"
    assert conn.cmd(b"incr " + key + b" 1000") == b"1012"
    flags, data, _ = conn.gets(key)[key]
    assert flags == 3
    assert data == b"1012"
    # decr keeps the length and pads with spaces (memcached does); a
    # client reads the number
    assert conn.cmd(b"decr " + key + b" 1000") == b"12"
    assert int(conn.get1(key)) == 12
    assert conn.cmd(b"incr " + key + b" 1") == b"13"


def test_incr_wraps_at_2_64(conn, prefix):
    key = k(prefix, "w")
    conn.set(key, b"18446744073709551615")
    assert conn.cmd(b"incr " + key + b" 1") == b"0"
    assert int(conn.get1(key)) == 0
    conn.set(key, b"10")
    assert conn.cmd(b"incr " + key + b" 18446744073709551615") == b"9"
    conn.set(key, b"1")
    assert conn.cmd(b"incr " + key + b" 18446744073709551614") \
        == b"18446744073709551615"
    assert conn.get1(key) == b"18446744073709551615"


def test_decr_floor_zero(conn, prefix):
    key = k(prefix, "z")
    conn.set(key, b"5")
    assert conn.cmd(b"decr " + key + b" 100") == b"0"
    assert conn.cmd(b"decr " + key + b" 1") == b"0"
    assert int(conn.get1(key)) == 0
    conn.set(key, b"7")
    assert conn.cmd(b"decr " + key + b" 18446744073709551615") == b"0"


@pytest.mark.parametrize("value", [
    b"abc", b"12a", b"-1", b"", b" x", b"18446744073709551616",
    b"99999999999999999999999",
])
def test_incr_non_numeric(conn, prefix, value):
    key = k(prefix, "nn")
    conn.set(key, value)
    for op in (b"incr", b"decr"):
        conn.send(op + b" " + key + b" 1\r\n")
        conn.expect(b"CLIENT_ERROR cannot increment or decrement "
                    b"non-numeric value\r\n")
    assert conn.get1(key) == value


@pytest.mark.parametrize("delta", [
    b"-1", b"abc", b"5x", b"18446744073709551616", b"1.5",
])
def test_incr_invalid_delta(conn, prefix, delta):
    key = k(prefix, "id")
    conn.set(key, b"10")
    for op in (b"incr", b"decr"):
        conn.send(op + b" " + key + b" " + delta + b"\r\n")
        conn.expect(b"CLIENT_ERROR invalid numeric delta argument\r\n")
    assert conn.get1(key) == b"10"


def test_incr_leading_space_and_zeros(conn, prefix):
    key = k(prefix, "lz")
    conn.set(key, b"007")
    assert conn.cmd(b"incr " + key + b" 1") == b"8"
    conn.set(key, b"99")
    assert conn.cmd(b"incr " + key + b" 1") == b"100"
    assert conn.get1(key) == b"100"


def test_incr_reads_value_as_strtoull(conn, prefix):
    # memcached reads the stored number with strtoull(): leading white
    # space, any number of leading zeros, white space after the digits
    key = k(prefix, "st")
    wrong = []
    for value, want in ((b" 12", b"13"), (b"\t12", b"13"),
                        (b"12\r\n", b"13"),
                        (b"012345678901234567890", b"12345678901234567891")):
        conn.set(key, value)
        got = conn.cmd(b"incr " + key + b" 1")
        if got != want:
            wrong.append((value, got))
    assert not wrong, "incr 1 on these values: %r" % wrong


def test_documented_difference_big_flags(conn, prefix):
    # PROTOCOL.md, differences 1: memcached truncates flags to 32 bits,
    # anchorkv refuses them
    key = k(prefix, "bf")
    conn.send(b"set " + key + b" 4294967296 0 1\r\nx\r\n")
    if is_memcached():
        conn.expect(b"STORED\r\n")
        conn.send(b"get " + key + b"\r\n")
        conn.expect(b"VALUE " + key + b" 0 1\r\nx\r\nEND\r\n")
    else:
        conn.expect(b"CLIENT_ERROR bad command line format\r\nERROR\r\n")
        assert conn.get1(key) is None


def test_documented_difference_long_gat_line(server, prefix):
    # PROTOCOL.md, differences 3: a gat line over 2048 bytes before its
    # newline is streamed like a get line; memcached closes the connection
    keys = [k(prefix, "gat-%04d" % i) for i in range(300)]
    with server.conn() as c:
        c.set(keys[7], b"x")
        line = b"gat 100 " + b" ".join(keys)
        c.send(line[:2500])
        if is_memcached():
            assert c.assert_closed() == b""
            return
        time.sleep(0.2)
        c.send(line[2500:] + b"\r\n")
        assert c.read_values() == [(keys[7], 0, b"x")]


# --- expiry -----------------------------------------------------------------

def test_exptime_forms(conn, prefix):
    now = int(time.time())
    rel = k(prefix, "rel")		# relative, 1 s
    absf = k(prefix, "absf")		# absolute, in the future
    absp = k(prefix, "absp")		# absolute, in the past
    neg = k(prefix, "neg")		# negative: expired at once
    big = k(prefix, "big")		# 30 days in seconds: still relative
    never = k(prefix, "never")
    assert conn.set(rel, b"x", exptime=1) == b"STORED"
    assert conn.set(absf, b"x", exptime=now + 2) == b"STORED"
    assert conn.set(absp, b"x", exptime=now - 10) == b"STORED"
    assert conn.set(neg, b"x", exptime=-1) == b"STORED"
    assert conn.set(big, b"x", exptime=60 * 60 * 24 * 30) == b"STORED"
    assert conn.set(never, b"x", exptime=0) == b"STORED"
    assert conn.get1(absp) is None
    assert conn.get1(neg) is None
    assert conn.get1(rel) == b"x"
    assert conn.get1(absf) == b"x"
    deadline = time.monotonic() + 5
    while conn.get(rel, absf):
        assert time.monotonic() < deadline, "items outlive their exptime"
        time.sleep(0.1)
    assert conn.get1(big) == b"x"
    assert conn.get1(never) == b"x"
    # an expired key is free for add
    assert conn.store("add", rel, b"y") == b"STORED"


# --- noreply ----------------------------------------------------------------

def test_noreply_everywhere(conn, prefix):
    a, n = k(prefix, "a"), k(prefix, "n")
    seq = [
        b"set " + a + b" 1 0 1 noreply\r\nx\r\n",
        b"add " + a + b" 0 0 1 noreply\r\ny\r\n",		# NOT_STORED
        b"replace " + a + b" 2 0 1 noreply\r\nz\r\n",
        b"append " + a + b" 0 0 1 noreply\r\nA\r\n",
        b"prepend " + a + b" 0 0 1 noreply\r\nP\r\n",
        b"cas " + a + b" 0 0 1 1 noreply\r\nq\r\n",		# EXISTS
        b"set " + n + b" 0 0 2 noreply\r\n10\r\n",
        b"incr " + n + b" 5 noreply\r\n",
        b"decr " + n + b" 2 noreply\r\n",
        b"incr " + a + b" 1 noreply\r\n",		# non-numeric
        b"touch " + a + b" 100 noreply\r\n",
        b"delete " + k(prefix, "none") + b" noreply\r\n",
        b"incr " + k(prefix, "none") + b" 1 noreply\r\n",
        b"verbosity 0 noreply\r\n",
    ]
    conn.send(b"".join(seq) + b"get " + a + b" " + n + b"\r\n")
    conn.expect(b"VALUE " + a + b" 2 3\r\nPzA\r\nVALUE " + n
                + b" 0 2\r\n13\r\nEND\r\n")
    # a successful cas with noreply
    cas = conn.gets(a)[a][2]
    conn.send(b"cas %s 0 0 1 %d noreply\r\nC\r\ndelete %s noreply\r\n"
              b"get %s %s\r\n" % (a, cas, n, a, n))
    conn.expect(b"VALUE " + a + b" 0 1\r\nC\r\nEND\r\n")


def test_noreply_one_at_a_time(conn, prefix):
    # each noreply command alone, then a probe: nothing may come before it
    a = k(prefix, "b")
    for line in (b"set " + a + b" 0 0 1 noreply\r\n1\r\n",
                 b"incr " + a + b" 1 noreply\r\n",
                 b"touch " + a + b" 0 noreply\r\n",
                 b"delete " + a + b" noreply\r\n",
                 b"verbosity 1 noreply\r\n",
                 b"verbosity 0 noreply\r\n"):
        conn.send(line)
        conn.send(b"version\r\n")
        line = conn.recv_line()
        assert line.startswith(b"VERSION "), line


# --- small commands ---------------------------------------------------------

def test_version(conn, server):
    line = conn.cmd("version")
    assert line.startswith(b"VERSION ")
    assert len(line.split(b" ")) == 2 and line.split(b" ")[1]
    assert conn.stats()["version"] == line.split(b" ")[1].decode()


def test_verbosity(conn):
    conn.send(b"verbosity 1\r\n")
    conn.expect(b"OK\r\n")
    conn.send(b"verbosity 0\r\n")
    conn.expect(b"OK\r\n")
    conn.send(b"verbosity abc\r\n")
    conn.expect(b"CLIENT_ERROR bad command line format\r\n")


def test_quit(server):
    c = server.conn()
    c.send(b"version\r\nquit\r\nversion\r\n")
    assert c.recv_line().startswith(b"VERSION ")
    assert c.assert_closed() == b""
    c.close()


def test_http_request_closes(server):
    # a line whose last token begins with HTTP/ closes without a reply
    c = server.conn()
    c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert c.assert_closed() == b""
    c.close()


def test_shutdown_disabled(conn):
    conn.send(b"shutdown\r\n")
    conn.expect(b"ERROR: shutdown not enabled\r\n")
    assert conn.cmd("version").startswith(b"VERSION ")


def test_many_connections_share_the_store(server, prefix):
    conns = [server.conn() for _ in range(20)]
    try:
        for i, c in enumerate(conns):
            assert c.set(k(prefix, "c%d" % i), b"%d" % i) == b"STORED"
        for i, c in enumerate(conns):
            j = (i + 7) % 20
            assert c.get1(k(prefix, "c%d" % j)) == b"%d" % j
    finally:
        for c in conns:
            c.close()


def test_reply_never_interleaves_between_connections(server, prefix):
    a, b = server.conn(), server.conn()
    try:
        key = k(prefix, "x")
        a.set(key, b"A" * 100000)
        a.send(b"get " + key + b"\r\n")
        b.send(b"version\r\n")
        assert b.recv_line().startswith(b"VERSION")
        assert a.read_values() == [(key, 0, b"A" * 100000)]
    finally:
        a.close()
        b.close()


def test_connection_survives_error_storm(conn, prefix):
    junk = b"".join([b"bogus %d\r\n" % i for i in range(50)])
    conn.send(junk + b"version\r\n")
    for _ in range(50):
        conn.expect(b"ERROR\r\n")
    assert conn.recv_line().startswith(b"VERSION ")


def test_mc_timeout_helper_fails_fast(conn):
    # the raw client never blocks forever: a read with nothing to read
    # times out
    t0 = time.monotonic()
    with pytest.raises(OSError):
        conn.recv_line(timeout=0.3)
    assert time.monotonic() - t0 < 2
    assert isinstance(conn, mc.Conn)
