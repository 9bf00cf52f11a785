"""The answers recorded from memcached in test_protocol.c still are its own.

tests/unit/test_protocol.c compares the engine's answers with 84 rows of
memcached_cases[], recorded from memcached 1.6.18 by
tests/unit/memcached_cases.py. This plays every row to the reference
memcached again and checks that it answers exactly what was recorded, so a
row edited by hand, or a reference that changed, shows up here. Skipped if
memcached is missing (a failure under CI=true), and in the memcached
flavor of the suite.
"""
import os
import shutil
import sys

import pytest

from test_classic_diff import MEMCACHED, Memcached

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unit"))
import memcached_cases  # noqa: E402

pytestmark = pytest.mark.anchorkv_only


def test_recorded_answers_are_memcacheds(tmp_path):
    if not os.path.exists(MEMCACHED) and not shutil.which("memcached"):
        pytest.skip("memcached is not installed")
    cases = memcached_cases.read_cases()
    assert len(cases) == 96
    srv = Memcached([], str(tmp_path)).start()
    try:
        wrong = []
        for i, (req, resp, closed, _, _) in enumerate(cases):
            got, got_closed = memcached_cases.play(srv.host, srv.port, req,
                                                   len(resp))
            if (got, got_closed) != (resp, closed):
                wrong.append((i, req[:80], got[:200], got_closed))
        assert not wrong, wrong
    finally:
        srv.stop(check=False)
