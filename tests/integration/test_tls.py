"""TLS (-Z): memcached's interface over OpenSSL, and what hostile TLS
clients cannot do.

The certificates are made here with the openssl command: a CA, a server
certificate for localhost and 127.0.0.1, a client certificate, one from
another CA, an expired one, and a server certificate of the other CA (for
refresh_certs). Every TLS server of this file also has a plain listener
(-l notls:<ip>:<port> beside the TLS one), which the plain helpers (stats,
the hostile Guard) use: so notls: is tested wherever TLS is.

The differential tests start Debian's memcached with -Z and the same files
and flags, and compare what a client sees: the bytes of a session (raw
TLS sockets, pymemcache with an ssl.SSLContext, openssl s_client), and how
a handshake is refused (the alert the client reads). The rest is
anchorkv's own (marked anchorkv_only where memcached lacks it): the
handshake deadline, the hostile clients, SIGHUP, the stats conns marker.
"""
import os
import random
import select
import shutil
import signal
import socket
import ssl
import subprocess
import time

import pytest

import mc
from conftest import HOST, ROOT, free_port, is_memcached
from hostile import Guard, Measured, need_memcached, stat, status
from test_admin import wait_for
from test_classic_diff import MEMCACHED, Memcached

pytestmark = pytest.mark.skipif(is_memcached(),
                                reason="runs memcached itself beside anchorkv")


def openssl(cwd, *args):
    subprocess.run(["openssl"] + list(args), cwd=str(cwd), check=True,
                   capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")

    def ca(name):
        openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                "-keyout", name + ".key", "-out", name + ".pem",
                "-days", "30", "-subj", "/CN=" + name)

    def cert(name, cn, issuer, days="30", san=None):
        openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout",
                name + ".key", "-out", name + ".csr", "-subj", "/CN=" + cn)
        args = ["x509", "-req", "-in", name + ".csr", "-CA",
                issuer + ".pem", "-CAkey", issuer + ".key",
                "-CAcreateserial", "-out", name + ".pem", "-days", days]
        if san:
            (d / (name + ".ext")).write_text("subjectAltName=%s\n" % san)
            args += ["-extfile", name + ".ext"]
        openssl(d, *args)

    ca("ca")
    ca("otherca")
    local = "DNS:localhost,IP:127.0.0.1"
    cert("server", "localhost", "ca", san=local)
    cert("server2", "localhost", "otherca", san=local)
    cert("elsewhere", "elsewhere.example", "ca",
         san="DNS:elsewhere.example")
    cert("client", "client", "ca")
    cert("stranger", "stranger", "otherca")
    cert("expired", "expired", "ca", days="-1")
    return d


def tls_opts(certs, *extra, chain=None, key=None):
    o = ["ssl_chain_cert=%s" % (chain or certs / "server.pem"),
         "ssl_key=%s" % (key or certs / "server.key")] + list(extra)
    return ["-Z", "-o", ",".join(o)]


class TlsMixin:
    """-l notls:<ip>:<port>,<tls_host>:<tls_port>: self.port stays plain."""

    tls_host = HOST

    def command(self, port):
        self.tls_port = free_port()
        cmd = super().command(port)
        # memcached joins every -l it is given: one list, not two
        i = cmd.index("-l")
        del cmd[i:i + 2]
        return cmd + ["-l", "notls:%s:%d,%s:%d" % (
            HOST, port, self.tls_host, self.tls_port)]


class TlsServer(TlsMixin, Measured):
    pass


class TlsMemcached(TlsMixin, Memcached):
    pass


def client_ctx(certs, ca="ca", cert=None, maximum=None):
    ctx = ssl.create_default_context(cafile=str(certs / (ca + ".pem")))
    if cert:
        ctx.load_cert_chain(str(certs / (cert + ".pem")),
                            str(certs / (cert + ".key")))
    if maximum:
        ctx.maximum_version = maximum
    return ctx


