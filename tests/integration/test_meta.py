"""The meta commands mg, me and mn (protocol/PROTOCOL.md, "Meta commands").

Two kinds of test:
- a randomized differential test against Debian's memcached 1.6.18, for
  what 1.6.18 and 1.6.45 (the version PROTOCOL.md follows) agree on: the
  same requests to both servers, the same reply bytes, except the cas
  values (each server's own, learned and compared as such) and the
  seconds of t, l, exp and la, which may differ by one second between
  two servers asked a moment apart;
- fixed sessions for every flag and return code, including what is newer
  than 1.6.18 (C on mg, x known to the parser) and the win/stale flags.

Seed: AKV_META_SEED; steps: AKV_META_STEPS (default 10000).
"""
import base64
import os
import random
import re

import pytest

import conftest
# the memcached 1.6.18 fixture of the classic differential test
from test_classic_diff import reference  # noqa: F401 (a fixture)

SEED = int(os.environ.get("AKV_META_SEED", "4506"))
STEPS = int(os.environ.get("AKV_META_STEPS", "10000"))


def read_reply(c):
    """Every line up to the VERSION line; a VA line with its data block."""
    out = []
    while True:
        line = c.recv_line()
        if line.startswith(b"VERSION "):
            return out
        if line.startswith(b"VA "):
            n = int(line.split(b" ")[1])
            out.append(line)
            out.append(c.recv_exactly(n + 2))
        else:
            out.append(line)


# ---- the differential test ------------------------------------------------

class Gen:
    def __init__(self, rng, prefix):
        self.rng = rng
        self.keys = [b"%sm%d" % (prefix, i) for i in range(5)]

    def key(self):
        """(key token, b flag wanted)"""
        r = self.rng.random()
        if r < 0.03:
            return b"K" * 251, False
        k = self.rng.choice(self.keys)
        if r < 0.15:
            return base64.b64encode(k), True
        if r < 0.17:
            return b"%%%%%%", True		# not base64
        return k, False

    def flag(self):
        rng = self.rng
        r = rng.random()
        if r < 0.60:
            return rng.choice([b"v", b"s", b"t", b"f", b"c", b"k", b"h",
                               b"l", b"u", b"q"])
        if r < 0.70:
            return b"O" + rng.choice([b"", b"1", b"abc", b"x" * 31,
                                      b"y" * 32])
        if r < 0.80:
            # R's tokens stay 2 s or more away from every TTL used here,
            # so that no second boundary between two servers decides
            if rng.random() < 0.3:
                return b"R" + rng.choice([b"5", b"50", b"250", b"1000",
                                          b"abc", b""])
            return rng.choice([b"T", b"N"]) + rng.choice(
                [b"0", b"30", b"100", b"200", b"abc", b""])
        if r < 0.86:
            return rng.choice([b"P", b"L"]) + rng.choice([b"", b"x/y"])
        if r < 0.92:
            # known to both parsers, unused by mg
            return rng.choice([b"F5", b"Fx", b"C12", b"Cx", b"MS", b"J1",
                               b"Jx", b"D2", b"Dx", b"I"])
        return rng.choice([b"Z", b"w", b"!", b"V"])	# unknown flags

    def request(self):
        rng = self.rng
        r = rng.random()
        if r < 0.25:
            k = rng.choice(self.keys)
            v = bytes(rng.choice(b"abcdef") for _ in range(rng.randrange(8)))
            return b"set %s %d %d %d\r\n%s\r\n" % (
                k, rng.choice([0, 0, 7, 4294967295]),
                rng.choice([0, 0, 100, 300]), len(v), v)
        if r < 0.30:
            return b"delete %s\r\n" % rng.choice(self.keys)
        if r < 0.33:
            return b"touch %s %d\r\n" % (rng.choice(self.keys),
                                         rng.choice([0, 150]))
        if r < 0.36:
            return b"mn\r\n"
        if r < 0.42:
            key, b = self.key()
            return b"me %s%s\r\n" % (key, b" b" if b else b"")
        if r < 0.62:
            return self.ms()
        if r < 0.70:
            return self.md_ma()
        key, b = self.key()
        flags = [self.flag() for _ in range(rng.randrange(0, 7))]
        if b:
            flags.insert(rng.randrange(len(flags) + 1), b"b")
        return b" ".join([b"mg", key] + flags) + b"\r\n"


    def ms(self):
        """An ms request: a list of bytes and ("cas", key, delta)
        placeholders (the key's current cas on each server, plus delta)."""
        rng = self.rng
        key, b = self.key()
        if len(key) > 250:
            # 1.6.18 reads the block as commands, 1.6.45 drops it
            key = rng.choice(self.keys)
        v = bytes(rng.choice(b"abcdef0123") for _ in range(rng.randrange(6)))
        flags = []
        for _ in range(rng.randrange(0, 5)):
            r = rng.random()
            if r < 0.45:
                flags.append(rng.choice([b"c", b"k", b"q", b"I", b"u",
                                         b"v", b"h"]))
            elif r < 0.55:
                flags.append(b"O" + rng.choice([b"", b"7", b"o" * 32,
                                                b"o" * 33]))
            elif r < 0.65:
                flags.append(b"T" + rng.choice([b"0", b"100", b"x"]))
            elif r < 0.72:
                flags.append(b"F" + rng.choice([b"0", b"9", b"x",
                                                b"4294967295"]))
            elif r < 0.85:
                flags.append(b"M" + rng.choice([b"S", b"E", b"R", b"A",
                                                b"P", b"x"]))
            else:
                flags.append(rng.choice([b"Z", b"!", b"v"]))
        if b:
            flags.insert(rng.randrange(len(flags) + 1), b"b")
        parts = [b"ms ", key, b" "]
        q = rng.random()
        if q < 0.93:
            parts.append(b"%d" % len(v))
        else:
            parts.append(rng.choice([b"-1", b"x", b""]))
        for f in flags:
            parts.append(b" " + f)
        if rng.random() < 0.3 and not b and len(key) <= 250:
            parts += [b" C", ("cas", key, rng.choice([0, 0, -1, 1]))]
        block = v + b"\r\n"
        if rng.random() < 0.04:
            block = v + b"zz\r\n"		# bad data chunk
        return parts + [b"\r\n", block]


    def md_ma(self):
        """An md or ma request, with what 1.6.18 and 1.6.45 agree on (md:
        no x, no bad flags: 1.6.18's md says "invalid or duplicate flag"
        for every flag error)."""
        rng = self.rng
        key, b = self.key()
        if len(key) > 250 or key.startswith(b"%"):
            key, b = rng.choice(self.keys), False
        if rng.random() < 0.5:
            pool = [b"q", b"k", b"I", b"T30", b"T0", b"O9", b"Oab",
                    b"P", b"L"]
            cmd = b"md"
        else:
            # incr only: memcached pads a number a decr shortened in
            # place with spaces (PROTOCOL.md, differences, 5)
            pool = [b"q", b"k", b"v", b"t", b"c", b"T30", b"T0", b"N30",
                    b"J5", b"J18446744073709551615", b"D3", b"Dx", b"M+",
                    b"MI", b"Mz", b"O1", b"Z", b"v"]
            cmd = b"ma"
        flags = [rng.choice(pool) for _ in range(rng.randrange(0, 5))]
        if cmd == b"md":
            # no flag twice: 1.6.18 calls it "invalid or duplicate"
            seen = {}
            for f in flags:
                seen.setdefault(f[:1], f)
            flags = list(seen.values())
        elif b"N30" in flags:
            # 1.6.18 answers an item made by N even with q
            flags = [f for f in flags if f != b"q"]
        if b:
            flags.append(b"b")
        parts = [cmd + b" ", key]
        for f in flags:
            parts.append(b" " + f)
        if rng.random() < 0.3 and not b:
            parts += [b" C", ("cas", key, rng.choice([0, 0, 1]))]
        return parts + [b"\r\n"]


