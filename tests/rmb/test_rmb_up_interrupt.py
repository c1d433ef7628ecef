"""Ctrl-C while `rmkit rmb up` is still starting its twins: an interrupt (exit 2, said so), every
process it started stopped; not the failure of a redis-server or daemon that the same Ctrl-C (sent
to the whole process group, as a terminal does) ended."""

import os
import signal
import subprocess
import sys
import time

import pytest


@pytest.mark.parametrize("moment", ["redis", "daemons"])
def test_ctrl_c_while_up_starts_is_an_interrupt_and_nothing_is_left(tmp_path, moment):
    from rmb_support import redis_server_or_skip

    redis_server_or_skip()
    folder = tmp_path / "up"
    proc = subprocess.Popen([sys.executable, "-m", "rmkit", "rmb", "up", "3", "--dir", str(folder)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    # the start's first file is written before any redis-server; a daemon's error output as it is started
    mark = folder / ("twins.json" if moment == "redis" else "twin-1.stderr")
    limit = time.monotonic() + 60
    while not mark.exists() and proc.poll() is None and time.monotonic() < limit:
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGINT)  # the whole group, as a terminal's Ctrl-C
    out, err = proc.communicate(timeout=60)
    assert b"ready" not in out, "the twins were up before the signal: the start was not interrupted"
    assert proc.returncode == 2, err
    assert b"interrupted (SIGINT) while the twins were starting" in err and b"redis-server" not in err, err
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # no process of the group is left
