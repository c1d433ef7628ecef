"""``rmkit corda up`` and the cluster under it: the verdict of a run (every message committed
once, nothing died, everything stopped), what happens when a process dies or the run is
interrupted (SIGINT, SIGTERM: exit 2 and nothing left running), and the options' checks. The run
loop is tested on a fake cluster; a few tests start real brokers (ActiveMQ Classic)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rmkit.reference_impl.corda.activemq import ActiveMQ, available

needs_broker = pytest.mark.skipif(available() is not None, reason=str(available()))


def running_under(folder) -> list[str]:
    """The processes (JVMs, nodes, bridges) whose command line names ``folder``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(folder) in cmd and int(d.name) != os.getpid():
                out.append(f"{d.name}: {cmd[:200]}")
    return out


# -- on real brokers -------------------------------------------------------------------------------
@needs_broker
def test_a_broker_starts_in_a_folder_whose_name_a_uri_cannot_hold(tmp_path):
    b = ActiveMQ(str(tmp_path / "a b ä+%20")).start()
    try:
        assert (tmp_path / "a b ä+%20" / "data" / "rmkit").is_dir()
    finally:
        b.stop()
    assert running_under(tmp_path) == []
