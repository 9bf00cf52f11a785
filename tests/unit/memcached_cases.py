#!/usr/bin/python3
"""Records memcached's answers to test_protocol.c's memcached_cases[].

The rows of memcached_cases[] in tests/unit/test_protocol.c are requests
and the bytes memcached 1.6.18 answered to them. This script reads the
rows from the C file (string literals, "<<N*unit>>" runs expanded as the
test's expand() does), plays each request to a memcached, and either
compares the answers with the rows (check, the default) or prints the rows
again with the answers it got (print), for pasting into the C file.

For each case it opens a fresh connection, sends "flush_all\\r\\n" (its OK
not kept), sends the request bytes in one write, and keeps everything
received until the close or a silence (0.3 s when recording; when
checking, as soon as the recorded length has come and 0.1 s passed).

    memcached -U 0 -p 22122 -l 127.0.0.1 &
    tests/unit/memcached_cases.py --port 22122            # check
    tests/unit/memcached_cases.py --port 22122 --print    # record

The integration test test_recorded_cases.py runs the check against the
reference memcached on every make test.
"""
import argparse
import os
import re
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "test_protocol.c")

_ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "\\": b"\\", '"': b'"',
            "'": b"'", "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v",
            "?": b"?"}


def c_string(body):
    """The bytes of one C string literal's body (between its quotes)."""
    out, i = bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("latin-1")
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(int(m.group(0), 8))
            i += 1 + len(m.group(0))
        elif nxt == "x":
            m = re.match(r"[0-9a-fA-F]+", body[i + 2:])
            out.append(int(m.group(0), 16) & 0xff)
            i += 2 + len(m.group(0))
        else:
            out += _ESCAPES[nxt]
            i += 2
    return bytes(out)


_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def literal_run(text):
    """The bytes of adjacent string literals, concatenated as C does."""
    return b"".join(c_string(m.group(1)) for m in _LITERAL.finditer(text))


def expand(data):
    """The test's expand(): "<<N*unit>>" is N copies of unit."""
    out, i = bytearray(), 0
    while i < len(data):
        if data[i:i + 2] != b"<<":
            out.append(data[i])
            i += 1
            continue
        star = data.index(b"*", i)
        n = int(data[i + 2:star])
        close = data.index(b">>", star)
        # a unit may itself end in '>': take the last ">>" of ">>>"
        while close + 2 < len(data) and data[close + 2:close + 3] == b">":
            close += 1
        out += data[star + 1:close] * n
        i = close + 2
    return bytes(out)


def read_cases(path=SOURCE):
    """[(request, response, closed, request text, response text)] of the
    table, the texts as written in the C file."""
    src = open(path, encoding="latin-1").read()
    start = src.index("static const struct ref_case memcached_cases[] = {")
    end = src.index("\n};", start)
    table = src[start:end]
    rows = re.finditer(r"\{\s*S\((.*?)\),\s*S\((.*?)\),\s*(true|false)\s*\}",
                       table, re.S)
    return [(expand(literal_run(m.group(1))), expand(literal_run(m.group(2))),
             m.group(3) == "true", m.group(1), m.group(2)) for m in rows]


def play(host, port, request, want_len=None):
    """(bytes received, closed) for @request on a fresh connection."""
    s = socket.create_connection((host, port), timeout=5)
    try:
        s.sendall(b"flush_all\r\n")
        got = b""
        while not got.endswith(b"OK\r\n"):
            part = s.recv(4096)
            if not part:
                raise RuntimeError("closed before flush_all's OK")
            got += part
        s.sendall(request)
        got, closed = b"", False
        quiet = 0.3 if want_len is None else 0.1
        s.settimeout(quiet)
        while True:
            if want_len is not None and len(got) < want_len:
                s.settimeout(2.0)	# the recorded bytes are still due
            else:
                s.settimeout(quiet)
            try:
                part = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not part:
                closed = True
                break
            got += part
        return got, closed
    finally:
        s.close()


def c_literal(data, indent):
    """@data as adjacent C string literals, one per line of it."""
    lines = re.findall(rb"[^\n]*\n|[^\n]+", data) or [b""]
    parts = []
    for line in lines:
        text = ""
        for byte in line:
            ch = chr(byte)
            if ch == "\r":
                text += "\\r"
            elif ch == "\n":
                text += "\\n"
            elif ch in '"\\':
                text += "\\" + ch
            elif 0x20 <= byte < 0x7f:
                text += ch
            else:	# three digits: a digit after it stays a digit
                text += "\\%03o" % byte
        parts.append('"%s"' % text)
    return ("\n" + " " * indent).join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=11211)
    ap.add_argument("--print", action="store_true",
                    help="print the rows with the answers received")
    ap.add_argument("--source", default=SOURCE)
    args = ap.parse_args()

    cases = read_cases(args.source)
    passed = failed = 0
    for i, (req, resp, closed, req_text, resp_text) in enumerate(cases):
        got, got_closed = play(args.host, args.port, req,
                               None if args.print else len(resp))
        same = got == resp and got_closed == closed
        if args.print:
            print("\t{ S(%s),\n\t  S(%s),\n\t  %s },%s" % (
                req_text.strip(),
                resp_text.strip() if got == resp else c_literal(got, 5),
                "true" if got_closed else "false",
                "" if same else "\t/* changed */"))
        elif same:
            passed += 1
        else:
            failed += 1
            print("case %d: %r -> %r%s, recorded %r%s" % (
                i, req[:200], got[:200], " (closed)" if got_closed else "",
                resp[:200], " (closed)" if closed else ""), file=sys.stderr)
    if not args.print:
        print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
