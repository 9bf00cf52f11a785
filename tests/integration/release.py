"""The release daemon (build/anchorkv, jemalloc, no sanitizer) for the tests
that need it: what production answers, and what its memory really is.

Started and stopped like conftest.Server (SIGTERM, exit status 0).
"""
import os

import conftest

REL_BIN = os.path.join(conftest.ROOT, "build/anchorkv")


class ReleaseServer(conftest.Server):
    """build/anchorkv on a free 127.0.0.1 port."""

    def command(self, port):
        return [REL_BIN, "-l", conftest.HOST, "-p", str(port)] + self.args


def start_release(args, workdir):
    return ReleaseServer(args, workdir).start()


def vm_rss_kib(pid):
    """VmRSS of a process, in KiB, from /proc."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)
