"""An independent model of anchorkv's ordered keyspace, for range tests.

Order: integer keys (canonical unsigned 64-bit decimals: "0", "7",
"18446744073709551615"; not "007", "-1", "+1" or 2^64) by value, then every
other key bytewise, a prefix before its extensions.

A bound is b"-" (before every key), b"+" (after every key), b"[key"
(inclusive) or b"(key" (exclusive).
"""
import bisect
import re

U64_MAX = (1 << 64) - 1
_INT_RE = re.compile(rb"0|[1-9][0-9]{0,19}")


def is_int_key(key):
    return _INT_RE.fullmatch(key) is not None and int(key) <= U64_MAX


def order(key):
    """A sort key giving the keyspace order."""
    if is_int_key(key):
        return (0, int(key), b"")
    return (1, 0, key)


def in_range(key, lo, hi):
    o = order(key)
    if lo != b"-":
        if lo == b"+":
            return False
        b = order(lo[1:])
        if o < b or (o == b and lo[:1] == b"("):
            return False
    if hi != b"+":
        if hi == b"-":
            return False
        b = order(hi[1:])
        if o > b or (o == b and hi[:1] == b"("):
            return False
    return True


def bound_pos(bound, upper):
    """Where a bound sits, for the from <= to check: a comparable tuple."""
    if bound == b"-":
        return (-1,)
    if bound == b"+":
        return (2,)
    return (0,) + order(bound[1:])


def inverted(lo, hi):
    """True when from is above to (protocol/PROTOCOL.md): its key sorts
    after to's, or it is + and to is not, or to is - and from is not. The
    brackets do not matter: "(a [a" is valid (and empty), so are "- -"
    and "+ +"."""
    return bound_pos(lo, False) > bound_pos(hi, True)


class Model:
    """key -> (flags, value), with the keys kept in keyspace order."""

    def __init__(self):
        self.items = {}
        self._sorted = []	# (order(key), key)

    def set(self, key, flags, value):
        if key not in self.items:
            bisect.insort(self._sorted, (order(key), key))
        self.items[key] = (flags, value)

    def delete(self, key):
        if key in self.items:
            del self.items[key]
            i = bisect.bisect_left(self._sorted, (order(key), key))
            del self._sorted[i]
            return True
        return False

    def keys_in(self, lo, hi):
        """Every key of the range, ascending."""
        # narrow with bisect, then filter exactly
        start = 0
        end = len(self._sorted)
        if lo[:1] in (b"[", b"("):
            start = bisect.bisect_left(self._sorted, (order(lo[1:]), b""))
        if hi[:1] in (b"[", b"("):
            end = bisect.bisect_right(self._sorted,
                                      (order(hi[1:]), b"\xff" * 300))
        return [k for _, k in self._sorted[start:end]
                if in_range(k, lo, hi)]

    def range(self, lo, hi, count, reverse=False):
        keys = self.keys_in(lo, hi)
        if reverse:
            keys.reverse()
        return keys[:count]

    def delete_range(self, lo, hi):
        keys = self.keys_in(lo, hi)
        for k in keys:
            self.delete(k)
        return len(keys)

    def clear(self):
        self.items.clear()
        self._sorted.clear()
