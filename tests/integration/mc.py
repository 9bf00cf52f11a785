"""A minimal raw-socket client for the memcached text protocol.

Every receive has a timeout, so a server that hangs makes a test fail
quickly instead of blocking the suite. Nothing here hides the bytes on the
wire: tests compare exact replies.
"""
import socket
import time

DEFAULT_TIMEOUT = 5.0


class ProtocolError(AssertionError):
    """The server sent something the helper did not expect."""


class Conn:
    """One TCP connection to the server, with a receive buffer."""

    def __init__(self, host, port, timeout=DEFAULT_TIMEOUT):
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    # --- raw I/O -------------------------------------------------------

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("timed out; have %r" % self.buf[:200])
        self.sock.settimeout(left)
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("connection closed; have %r"
                                  % self.buf[:200])
        self.buf += chunk

    def recv_exactly(self, n, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv_until(self, marker, timeout=None):
        """Bytes up to and including @marker."""
        if isinstance(marker, str):
            marker = marker.encode()
        deadline = time.monotonic() + (timeout or self.timeout)
        start = 0
        while True:
            i = self.buf.find(marker, start)
            if i >= 0:
                end = i + len(marker)
                out, self.buf = self.buf[:end], self.buf[end:]
                return out
            start = max(0, len(self.buf) - len(marker) + 1)
            self._fill(deadline)

    def recv_line(self, timeout=None):
        """One reply line, without its \\r\\n."""
        return self.recv_until(b"\r\n", timeout)[:-2]

    def expect(self, data, timeout=None):
        """Receive exactly len(@data) bytes and check they are @data."""
        if isinstance(data, str):
            data = data.encode()
        got = self.recv_exactly(len(data), timeout)
        if got != data:
            raise ProtocolError("expected %r, got %r (then %r)"
                                % (data[:300], got[:300], self.buf[:100]))

    def recv_available(self, wait=0.2):
        """Whatever arrives within @wait seconds (b"" if nothing)."""
        deadline = time.monotonic() + wait
        try:
            while True:
                self._fill(deadline)
        except (socket.timeout, ConnectionError):
            pass
        out, self.buf = self.buf, b""
        return out

    def assert_closed(self, timeout=None):
        """The server closes the connection; return what came before EOF."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProtocolError("connection not closed; have %r"
                                    % self.buf[:200])
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:
                chunk = b""
            except socket.timeout:
                continue
            if not chunk:
                out, self.buf = self.buf, b""
                return out
            self.buf += chunk

    def assert_quiet(self, wait=0.2):
        """Nothing more arrives within @wait seconds."""
        extra = self.recv_available(wait)
        if extra:
            raise ProtocolError("unexpected bytes %r" % extra[:300])

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- commands ------------------------------------------------------

    def cmd(self, line):
        """Send one command line; return the one-line reply."""
        if isinstance(line, str):
            line = line.encode()
        self.send(line + b"\r\n")
        return self.recv_line()

    def store(self, op, key, value, flags=0, exptime=0, cas=None,
              noreply=False):
        if isinstance(key, str):
            key = key.encode()
        if isinstance(value, str):
            value = value.encode()
        line = b"%s %s %d %d %d" % (op.encode(), key, flags, exptime,
                                    len(value))
        if cas is not None:
            line += b" %d" % cas
        if noreply:
            line += b" noreply"
        self.send(line + b"\r\n" + value + b"\r\n")
        if noreply:
            return None
        return self.recv_line()

    def set(self, key, value, flags=0, exptime=0, noreply=False):
        return self.store("set", key, value, flags, exptime, None, noreply)

    def read_values(self, with_cas=False, prefix=b"VALUE"):
        """Parse VALUE lines up to END.

        Return a list of (key, flags, data) or (key, flags, data, cas).
        """
        out = []
        while True:
            line = self.recv_line()
            if line == b"END":
                return out
            parts = line.split(b" ")
            if parts[0] != prefix or len(parts) != (5 if with_cas else 4):
                raise ProtocolError("bad value line %r" % line)
            n = int(parts[3])
            data = self.recv_exactly(n + 2)
            if data[-2:] != b"\r\n":
                raise ProtocolError("value not followed by CRLF: %r"
                                    % data[-10:])
            item = (parts[1], int(parts[2]), data[:-2])
            if with_cas:
                item += (int(parts[4]),)
            out.append(item)

    def get(self, *keys):
        """get the keys; return {key: data} (bytes keys)."""
        ks = [k.encode() if isinstance(k, str) else k for k in keys]
        self.send(b"get " + b" ".join(ks) + b"\r\n")
        return {k: d for k, _, d in self.read_values()}

    def get1(self, key):
        """The value of one key, or None."""
        kb = key.encode() if isinstance(key, str) else key
        return self.get(kb).get(kb)

    def gets(self, *keys):
        """gets the keys; return {key: (flags, data, cas)}."""
        ks = [k.encode() if isinstance(k, str) else k for k in keys]
        self.send(b"gets " + b" ".join(ks) + b"\r\n")
        return {k: (f, d, c) for k, f, d, c in self.read_values(True)}

    def stats(self, sub=""):
        """stats [sub] as {name: value-string}."""
        self.send(("stats %s" % sub).strip().encode() + b"\r\n")
        out = {}
        while True:
            line = self.recv_line()
            if line == b"END":
                return out
            parts = line.split(b" ", 2)
            if parts[0] != b"STAT" or len(parts) != 3:
                raise ProtocolError("bad stats line %r" % line)
            out[parts[1].decode()] = parts[2].decode()

    def read_keys(self):
        """Parse KEY lines up to END; return the keys."""
        out = []
        while True:
            line = self.recv_line()
            if line == b"END":
                return out
            if not line.startswith(b"KEY ") or b" " in line[4:]:
                raise ProtocolError("bad key line %r" % line)
            out.append(line[4:])