class TlsConn(mc.Conn):
    """mc.Conn over TLS (the helpers work on the SSL socket)."""

    def __init__(self, port, ctx, timeout=mc.DEFAULT_TIMEOUT,
                 hostname="localhost"):
        self.timeout = timeout
        raw = socket.create_connection((HOST, port), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock = ctx.wrap_socket(raw, server_hostname=hostname)
        except BaseException:
            raw.close()
            raise
        self.buf = b""


def kind(result):
    """served or refused: memcached sometimes closes before its alert is
    out (the client then reads an EOF), so only this much is compared."""
    return "served" if result == "served" else "refused"


def outcome(port, ctx):
    """What a client with @ctx gets: "served", or how it was refused."""
    try:
        with TlsConn(port, ctx) as c:
            c.send(b"mn\r\n")
            return "served" if c.recv_line() == b"MN" else "garbled"
    except ssl.SSLError as e:
        return "refused: %s" % e.reason
    except (ConnectionError, socket.timeout, OSError) as e:
        return "closed: %s" % type(e).__name__


def start_pair(tmp_path, args):
    ours = TlsServer(args, str(tmp_path)).start()
    need_memcached()
    ref = TlsMemcached(args, str(tmp_path)).start()
    return ours, ref


@pytest.fixture(scope="module")
def pair(certs, tmp_path_factory):
    need_memcached()
    ours, ref = start_pair(tmp_path_factory.mktemp("tls"), tls_opts(certs))
    yield ours, ref
    ref.stop(check=False)
    ours.stop()


# --- the same bytes as memcached -Z -----------------------------------------

SESSION = (b"set a 0 0 5\r\nhello\r\nget a\r\nadd a 0 0 1\r\nx\r\n"
           b"append a 0 0 6\r\n world\r\nget a b\r\nbogus\r\n"
           b"set n 0 0 2\r\n10\r\n"
           b"incr n 5\r\ndecr n 100\r\nincr a 1\r\ntouch a 100\r\n"
           b"ms m 2 T0\r\nhi\r\nmg m v f\r\nmg nothere v\r\nma n\r\n"
           b"md m\r\ndelete a\r\nget a m\r\nget " + b"k" * 251
           + b"\r\ndelete n\r\nmn\r\n")
BIG = b"set big 0 0 70000\r\n" + b"v" * 70000 + b"\r\nget big\r\nmn\r\n"


def test_session_same_bytes_as_memcached(pair, certs):
    ours, ref = pair
    got = {}
    for srv in (ours, ref):
        with TlsConn(srv.tls_port, client_ctx(certs)) as c:
            c.send(SESSION)
            got[srv] = c.recv_until(b"MN\r\n", timeout=15)
            # memcached 1.6.18 stalls when a large set and more requests
            # come in one burst over TLS: one at a time here
            c.send(BIG[:-len(b"get big\r\nmn\r\n")])
            got[srv] += c.recv_line() + b"\r\n"
            c.send(b"get big\r\ndelete big\r\nmn\r\n")
            got[srv] += c.recv_until(b"MN\r\n", timeout=15)
    assert got[ours] == got[ref]
    assert b"VALUE a 0 11\r\nhello world\r\n" in got[ours]
    assert b"END\r\nERROR\r\nSTORED\r\n" in got[ours]
    assert b"v" * 70000 in got[ours]


def test_binary_protocol_over_tls_same_bytes_as_memcached(pair, certs):
    """A TLS connection whose first byte is 0x80 speaks the binary
    protocol, as memcached -Z does."""
    from binary import no_cas, req, store
    ours, ref = pair
    data = (store("set", b"tb", b"over tls", flags=2) + req("getk", b"tb") +
            req("getq", b"none") + req("delete", b"tb") +
            req("version") + req("noop"))
    got = {}
    for srv in (ours, ref):
        with TlsConn(srv.tls_port, client_ctx(certs)) as c:
            c.send(data)
            buf = b""
            while not buf.endswith(b"\x81\x0a" + b"\0" * 22):
                buf += c.sock.recv(65536)
            got[srv] = no_cas(buf)
    assert got[ours] == got[ref]
    assert b"over tls" in got[ours] and b"1.6.18" in got[ours]


def test_large_set_pipelined_with_more_requests(pair, certs):
    """anchorkv_only: memcached 1.6.18 leaves the requests that follow a
    large value in one burst unread in OpenSSL's buffer and stalls (no
    event comes for input already read from the socket)."""
    ours = pair[0]
    with TlsConn(ours.tls_port, client_ctx(certs)) as c:
        for n in (70000, 16384, 300000):
            value = bytes(range(256)) * (n // 256) + b"x" * (n % 256)
            c.send(b"set big 0 0 %d\r\n%s\r\nget big\r\n" % (n, value)
                   + b"mn\r\n" * 50 + b"delete big\r\n")
            c.expect(b"STORED\r\nVALUE big 0 %d\r\n%s\r\nEND\r\n"
                     % (n, value) + b"MN\r\n" * 50 + b"DELETED\r\n",
                     timeout=15)


def test_session_split_into_one_byte_records(pair, certs):
    """One TLS record per byte: the engine sees the same stream."""
    ours, ref = pair
    got = {}
    for srv in (ours, ref):
        with TlsConn(srv.tls_port, client_ctx(certs)) as c:
            for b in b"set s 0 0 3\r\nabc\r\nget s\r\ndelete s\r\nmn\r\n":
                c.send(bytes([b]))
            got[srv] = c.recv_until(b"MN\r\n")
    assert got[ours] == got[ref] == (b"STORED\r\nVALUE s 0 3\r\nabc\r\nEND"
                                     b"\r\nDELETED\r\nMN\r\n")


def test_pymemcache_with_an_ssl_context(pair, certs):
    from pymemcache.client.base import Client
    rnd = random.Random(15)
    values = {"tls:%d" % n: bytes(rnd.getrandbits(8) for _ in range(n))
              for n in (0, 1, 100, 16383, 16384, 16385, 100000, 1000000)}
    for srv in pair:
        c = Client((HOST, srv.tls_port), tls_context=client_ctx(certs),
                   timeout=15, connect_timeout=5)
        try:
            for k, v in values.items():
                assert c.set(k, v)
            assert c.get_many(list(values)) == values
            many = {"p:%d" % i: b"%d" % i * 7 for i in range(3000)}
            c.set_many(many)
            assert c.get_many(list(many)) == many
            c.delete_many(list(values) + list(many))
        finally:
            c.close()


def s_client(port, certs, stdin, *extra):
    """openssl s_client's stdout for @stdin (which ends with quit)."""
    p = subprocess.run(
        ["openssl", "s_client", "-connect", "%s:%d" % (HOST, port),
         "-quiet", "-verify_return_error", "-CAfile",
         str(certs / "ca.pem")] + list(extra),
        input=stdin, capture_output=True, timeout=20)
    return p.stdout, p.returncode


def test_openssl_s_client_same_bytes(pair, certs):
    session = (b"set sc 5 0 3\r\nabc\r\nget sc\r\ngets nothing\r\n"
               b"delete sc\r\nbogus\r\nquit\r\n")
    for extra in ((), ("-tls1_2",), ("-tls1_3",)):
        ours, ref = (s_client(srv.tls_port, certs, session, *extra)
                     for srv in pair)
        assert ours == ref, extra
        assert ours[0] == (b"STORED\r\nVALUE sc 5 3\r\nabc\r\nEND\r\nEND\r\n"
                           b"DELETED\r\nERROR\r\n")


def test_plain_listener_beside_the_tls_one(pair):
    for srv in pair:
        with mc.Conn(HOST, srv.port) as c:
            c.send(b"set plain 0 0 1\r\np\r\nget plain\r\ndelete plain\r\n")
            c.expect(b"STORED\r\nVALUE plain 0 1\r\np\r\nEND\r\nDELETED\r\n")


def test_plain_text_on_the_tls_port_same_as_memcached(pair):
    """A plain client on the TLS port: the same alert bytes, then closed."""
    ours, ref = pair
    for data in (b"get foo\r\n", b"version\r\n", b"\x16\x03\x01\x00\x05hello",
                 b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"):
        got = []
        for srv in (ours, ref):
            with mc.Conn(HOST, srv.tls_port) as c:
                c.send(data)
                got.append(c.assert_closed(timeout=10))
        assert got[0] == got[1], data
    assert stat(ours, "ssl_handshake_errors") >= 4


def test_refresh_certs_without_tls_same_as_memcached(tmp_path):
    need_memcached()
    got = []
    for cls in (Measured, Memcached):
        srv = cls([], str(tmp_path)).start()
        try:
            with srv.conn() as c:
                c.send(b"refresh_certs\r\nrefresh_certs noreply\r\nmn\r\n")
                got.append(c.recv_until(b"MN\r\n"))
        finally:
            srv.stop(check=cls is Measured)
    assert got[0] == got[1] == b"Error TLS not enabled\r\n" * 2 + b"MN\r\n"


# --- client certificates ------------------------------------------------------

CLIENTS = ("none", "client", "stranger", "expired")


@pytest.mark.parametrize("mode", [1, 2, 3])
def test_client_certificates_refused_as_memcached(certs, tmp_path, mode):
    ours, ref = start_pair(tmp_path, tls_opts(
        certs, "ssl_ca_cert=%s" % (certs / "ca.pem"),
        "ssl_verify_mode=%d" % mode))
    try:
        got = {}
        for who in CLIENTS:
            ctx = client_ctx(certs, cert=None if who == "none" else who)
            got[who] = [outcome(s.tls_port, ctx) for s in (ours, ref)]
            assert kind(got[who][0]) == kind(got[who][1]), (who, got[who])
        assert got["client"][0] == "served"
        assert got["none"][0] == ("served" if mode == 1 else
                                  "refused: TLSV13_ALERT_CERTIFICATE_REQUIRED")
        assert got["stranger"][0] == "refused: TLSV1_ALERT_UNKNOWN_CA"
        assert got["expired"][0] == "refused: SSLV3_ALERT_CERTIFICATE_EXPIRED"
        assert stat(ours, "ssl_handshake_errors") == (2 if mode == 1 else 3)
        with mc.Conn(HOST, ours.port) as c:
            assert c.stats("settings")["ssl_verify_mode"] == str(mode)
    finally:
        ref.stop(check=False)
        ours.stop()


def test_tls_1_3_minimum_and_ciphers_as_memcached(certs, tmp_path):
    ours, ref = start_pair(tmp_path, tls_opts(certs, "ssl_min_version=3"))
    try:
        old = client_ctx(certs, maximum=ssl.TLSVersion.TLSv1_2)
        got = [outcome(s.tls_port, old) for s in (ours, ref)]
        assert kind(got[1]) == "refused"
        assert got[0] == "refused: TLSV1_ALERT_PROTOCOL_VERSION"
        assert outcome(ours.tls_port, client_ctx(certs)) == "served"
        with mc.Conn(HOST, ours.port) as c:
            assert c.stats("settings")["ssl_min_version"] == "tlsv1.3"
    finally:
        ref.stop(check=False)
        ours.stop()
    cipher = "ECDHE-RSA-AES128-GCM-SHA256"
    ours, ref = start_pair(tmp_path, tls_opts(certs, "ssl_ciphers=" + cipher))
    try:
        for srv in (ours, ref):
            with TlsConn(srv.tls_port, client_ctx(
                    certs, maximum=ssl.TLSVersion.TLSv1_2)) as c:
                assert c.sock.cipher()[0] == cipher
                c.send(b"mn\r\n")
                c.expect(b"MN\r\n")
    finally:
        ref.stop(check=False)
        ours.stop()


def test_the_wrong_name_is_the_clients_to_refuse(pair, certs, tmp_path):
    """A server certificate for another name: a verifying client refuses."""
    srv = TlsServer(tls_opts(certs, chain=certs / "elsewhere.pem",
                             key=certs / "elsewhere.key"),
                    str(tmp_path)).start()
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            TlsConn(srv.tls_port, client_ctx(certs))
        with TlsConn(srv.tls_port, client_ctx(certs),
                     hostname="elsewhere.example") as c:
            c.send(b"mn\r\n")
            c.expect(b"MN\r\n")
    finally:
        srv.stop()


# --- start-up ------------------------------------------------------------------

@pytest.mark.parametrize("args,words", [
    (["-l", "notls:127.0.0.1:11299"], "'notls' option is valid only"),
    (["-Z"], "needs a certificate"),
    (["-Z", "-o", "ssl_chain_cert=/nonexistent/x.pem"],
     "Error loading the certificate chain: /nonexistent/x.pem"),
    (["-Z", "-o", "ssl_min_version=1"], "invalid value for ssl_min_version"),
    (["-Z", "-o", "ssl_verify_mode=4"], "invalid value for ssl_verify_mode"),
    (["-Z", "-o", "ssl_chain_cert"], "needs a value"),
    (["-Z", "-o", "ssl_bogus=1"], "unknown extended option"),
])
def test_start_refused(args, words):
    from conftest import BIN
    p = subprocess.run([BIN, "-p", str(free_port())] + args,
                       capture_output=True, timeout=30, cwd=ROOT)
    assert p.returncode == 1, p
    assert words in p.stderr.decode(), p.stderr


def test_start_refused_with_a_unix_socket_or_a_wrong_key(certs, tmp_path):
    from conftest import BIN
    for args, words in (
            (tls_opts(certs) + ["-s", str(tmp_path / "s")],
             "a unix socket (-s) replaces TCP"),
            (tls_opts(certs, key=certs / "client.key"),
             "Error loading the key: %s : error:05800074:x509 certificate "
             "routines::key values mismatch" % (certs / "client.key"))):
        p = subprocess.run([BIN, "-p", str(free_port())] + args,
                           capture_output=True, timeout=30, cwd=ROOT)
        assert p.returncode == 1 and words in p.stderr.decode(), p


# --- stats -----------------------------------------------------------------------

def test_stats_as_memcached_names_them(pair, certs):
    ours, ref = pair
    for srv in (ours, ref):
        with mc.Conn(HOST, srv.port) as c:
            st = c.stats()
            assert "ssl_handshake_errors" in st
            assert int(st["time_since_server_cert_refresh"]) >= 0
            assert "ssl_new_sessions" not in st	# without the cache
            s = c.stats("settings")
            assert s["ssl_enabled"] == "yes"
            assert s["ssl_chain_cert"] == str(certs / "server.pem")
            assert s["ssl_min_version"] == "tlsv1.2"
            assert s["ssl_session_cache"] == "no"
    with TlsConn(ours.tls_port, client_ctx(certs)) as t:
        t.send(b"mn\r\n")
        t.expect(b"MN\r\n")
        with mc.Conn(HOST, ours.port) as c:
            conns = c.stats("conns")
        fd = [k.split(":")[0] for k, v in conns.items()
              if k.endswith(":tls")]
        assert [conns[f + ":tls"] for f in fd] == ["TLSv1.3"]
        assert conns[fd[0] + ":listen_addr"] == "tcp:%s:%d" % (
            HOST, ours.tls_port)


def test_stats_without_tls(server):
    with server.conn() as c:
        assert "ssl_handshake_errors" not in c.stats()
        assert c.stats("settings")["ssl_enabled"] == "no"


def test_session_cache_counts_as_memcached(certs, tmp_path):
    """ssl_new_sessions counts what OpenSSL's cache callback sees: TLS 1.2
    resumes by ticket (nothing cached), TLS 1.3 caches each ticket."""
    ours, ref = start_pair(tmp_path, tls_opts(certs, "ssl_session_cache"))
    try:
        counts = []
        for srv in (ours, ref):
            row = []
            for top in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
                ctx = client_ctx(certs, maximum=top)
                with TlsConn(srv.tls_port, ctx) as c:
                    c.send(b"mn\r\n")
                    c.expect(b"MN\r\n")
                    session = c.sock.session
                raw = socket.create_connection((HOST, srv.tls_port),
                                               timeout=5)
                with ctx.wrap_socket(raw, server_hostname="localhost",
                                     session=session) as s:
                    s.sendall(b"mn\r\n")
                    assert s.recv(4) == b"MN\r\n"
                    assert s.session_reused
                row.append(stat(srv, "ssl_new_sessions"))
            counts.append(row)
        assert counts[0] == counts[1]
        assert counts[0][0] == 0 and counts[0][1] > 0
        with mc.Conn(HOST, ours.port) as c:
            assert c.stats("settings")["ssl_session_cache"] == "yes"
    finally:
        ref.stop(check=False)
        ours.stop()


# --- refresh_certs and SIGHUP -------------------------------------------------

def still_served(srv, old, certs):
    """After a refused reload: new clients still get server2's chain (the
    other CA's), and @old, connected before, still answers."""
    assert outcome(srv.tls_port, client_ctx(certs, ca="otherca")) == "served"
    old.send(b"mn\r\n")
    old.expect(b"MN\r\n")
    old.close()


def test_refresh_certs_while_connected(certs, tmp_path):
    need_memcached()
    got = {}
    servers = []
    try:
        for cls in (TlsServer, TlsMemcached):
            d = tmp_path / cls.__name__
            d.mkdir()
            for f in ("server.pem", "server.key"):
                shutil.copy(certs / f, d / f)
            srv = cls(tls_opts(certs, chain=d / "server.pem",
                               key=d / "server.key"), str(d)).start()
            servers.append(srv)
            old = TlsConn(srv.tls_port, client_ctx(certs))
            old.send(b"set kept 0 0 4\r\nkept\r\n")
            old.expect(b"STORED\r\n")
            # the other CA's certificate in the same files
            shutil.copy(certs / "server2.pem", d / "server.pem")
            shutil.copy(certs / "server2.key", d / "server.key")
            old.send(b"refresh_certs\r\nget kept\r\n")
            old.expect(b"OK\r\nVALUE kept 0 4\r\nkept\r\nEND\r\n")
            assert outcome(srv.tls_port, client_ctx(certs, ca="otherca")) \
                == "served"
            assert outcome(srv.tls_port, client_ctx(certs)).startswith(
                "refused: CERTIFICATE_VERIFY_FAILED")
            # a broken file: an error line, the certificates stay
            (d / "server.pem").write_text("not a certificate\n")
            old.send(b"refresh_certs\r\n")
            got[cls] = old.recv_line().replace(str(d).encode(), b"DIR")
            still_served(srv, old, certs)
    finally:
        for srv in servers:
            srv.stop(check=isinstance(srv, TlsServer))
    assert got[TlsServer] == got[TlsMemcached]
    assert got[TlsServer].startswith(
        b"Error loading the certificate chain: DIR/server.pem : error:")


def test_sighup_reloads_the_certificates(certs, tmp_path):
    for f in ("server.pem", "server.key"):
        shutil.copy(certs / f, tmp_path / f)
    srv = TlsServer(tls_opts(certs, chain=tmp_path / "server.pem",
                             key=tmp_path / "server.key"),
                    str(tmp_path)).start()
    try:
        old = TlsConn(srv.tls_port, client_ctx(certs))
        time.sleep(2.1)
        assert stat(srv, "time_since_server_cert_refresh") >= 2
        shutil.copy(certs / "server2.pem", tmp_path / "server.pem")
        shutil.copy(certs / "server2.key", tmp_path / "server.key")
        os.kill(srv.pid, signal.SIGHUP)
        wait_for(lambda: "TLS certificates reloaded" in srv.stderr_text(),
                 what="the reload")
        assert stat(srv, "time_since_server_cert_refresh") <= 1
        assert outcome(srv.tls_port, client_ctx(certs, ca="otherca")) \
            == "served"
        # a key that does not match: logged, the certificates stay
        shutil.copy(certs / "client.key", tmp_path / "server.key")
        os.kill(srv.pid, signal.SIGHUP)
        wait_for(lambda: "the old TLS certificates stay" in
                 srv.stderr_text(), what="the refusal")
        still_served(srv, old, certs)
    finally:
        srv.stop()


def test_dump_and_big_replies_to_a_slow_tls_reader(pair, certs):
    """anchorkv_only: a key dump (queued batch by batch as the client
    reads) and a multi-get of large values, over TLS to a client that
    reads a little at a time: every byte arrives, in order."""
    ours = pair[0]
    value = bytes(range(256)) * 1024		# 256 KiB
    with TlsConn(ours.tls_port, client_ctx(certs), timeout=30) as c:
        keys = [b"slow:%05d" % i for i in range(3000)]
        c.send(b"".join(b"set %s 0 0 3 noreply\r\nabc\r\n" % k
                        for k in keys))
        for i in range(8):
            c.send(b"set slowbig:%d 0 0 %d noreply\r\n%s\r\n"
                   % (i, len(value), value))
        c.send(b"mn\r\n")
        c.expect(b"MN\r\n")
        c.send(b"lru_crawler mgdump all\r\nget " +
               b" ".join(b"slowbig:%d" % i for i in range(8)) + b"\r\n")
        want = b"".join(b"VALUE slowbig:%d 0 %d\r\n%s\r\n"
                        % (i, len(value), value) for i in range(8))
        total = b""
        while not total.endswith(want + b"END\r\n"):
            time.sleep(0.001)
            chunk = c.sock.recv(4096)
            assert chunk, total[-200:]
            total += chunk
        dump, rest = total.split(b"EN\r\n", 1)
        lines = dump.split(b"\r\n")
        assert lines[0] == b"OK"
        assert [l[3:] for l in lines if l.startswith(b"mg slow:")] == keys
        assert rest == want + b"END\r\n"
        c.send(b"".join(b"delete %s noreply\r\n" % k for k in keys) +
               b"".join(b"delete slowbig:%d noreply\r\n" % i
                        for i in range(8)) + b"mn\r\n")
        c.expect(b"MN\r\n")


# --- with -Y, idle_timeout, the bind warning ---------------------------------

def test_a_client_certificate_does_not_replace_the_password(certs, tmp_path):
    """-Y with ssl_verify_mode 2: the certificate gets the client through
    the handshake, and the connection still starts unauthenticated, as in
    memcached."""
    users = tmp_path / "users"
    users.write_text("alice:secret\n")
    ours, ref = start_pair(tmp_path, tls_opts(
        certs, "ssl_ca_cert=%s" % (certs / "ca.pem"), "ssl_verify_mode=2")
        + ["-Y", str(users)])
    try:
        got = []
        for srv in (ours, ref):
            ctx = client_ctx(certs, cert="client")
            with TlsConn(srv.tls_port, ctx) as c:
                c.send(b"get x\r\n")
                out = c.recv_line() + b"\r\n"
                c.send(b"set auth 0 0 12\r\nalice secret\r\n")
                out += c.recv_line() + b"\r\n"
                c.send(b"set x 0 0 1\r\n1\r\nget x\r\n")
                out += c.recv_until(b"END\r\n")
            got.append(out)
        assert got[0] == got[1] == (b"CLIENT_ERROR unauthenticated\r\n"
                                    b"STORED\r\nSTORED\r\nVALUE x 0 1\r\n1"
                                    b"\r\nEND\r\n")
    finally:
        ref.stop(check=False)
        ours.stop()


def test_sasl_and_a_client_certificate_both_needed(certs, tmp_path):
    """-S over TLS with ssl_verify_mode 2: the certificate gets the client
    through the handshake, then it must still log in, as in memcached."""
    from binary import parse, req, store
    users = tmp_path / "users"
    users.write_text("alice:secret\n")
    srv = TlsServer(tls_opts(certs, "ssl_ca_cert=%s" % (certs / "ca.pem"),
                             "ssl_verify_mode=2") + ["-S", "-Y", str(users)],
                    str(tmp_path)).start()
    try:
        assert outcome(srv.tls_port, client_ctx(certs)) != "served"
        login = req("sasl_auth", b"PLAIN", value=b"\0alice\0secret")
        for data, want in ((req("get", b"x"), [(0x00, 0x20)]),
                           (login + store("set", b"x", b"1") +
                            req("get", b"x"),
                            [(0x21, 0), (0x01, 0), (0x00, 0)])):
            with TlsConn(srv.tls_port, client_ctx(certs, cert="client")) \
                    as c:
                c.send(data)
                buf = b""
                while len(parse(buf)[0]) < len(want):
                    buf += c.sock.recv(65536)
                assert [(o["op"], o["status"]) for o in parse(buf)[0]] == \
                    want
    finally:
        srv.stop()


def test_a_stalled_handshake_counts_against_idle_timeout(certs, tmp_path):
    """With no handshake deadline of its own, idle_timeout closes it."""
    srv = TlsServer(tls_opts(certs, "ssl_handshake_timeout=0",
                             "idle_timeout=1"), str(tmp_path)).start()
    try:
        start = time.monotonic()
        with mc.Conn(HOST, srv.tls_port, timeout=10) as c:
            c.assert_closed(timeout=10)
        assert time.monotonic() - start < 5
        assert stat(srv, "ssl_handshake_errors") == 1
    finally:
        srv.stop()


def test_bind_warning_with_tls(certs, tmp_path):
    """A TLS listener outside loopback without -Y or required client
    certificates warns that anyone can connect; the plain loopback one
    beside it does not warn; with ssl_verify_mode 2 nothing warns. The
    test talks to 127.0.0.1 only."""
    srv = TlsServer(tls_opts(certs), str(tmp_path))
    srv.tls_host = "0.0.0.0"
    srv.start()
    try:
        lines = [l for l in srv.stderr_text().splitlines()
                 if "not a loopback" in l]
        assert len(lines) == 1, srv.stderr_text()
        assert ("listening on tcp:0.0.0.0:%d with TLS" % srv.tls_port
                in lines[0])
        assert "anyone who can reach it can connect" in lines[0]
        assert outcome(srv.tls_port, client_ctx(certs)) == "served"
    finally:
        srv.stop()
    srv = TlsServer(tls_opts(certs, "ssl_ca_cert=%s" % (certs / "ca.pem"),
                             "ssl_verify_mode=2"), str(tmp_path))
    srv.tls_host = "0.0.0.0"
    srv.start()
    try:
        assert outcome(srv.tls_port, client_ctx(certs, cert="client")) \
            == "served"
        assert "not a loopback" not in srv.stderr_text()
    finally:
        srv.stop()


# --- hostile clients --------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile_srv(certs, tmp_path_factory):
    srv = TlsServer(tls_opts(certs, "ssl_handshake_timeout=2"),
                    str(tmp_path_factory.mktemp("hostile"))).start()
    yield srv
    srv.stop()


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def client_hello(certs):
    """The first flight of a Python TLS client, as bytes."""
    ctx = client_ctx(certs)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return out.read()


def test_client_hello_cut_at_every_byte(hostile_srv, certs):
    srv = hostile_srv
    hello = client_hello(certs)
    assert len(hello) > 200
    fds = open_fds(srv.pid)
    with Guard(srv, rss_bound_kib=16 * 1024):
        errors = stat(srv, "ssl_handshake_errors")
        for cut in range(len(hello)):
            with mc.Conn(HOST, srv.tls_port, timeout=10) as c:
                c.send(hello[:cut])
                c.sock.shutdown(socket.SHUT_WR)
                c.assert_closed()
        assert stat(srv, "ssl_handshake_errors") - errors == len(hello)
    wait_for(lambda: open_fds(srv.pid) <= fds, timeout=20,
             what="descriptors back")


def test_stalled_handshakes_end_at_the_deadline(hostile_srv, certs):
    """Silent, cut short, or a byte at a time: closed by
    ssl_handshake_timeout (2 s), not served."""
    srv = hostile_srv
    hello = client_hello(certs)
    with Guard(srv, rss_bound_kib=16 * 1024):
        errors = stat(srv, "ssl_handshake_errors")
        start = time.monotonic()
        conns = [mc.Conn(HOST, srv.tls_port, timeout=10) for _ in range(3)]
        conns[1].send(hello[:len(hello) // 2])
        for i in range(8):		# the trickler: a byte every 0.4 s
            try:
                conns[2].send(hello[i:i + 1])
            except OSError:
                break
            time.sleep(0.4)
        for c in conns:
            c.assert_closed(timeout=10)
            c.close()
        took = time.monotonic() - start
        assert 1.0 <= took < 6, took
        assert stat(srv, "ssl_handshake_errors") - errors == 3


def raw_twin(tls_conn):
    """A plain socket on the same descriptor as a TLS connection."""
    return socket.socket(fileno=os.dup(tls_conn.sock.fileno()))


def test_random_bytes_after_the_handshake(hostile_srv, certs):
    srv = hostile_srv
    rnd = random.Random(7)
    with Guard(srv, rss_bound_kib=16 * 1024):
        for n in (1, 5, 100, 20000):
            with TlsConn(srv.tls_port, client_ctx(certs)) as c:
                c.send(b"mn\r\n")
                c.expect(b"MN\r\n")
                raw = raw_twin(c)
                raw.sendall(bytes(rnd.getrandbits(8) for _ in range(n)))
                raw.settimeout(10)
                try:
                    while raw.recv(65536):
                        pass
                except (ConnectionResetError, socket.timeout):
                    pass
                raw.close()


def test_a_tls_client_that_never_reads(hostile_srv, certs):
    """Replies pile up behind a client that does not read: the server
    stops reading it, memory stays bounded, others are served."""
    srv = hostile_srv
    with Guard(srv, rss_bound_kib=48 * 1024):
        c = TlsConn(srv.tls_port, client_ctx(certs))
        c.sock.setblocking(False)
        sent = 0
        line = b"get hostile:big hostile:bytes\r\n" * 100
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sent < 4000:
            try:
                c.sock.send(line)
                sent += 100
            except (ssl.SSLWantWriteError, BlockingIOError):
                break
        assert sent >= 100
        time.sleep(0.5)
        with TlsConn(srv.tls_port, client_ctx(certs)) as other:
            other.send(b"get hostile:empty\r\n")
            other.expect(b"VALUE hostile:empty 3 0\r\n\r\nEND\r\n")
        c.sock.close()


@pytest.fixture
def crowd_srv(certs, tmp_path):
    """hostile_srv's daemon with a handshake deadline of a minute: 1000
    handshakes under the sanitizer on a busy machine took more than
    hostile_srv's 2 s from the first connect to the last Finished once, and
    the last were closed as stalled."""
    srv = TlsServer(tls_opts(certs, "ssl_handshake_timeout=60"),
                    str(tmp_path)).start()
    yield srv
    srv.stop()


def test_a_thousand_handshakes_at_once(crowd_srv, certs):
    """1000 connections that all start their handshake together: each is
    served, then closed; memory and descriptors come back."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    srv = crowd_srv
    n = 1000
    ctx = client_ctx(certs)
    fds = open_fds(srv.pid)
    with Guard(srv, rss_bound_kib=256 * 1024):
        socks = [socket.create_connection((HOST, srv.tls_port), timeout=10)
                 for _ in range(n)]
        for s in socks:
            s.setblocking(False)
        tls = [ctx.wrap_socket(s, server_hostname="localhost",
                               do_handshake_on_connect=False) for s in socks]
        pending = set(range(n))
        deadline = time.monotonic() + 60
        while pending:
            assert time.monotonic() < deadline, "%d handshakes left" % \
                len(pending)
            rd, wr = [], []
            for i in list(pending):
                try:
                    tls[i].do_handshake()
                    pending.discard(i)
                except ssl.SSLWantReadError:
                    rd.append(tls[i])
                except ssl.SSLWantWriteError:
                    wr.append(tls[i])
            if pending:
                select.select(rd, wr, [], 1.0)
        for t in tls:
            t.setblocking(True)
            t.settimeout(10)
            t.sendall(b"mn\r\n")
        for t in tls:
            assert t.recv(16) == b"MN\r\n"
        # the server keeps every connection apart
        assert stat(srv, "curr_connections") >= n
        for t in tls:
            t.close()
    wait_for(lambda: open_fds(srv.pid) <= fds, timeout=20,
             what="descriptors back")
    assert status(srv.pid, "VmRSS") > 0


def renegotiate(port, certs):
    """s_client over TLS 1.2: a request, then R (renegotiate), then one
    more; what it printed after the session summary."""
    script = ("(printf 'mn\\r\\n'; sleep 0.5; printf 'R\\n'; sleep 1; "
              "printf 'mn\\r\\n'; sleep 0.5) | openssl s_client -connect "
              "%s:%d -tls1_2 -CAfile %s 2>&1" % (HOST, port,
                                                 certs / "ca.pem"))
    out = subprocess.run(["bash", "-c", script], capture_output=True,
                         timeout=20).stdout
    return out[out.rfind(b"---\n") + 4:]


def test_renegotiation_is_refused(hostile_srv, pair, certs):
    """TLS 1.2 renegotiation asked by the client: refused as memcached
    refuses it (OpenSSL's no_renegotiation), the server goes on."""
    srv = hostile_srv
    with Guard(srv, rss_bound_kib=16 * 1024):
        out = renegotiate(srv.tls_port, certs)
    assert out.startswith(b"MN\r\nRENEGOTIATING\n"), out
    assert b"no renegotiation" in out, out
    ref = renegotiate(pair[1].tls_port, certs)
    assert ref.split(b":")[1:3] == out.split(b":")[1:3]