def render(req, conn):
    """@req's bytes for one server, its cas placeholders filled with
    what that server's mg says now."""
    if isinstance(req, bytes):
        return req
    out = b""
    for p in req:
        if isinstance(p, tuple):
            conn.send(b"mg %s c\r\n" % p[1])
            line = conn.recv_line()
            cas = (int(line.split(b" c")[1].split(b" ")[0])
                   if line.startswith(b"HD") else 1)
            out += b"%d" % max(0, cas + p[2])
        else:
            out += p
    return out


SECONDS = re.compile(rb"^([tl])(-?[0-9]+)$")


def normalize(lines, cas_seen):
    """Each reply line as a list of comparable parts: cas values replaced
    by the order in which the server first showed them, the seconds of t,
    l, exp and la kept as numbers for a loose comparison."""
    out = []
    for line in lines:
        if line.startswith(b"ME "):
            parts = []
            for tok in line.split(b" "):
                k, _, v = tok.partition(b"=")
                if k == b"cas":
                    parts.append(("cas", cas_seen.setdefault(
                        v, len(cas_seen))))
                elif k in (b"exp", b"la"):
                    # 1.6.18 prints exp with the sign turned
                    n = int(v)
                    parts.append((k, -1 if n == -1 else abs(n)))
                elif k == b"size":
                    # memcached pads a number that shrank in place (an
                    # incr that wrapped) with spaces: only roughly equal
                    parts.append(("size", int(v) // 32))
                else:
                    parts.append(tok)
            out.append(parts)
        elif line[:3] in (b"HD", b"HD ", b"VA ", b"EN", b"EN "):
            parts = []
            for tok in line.split(b" "):
                m = SECONDS.match(tok)
                if tok[:1] == b"c" and tok[1:].isdigit():
                    parts.append(("cas", cas_seen.setdefault(
                        tok[1:], len(cas_seen))))
                elif m:
                    parts.append((m.group(1), int(m.group(2))))
                else:
                    parts.append(tok)
            out.append(parts)
        else:
            out.append([line])
    return out


def same(a, b):
    if len(a) != len(b):
        return False
    for la, lb in zip(a, b):
        if len(la) != len(lb):
            return False
        for x, y in zip(la, lb):
            if (isinstance(x, tuple) and isinstance(y, tuple)
                    and x[0] == y[0] == "size"):
                if abs(x[1] - y[1]) > 1:
                    return False
            elif (isinstance(x, tuple) and isinstance(y, tuple)
                    and x[0] == y[0] and x[0] != "cas"):
                if abs(x[1] - y[1]) > 1 or (x[1] == -1) != (y[1] == -1):
                    return False
            elif x != y:
                return False
    return True


@pytest.mark.skipif(conftest.is_memcached(),
                    reason="the reference would be compared with itself")
def test_meta_differential(server, reference, prefix):
    rng = random.Random(SEED)
    gen = Gen(rng, prefix.encode())
    a, b = server.conn(), reference.conn()
    cas_a, cas_b = {}, {}
    recent = []
    try:
        for k in gen.keys:
            for c in (a, b):
                c.send(b"delete %s\r\n" % k)
                c.recv_line()
        for step in range(STEPS):
            req = gen.request()
            ra, rb = render(req, a), render(req, b)
            a.send(ra + b"version\r\n")
            b.send(rb + b"version\r\n")
            req = rb
            got_a, got_b = read_reply(a), read_reply(b)
            na, nb = normalize(got_a, cas_a), normalize(got_b, cas_b)
            if not same(na, nb):
                tail = "\n".join("%r -> %r" % r for r in recent[-20:])
                pytest.fail("step %d: %r\nserver:    %r\nmemcached: %r\n"
                            "before (equal on both):\n%s\n(seed %d)"
                            % (step, req, got_a, got_b, tail, SEED))
            recent.append((req, got_b))
    finally:
        a.close()
        b.close()


# ---- fixed sessions -------------------------------------------------------

def ask(c, line):
    c.send(line + b"\r\nversion\r\n")
    return read_reply(c)


def test_mg_flags(conn, prefix):
    k = prefix.encode() + b"a"
    conn.send(b"set %s 42 0 5\r\nhello\r\n" % k)
    conn.expect(b"STORED\r\n")
    got = ask(conn, b"mg %s s v f t k Oxy" % k)
    assert got == [b"VA 5 s5 f42 t-1 k%s Oxy" % k, b"hello\r\n"]
    got = ask(conn, b"mg %s" % k)
    assert got == [b"HD"]
    # c is the cas gets shows
    conn.send(b"gets %s\r\n" % k)
    cas = conn.read_values(with_cas=True)[0][3]
    assert ask(conn, b"mg %s c" % k) == [b"HD c%d" % cas]
    # C: no value when the cas matches (1.6.40)
    assert ask(conn, b"mg %s v C%d" % (k, cas)) == [b"HD"]
    assert ask(conn, b"mg %s v C%d" % (k, cas + 1)) == [b"VA 5",
                                                         b"hello\r\n"]
    # T sets the TTL; t before it shows the old one, after it the new
    assert ask(conn, b"mg %s t T100 t" % k) == [
        b"CLIENT_ERROR duplicate flag"]
    assert ask(conn, b"mg %s t T100" % k) == [b"HD t-1"]
    assert ask(conn, b"mg %s T200 t" % k) in ([b"HD t200"], [b"HD t199"])
    # base64 key: the item was set with a plain key, so k returns it plain
    enc = base64.b64encode(k)
    assert ask(conn, b"mg %s b k s" % enc) == [b"HD k%s s5" % k]


def test_mg_miss_q_and_mn(conn, prefix):
    k = prefix.encode() + b"missing"
    assert ask(conn, b"mg %s v" % k) == [b"EN"]
    assert ask(conn, b"mg %s v k O7" % k) == [b"EN k%s O7" % k]
    # q: a miss says nothing; mn closes the pipeline
    conn.send(b"mg %s v q\r\nmg %s v q Oa\r\nmn\r\n" % (k, k))
    conn.expect(b"MN\r\n")
    # q never hides a hit, nor an error
    conn.send(b"set %s 0 0 1\r\nx\r\n" % k)
    conn.expect(b"STORED\r\n")
    assert ask(conn, b"mg %s q" % k) == [b"HD"]
    assert ask(conn, b"mg %s q v" % k) == [b"VA 1", b"x\r\n"]
    assert ask(conn, b"mg %s q Tx" % k) == [
        b"CLIENT_ERROR bad token in command line format"]
    assert ask(conn, b"mn anything") == [b"MN"]


def test_mg_errors(conn, prefix):
    k = prefix.encode() + b"e"
    assert ask(conn, b"mg") == [b"CLIENT_ERROR bad command line format"]
    assert ask(conn, b"mg " + b"k" * 251) == [
        b"CLIENT_ERROR bad command line format"]
    # a 251-byte key is too long also when it is base64
    assert ask(conn, b"mg %s b" % (b"QUJD" * 63)[:252]) == [
        b"CLIENT_ERROR bad command line format"]
    assert ask(conn, b"mg %s v v" % k) == [b"CLIENT_ERROR duplicate flag"]
    assert ask(conn, b"mg %s !" % k) == [b"CLIENT_ERROR invalid flag"]
    assert ask(conn, b"mg %s Tabc" % k) == [
        b"CLIENT_ERROR bad token in command line format"]
    assert ask(conn, b"mg %s O%s" % (k, b"o" * 32)) == [
        b"CLIENT_ERROR opaque token too long"]
    assert ask(conn, b"mg %s b" % b"!!!") == [
        b"CLIENT_ERROR error decoding key"]
    # 20 tokens are allowed, 21 are not
    flags = [b"O1", b"k", b"s", b"t", b"f", b"c", b"h", b"l", b"u", b"q",
             b"v", b"P", b"L", b"T5", b"R1", b"N1", b"F1", b"I"]
    assert ask(conn, b" ".join([b"mg", k] + flags))[0].startswith(b"VA 0 ")
    assert ask(conn, b" ".join([b"mg", k] + flags + [b"D1"])) == [
        b"CLIENT_ERROR options flags are too long"]
    # the last error said is the one answered; an unknown flag stops
    assert ask(conn, b"mg %s Tx Cx" % k) == [
        b"CLIENT_ERROR bad token in command line format"]
    assert ask(conn, b"mg %s Jx Tx" % k) == [
        b"CLIENT_ERROR bad token in command line format"]
    assert ask(conn, b"mg %s Tx Jx" % k) == [
        b"CLIENT_ERROR invalid numeric initial value"]
    assert ask(conn, b"mg %s Tx ! Jx" % k) == [b"CLIENT_ERROR invalid flag"]


def test_mg_key_bytes(conn, prefix):
    k = prefix.encode()
    # a NUL ends the line, as in memcached: "mg <k>a" and "me <k>a"
    conn.send(b"set %sa 0 0 1\r\nx\r\n" % k)
    conn.expect(b"STORED\r\n")
    assert ask(conn, b"mg %sa\0b v" % k) == [b"HD"]
    assert ask(conn, b"mg %sa\0" % k) == [b"HD"]
    assert ask(conn, b"me %sa\0b" % k)[0].startswith(b"ME %sa " % k)
    assert ask(conn, b"md %sa\0 q" % k) == [b"HD"]
    # N creates a key of any bytes; one that a reply line could not carry
    # as it is comes back encoded (memcached: as it is)
    for raw in (b"a b", b"a\0b", b"a\r\nb"):
        enc = base64.b64encode(k + raw)
        assert ask(conn, b"mg %s b v k N30" % enc) == [
            b"VA 0 k%s b W" % enc, b"\r\n"]
        assert ask(conn, b"mg %s b v k" % enc) == [b"VA 0 k%s b Z" % enc,
                                                   b"\r\n"]
        assert ask(conn, b"me %s b" % enc)[0].startswith(b"ME %s " % enc)
        assert ask(conn, b"md %s b" % enc) == [b"HD"]
    # one that can: created, and k returns it as it is, as memcached
    enc = base64.b64encode(k + b"\x01\xff")
    assert ask(conn, b"mg %s b k N30" % enc) == [
        b"HD k%s\x01\xff W" % k]


def test_base64_keys_of_any_bytes_as_memcached(conn, reference, prefix):
    """Dalli sends every key that holds white space or non-ASCII bytes
    base64-encoded with b. anchorkv refused a decoded key holding a space,
    NUL, \\r or \\n (CLIENT_ERROR bad command line format) where memcached
    stores it; now both store it and answer the same bytes (cas uniques
    aside)."""
    ref = reference.conn()
    try:
        for raw in (b"\n", b"contains space", b"\0nul", b"cr\r\nlf\r",
                    b"\xc3\xa9t\xc3\xa9 \x00\xff"):
            enc = base64.b64encode(prefix.encode() + raw)
            for line in (b"ms %s 4 c b F1 T0 MS\r\nabcd" % enc,
                         b"mg %s b v k f" % enc, b"mg %s b s t f" % enc,
                         b"ms %s 2 b MA\r\nef" % enc,
                         b"mg %s b v" % enc, b"md %s b k" % enc,
                         b"mg %s b v" % enc):
                got, want = ask(conn, line), ask(ref, line)
                mask = [re.sub(rb" c\d+", b" c", g) for g in got]
                assert mask == [re.sub(rb" c\d+", b" c", w) for w in want], \
                    (line, got, want)
                assert not got[0].startswith(b"CLIENT_ERROR"), (line, got)
    finally:
        ref.close()


def test_mg_vivify_and_recache(server, prefix):
    k = prefix.encode() + b"viv"
    a, b = server.conn(), server.conn()
    try:
        # the first miss with N creates an empty item and wins
        assert ask(a, b"mg %s v N30 t h" % k) in (
            [b"VA 0 t30 h0 W", b"\r\n"], [b"VA 0 t29 h0 W", b"\r\n"])
        # everyone after it is told that someone else won
        assert ask(b, b"mg %s v N30 s" % k) == [b"VA 0 s0 Z", b"\r\n"]
        assert ask(a, b"mg %s h" % k) == [b"HD h1 Z"]
        # the winner stores the real value: a new item, no flags
        a.send(b"set %s 0 100 3\r\nnew\r\n" % k)
        a.expect(b"STORED\r\n")
        assert ask(b, b"mg %s v" % k) == [b"VA 3", b"new\r\n"]
        # R: the first to see less TTL left than its token wins
        assert ask(a, b"mg %s R30" % k) == [b"HD"]
        assert ask(a, b"mg %s R200" % k) == [b"HD W"]
        assert ask(b, b"mg %s R200" % k) == [b"HD Z"]
        # R before T sees the old TTL, after it the new one
        b.send(b"set %s 0 100 3\r\nnew\r\n" % k)
        b.expect(b"STORED\r\n")
        assert ask(a, b"mg %s T500 R200 t" % k) in ([b"HD t500"],
                                                    [b"HD t499"])
        assert ask(a, b"mg %s R600 T50" % k) == [b"HD W"]
    finally:
        a.close()
        b.close()


def test_mg_no_bump_and_last_access(conn, prefix):
    k = prefix.encode() + b"u"
    conn.send(b"set %s 0 0 1\r\nx\r\n" % k)
    conn.expect(b"STORED\r\n")
    # u: the fetch is not recorded
    assert ask(conn, b"mg %s h u" % k) == [b"HD h0"]
    assert ask(conn, b"mg %s h" % k) == [b"HD h0"]
    assert ask(conn, b"mg %s h l" % k) == [b"HD h1 l0"]


def test_me(conn, prefix):
    k = prefix.encode() + b"dbg"
    assert ask(conn, b"me %s" % k) == [b"EN"]
    conn.send(b"set %s 3 0 4\r\nabcd\r\n" % k)
    conn.expect(b"STORED\r\n")
    conn.send(b"gets %s\r\n" % k)
    cas = conn.read_values(with_cas=True)[0][3]
    # memcached's layout: 48-byte header, cas, key and NUL, flags, data
    size = 48 + 8 + len(k) + 1 + 4 + 4 + 2
    assert ask(conn, b"me %s" % k) == [
        b"ME %s exp=-1 la=0 cas=%d fetch=yes cls=1 size=%d"
        % (k, cas, size)]
    assert ask(conn, b"me %s b" % base64.b64encode(k)) == [
        b"ME %s exp=-1 la=0 cas=%d fetch=yes cls=1 size=%d"
        % (k, cas, size)]
    assert ask(conn, b"me %s b" % b"!!!") == [
        b"CLIENT_ERROR bad command line format"]
    assert ask(conn, b"me") == [b"CLIENT_ERROR bad command line format"]


def test_ms_modes_and_flags(conn, prefix):
    k = prefix.encode() + b"s"
    assert ask(conn, b"ms %s 3 T100 F7 s c\r\nabc" % k)[0].startswith(
        b"HD s3 c")
    assert ask(conn, b"mg %s v f t" % k) in (
        [b"VA 3 f7 t100", b"abc\r\n"], [b"VA 3 f7 t99", b"abc\r\n"])
    # append and prepend keep flags and TTL; s is the new size
    assert ask(conn, b"ms %s 2 MA s\r\nde" % k) == [b"HD s5"]
    assert ask(conn, b"ms %s 1 MP s T5 F1\r\n_" % k) == [b"HD s6"]
    assert ask(conn, b"mg %s v f" % k) == [b"VA 6 f7", b"_abcde\r\n"]
    # add, replace
    assert ask(conn, b"ms %s 1 ME\r\nx" % k) == [b"NS"]
    assert ask(conn, b"ms %sno 1 MR\r\nx" % k) == [b"NS"]
    assert ask(conn, b"ms %sno 1 MA\r\nx" % k) == [b"NS"]
    # append with N creates on a miss, with N's TTL
    assert ask(conn, b"ms %sviv 1 MA N50 s\r\nx" % k) == [b"HD s1"]
    assert ask(conn, b"mg %sviv v t" % k) in ([b"VA 1 t50", b"x\r\n"],
                                              [b"VA 1 t49", b"x\r\n"])
    # cas: C compares in every mode
    cas = int(ask(conn, b"mg %s c" % k)[0].split(b"c")[1])
    assert ask(conn, b"ms %s 1 C%d MA\r\ny" % (k, cas + 1)) == [b"EX"]
    assert ask(conn, b"ms %s 1 C%d\r\ny" % (k, cas + 1)) == [b"EX"]
    assert ask(conn, b"ms %sno 1 C5\r\ny" % k) == [b"NF"]
    assert ask(conn, b"ms %s 1 C%d c\r\ny" % (k, cas))[0].startswith(
        b"HD c")
    # q hides HD only; k and O echo
    conn.send(b"ms %s 1 q\r\nz\r\nms %s 1 q ME\r\nz\r\nmn\r\n" % (k, k))
    conn.expect(b"NS\r\nMN\r\n")
    assert ask(conn, b"ms %s 1 k Oab\r\nz" % k) == [b"HD k%s Oab" % k]


def test_ms_stale_and_win(server, prefix):
    k = prefix.encode() + b"st"
    a, b = server.conn(), server.conn()
    try:
        assert ask(a, b"ms %s 3 T100\r\nold" % k) == [b"HD"]
        cas = int(ask(a, b"mg %s c" % k)[0].split(b"c")[1])
        # I with an older cas: stored, but stale (EX without I)
        assert ask(a, b"ms %s 3 C%d\r\nnew" % (k, cas - 1)) == [b"EX"]
        assert ask(a, b"ms %s 3 C%d I T5\r\nnew" % (k, cas - 1)) == [b"HD"]
        # the first fetch of a stale item wins the recache, the others
        # learn that someone did; the TTL stayed
        assert ask(a, b"mg %s v t" % k) in (
            [b"VA 3 t100 X W", b"new\r\n"], [b"VA 3 t99 X W", b"new\r\n"])
        assert ask(b, b"mg %s v" % k) == [b"VA 3 Z X", b"new\r\n"]
        # the winner's store makes a fresh item
        assert ask(a, b"ms %s 5\r\nfresh" % k) == [b"HD"]
        assert ask(b, b"mg %s v" % k) == [b"VA 5", b"fresh\r\n"]
    finally:
        a.close()
        b.close()


def test_ms_errors(conn, prefix):
    k = prefix.encode() + b"err"
    # no length, a bad length: the line alone is refused
    assert ask(conn, b"ms %s" % k) == [b"CLIENT_ERROR bad command line format"]
    assert ask(conn, b"ms %s x" % k) == [
        b"CLIENT_ERROR bad command line format"]
    assert ask(conn, b"ms %s -1" % k) == [
        b"CLIENT_ERROR bad command line format"]
    # a refused line drops its block
    assert ask(conn, b"ms %s 2 v v\r\nzz" % k) == [
        b"CLIENT_ERROR duplicate flag"]
    assert ask(conn, b"ms %s 2 Mx\r\nzz" % k) == [
        b"CLIENT_ERROR invalid mode for ms M token"]
    assert ask(conn, b"ms %s 2 M\r\nzz" % k) == [
        b"CLIENT_ERROR invalid mode for ms M token"]
    assert ask(conn, b"ms %s 2 O%s\r\nzz" % (k, b"o" * 32)) == [
        b"CLIENT_ERROR opaque token too long"]
    assert ask(conn, b"ms %s 2 q\r\nzzz" % k) == [
        b"CLIENT_ERROR bad data chunk", b"ERROR"]
    # keys: a NUL ends the line ("ms <k>a" has no length; the data block
    # is then a command); a binary key of any bytes is kept and returned
    # encoded
    assert ask(conn, b"ms %sa\0b 1\r\nz" % k) == [
        b"CLIENT_ERROR bad command line format", b"ERROR"]
    enc = base64.b64encode(k + b"\x01")
    assert ask(conn, b"ms %s 1 b k\r\nz" % enc) == [b"HD k%s b" % enc]
    assert ask(conn, b"mg %s b v k" % enc) == [b"VA 1 k%s b" % enc,
                                               b"z\r\n"]
    enc = base64.b64encode(k + b" x")
    assert ask(conn, b"ms %s 1 b k\r\nz" % enc) == [b"HD k%s b" % enc]
    assert ask(conn, b"mg %s b v" % enc) == [b"VA 1", b"z\r\n"]
    # too large: refused, and the old value is gone
    conn.send(b"set %s 0 0 1\r\nv\r\n" % k)
    conn.expect(b"STORED\r\n")
    big = 2 * 1024 * 1024
    conn.send(b"ms %s %d\r\n" % (k, big) + b"x" * big + b"\r\n")
    conn.expect(b"SERVER_ERROR object too large for cache\r\n")
    assert ask(conn, b"mg %s v" % k) == [b"EN"]


def test_md(conn, prefix):
    k = prefix.encode() + b"d"
    conn.send(b"set %s 3 100 5\r\nhello\r\n" % k)
    conn.expect(b"STORED\r\n")
    cas = int(ask(conn, b"mg %s c" % k)[0].split(b"c")[1])
    assert ask(conn, b"md %s C%d k Oa" % (k, cas + 1)) == [
        b"EX k%s Oa" % k]
    # x: the value goes, the item stays with the same cas, F's flags and
    # T's TTL (none without T)
    assert ask(conn, b"md %s x F9" % k) == [b"HD"]
    assert ask(conn, b"mg %s v f t c" % k) == [b"VA 0 f9 t-1 c%d" % cas,
                                               b"\r\n"]
    # I: stale, a new cas, T's TTL; the next mg wins
    conn.send(b"set %s 0 0 2\r\nhi\r\n" % k)
    conn.expect(b"STORED\r\n")
    assert ask(conn, b"md %s I T30 q" % k) == []
    got = ask(conn, b"mg %s v t" % k)
    assert got in ([b"VA 2 t30 X W", b"hi\r\n"], [b"VA 2 t29 X W",
                                                   b"hi\r\n"])
    assert ask(conn, b"md %s" % k) == [b"HD"]
    assert ask(conn, b"md %s" % k) == [b"NF"]
    assert ask(conn, b"md %s q" % k) == [b"NF"]
    assert ask(conn, b"md %s Tx" % k) == [
        b"CLIENT_ERROR bad token in command line format"]
    assert ask(conn, b"md %s O%s" % (k, b"o" * 32)) == [
        b"CLIENT_ERROR opaque token too long"]


def test_ma(conn, prefix):
    k = prefix.encode() + b"n"
    assert ask(conn, b"ma %s" % k) == [b"NF"]
    # N creates with J's value and N's TTL, unchanged by the delta
    assert ask(conn, b"ma %s N0 J10 v" % k) == [b"VA 2", b"10\r\n"]
    assert ask(conn, b"ma %s v" % k) == [b"VA 2", b"11\r\n"]
    assert ask(conn, b"ma %s D5 MD v" % k) == [b"VA 1", b"6\r\n"]
    assert ask(conn, b"ma %s D100 M- v" % k) == [b"VA 1", b"0\r\n"]
    conn.send(b"set %s 0 0 20\r\n18446744073709551615\r\n" % k)
    conn.expect(b"STORED\r\n")
    assert ask(conn, b"ma %s M+ v" % k) == [b"VA 1", b"0\r\n"]
    # t before T shows the old TTL, after it the new one
    assert ask(conn, b"ma %s t T50" % k) == [b"HD t-1"]
    assert ask(conn, b"ma %s T90 t" % k) in ([b"HD t90"], [b"HD t89"])
    cas = int(ask(conn, b"mg %s c" % k)[0].split(b"c")[1])
    assert ask(conn, b"ma %s C%d k" % (k, cas + 1)) == [b"EX k%s" % k]
    got = ask(conn, b"ma %s C%d c" % (k, cas))
    assert got[0].startswith(b"HD c") and got[0] != b"HD c%d" % cas
    assert ask(conn, b"ma %s q v" % k) == []
    assert ask(conn, b"ma %s v v" % k) == [
        b"CLIENT_ERROR invalid or duplicate flag"]
    assert ask(conn, b"ma %s Dx" % k) == [
        b"CLIENT_ERROR invalid or duplicate flag"]
    assert ask(conn, b"ma %s Mq" % k) == [
        b"CLIENT_ERROR invalid mode for ma M token"]
    conn.send(b"set %s 0 0 1\r\nx\r\n" % k)
    conn.expect(b"STORED\r\n")
    assert ask(conn, b"ma %s" % k) == [
        b"CLIENT_ERROR cannot increment or decrement non-numeric value"]


def test_e_sets_the_cas(server, prefix):
    """E: the cas of what the command stores, on all four commands, and
    the classic cas command takes it."""
    conn = server.conn()
    k = prefix.encode()
    try:
        assert ask(conn, b"ms %se 2 E999 c\r\nhi" % k) == [b"HD c999"]
        conn.send(b"gets %se\r\n" % k)
        assert conn.read_values(with_cas=True) == [(k + b"e", 0, b"hi",
                                                    999)]
        conn.send(b"cas %se 0 0 1 999\r\nx\r\n" % k)
        conn.expect(b"STORED\r\n")
        assert ask(conn, b"ms %se 1 MA E5000 c" % k + b"\r\ny") == [
            b"HD c5000"]
        assert ask(conn, b"md %se I E7777" % k) == [b"HD"]
        assert ask(conn, b"mg %se c" % k) == [b"HD c7777 X W"]
        assert ask(conn, b"md %se x E1" % k) == [b"HD"]
        assert ask(conn, b"mg %se c s" % k) == [b"HD c1 s0"]
        assert ask(conn, b"ma %sn N0 J1 E42 c v" % k) == [b"VA 1 c42",
                                                          b"1\r\n"]
        assert ask(conn, b"ma %sn E43 c" % k) == [b"HD c43"]
        assert ask(conn, b"mg %sviv N30 E11 c" % k) == [b"HD c11 W"]
        # items with a chosen cas are found, listed and deleted as others
        conn.send(b"keys [%s (%s~\r\n" % (k, k))
        assert conn.read_keys() == [k + b"e", k + b"n", k + b"viv"]
        conn.send(b"delete_range [%s (%s~\r\n" % (k, k))
        conn.expect(b"DELETED 3\r\n")
        assert ask(conn, b"ms %se 1 Ex\r\nz" % k) == [
            b"CLIENT_ERROR bad token in command line format"]
    finally:
        conn.close()


# ---- classic and meta, side by side ---------------------------------------

EQ_STEPS = int(os.environ.get("AKV_META_EQ_STEPS", "3000"))

CLASSIC_CODES = {b"STORED": "ok", b"NOT_STORED": "no", b"EXISTS": "ex",
                 b"NOT_FOUND": "nf", b"DELETED": "ok", b"TOUCHED": "ok"}
META_CODES = {b"HD": "ok", b"NS": "no", b"EX": "ex", b"NF": "nf"}


def test_classic_and_meta_mean_the_same(conn, prefix):
    """The same random operations, as classic commands on one keyspace
    and as meta commands on another: every outcome and every value must
    mean the same (the meta commands reach the same store)."""
    rng = random.Random(SEED + 1)
    pa, pb = prefix.encode() + b"c:", prefix.encode() + b"m:"
    names = [b"%d" % i for i in range(6)]
    cas = {}		# (keyspace, name) -> cas, from gets / mg c

    def learn(name):
        conn.send(b"gets %s%s\r\n" % (pa, name))
        got = conn.read_values(with_cas=True)
        cas[("a", name)] = got[0][3] if got else 1
        got = ask(conn, b"mg %s%s c" % (pb, name))
        cas[("b", name)] = (int(got[0].split(b" c")[1])
                            if got[0].startswith(b"HD") else 1)

    def classic(line, data=None):
        conn.send(line + b"\r\n" + (data + b"\r\n" if data is not None
                                    else b""))
        return conn.recv_line()

    def meta(line, data=None):
        conn.send(line + b"\r\n" + (data + b"\r\n" if data is not None
                                    else b""))
        return conn.recv_line()

    for step in range(EQ_STEPS):
        name = rng.choice(names)
        ka, kb = pa + name, pb + name
        r = rng.random()
        v = bytes(rng.choice(b"0123456789ab") for _ in range(rng.randrange(5)))
        f = rng.choice([0, 5, 4294967295])
        if r < 0.35:
            op, mode = rng.choice([(b"set", b"S"), (b"add", b"E"),
                                   (b"replace", b"R"), (b"append", b"A"),
                                   (b"prepend", b"P")])
            a = classic(b"%s %s %d 0 %d" % (op, ka, f, len(v)), v)
            b = meta(b"ms %s %d M%s F%d" % (kb, len(v), mode, f), v)
            got = (CLASSIC_CODES.get(a, a), META_CODES.get(b, b))
        elif r < 0.45:
            learn(name)
            off = rng.choice([0, 0, 1])
            a = classic(b"cas %s %d 0 %d %d" % (ka, f, len(v),
                                               cas[("a", name)] + off), v)
            b = meta(b"ms %s %d C%d F%d" % (kb, len(v),
                                            cas[("b", name)] + off, f), v)
            got = (CLASSIC_CODES.get(a, a), META_CODES.get(b, b))
        elif r < 0.55:
            a = classic(b"delete %s" % ka)
            b = meta(b"md %s" % kb)
            got = (CLASSIC_CODES.get(a, a), META_CODES.get(b, b))
        elif r < 0.70:
            incr = rng.random() < 0.6
            d = rng.choice([1, 7, 18446744073709551615])
            a = classic(b"%s %s %d" % (b"incr" if incr else b"decr", ka, d))
            b = meta(b"ma %s D%d M%s v" % (kb, d, b"I" if incr else b"D"))
            if b.startswith(b"VA "):
                b = conn.recv_line()	# the number
            got = (a, META_CODES.get(b, b))
            if a == b"NOT_FOUND":
                got = ("nf", got[1])
        elif r < 0.78:
            a = classic(b"touch %s 1000" % ka)
            b = meta(b"mg %s T1000" % kb)
            got = (CLASSIC_CODES.get(a, a), "ok" if b == b"HD" else
                   "nf" if b == b"EN" else b)
        else:
            conn.send(b"get %s\r\n" % ka)
            va = conn.read_values()
            b = meta(b"mg %s v f" % kb)
            vb = []
            if b.startswith(b"VA "):
                n, fl = b.split(b" ")[1:3]
                data = conn.recv_exactly(int(n) + 2)[:-2]
                vb = [(kb, int(fl[1:]), data)]
            got = ([(x[1], x[2]) for x in va], [(x[1], x[2]) for x in vb])
        assert got[0] == got[1], (step, name, got)
