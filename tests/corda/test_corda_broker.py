"""The reference receiving node on a real broker (ActiveMQ Classic over STOMP) and a real database
(SQLite): killed with SIGKILL between its commit and its acknowledgement, the broker redelivers the
copy and the restarted node answers DUPLICATE; every message's effect is committed exactly once."""

import subprocess
import sys

import pytest

from rmkit.reference_impl.corda.activemq import ActiveMQ, available
from rmkit.reference_impl.corda.message import Message, flow_id
from rmkit.reference_impl.corda.store import SqliteStore

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = ActiveMQ(str(tmp_path_factory.mktemp("activemq"))).start()
    yield b
    b.stop()


def node(broker, queue, db, *extra):
    return subprocess.run([sys.executable, "-m", "rmkit.reference_impl.corda.stomp_node", "--port", str(broker.stomp_port),
                           "--queue", queue, "--db", db, "--idle", "2", *extra], capture_output=True, text=True, timeout=120)


def test_exactly_once_across_a_kill_between_commit_and_ack(broker, tmp_path):
    import stomp

    from rmkit.reference_impl.corda.stomp_node import to_headers

    msgs = [Message(flow_id("f1", k, 0), "A:s1", k == 1, f"m{k}", "A-0", k) for k in range(1, 6)]
    copies = msgs + [msgs[1], Message(msgs[3].dedup_id, "A:s1", False, "m4")]   # a duplicate, a recovery re-send
    c = stomp.Connection([("127.0.0.1", broker.stomp_port)], heartbeats=(0, 0))
    c.connect(wait=True)
    for m in copies:
        c.send(destination="/queue/p2p.inbound.B", body="", headers=to_headers(m))
    c.disconnect()
    db = str(tmp_path / "node.sqlite")
    first = node(broker, "p2p.inbound.B", db, "--die-after-commits", "3")
    assert first.returncode == -9, first.stderr
    assert first.stdout.split() == ["NEW", "N-f1-1-0", "NEW", "N-f1-2-0", "NEW", "N-f1-3-0"]
    second = node(broker, "p2p.inbound.B", db)
    assert second.returncode == 0, second.stderr
    lines = second.stdout.splitlines()
    assert lines[0] == "DUPLICATE N-f1-3-0"   # redelivered: committed, never acknowledged
    assert "DUPLICATE N-f1-2-0" in lines and lines.count("DUPLICATE N-f1-4-0") == 1
    assert [p for _, p, _ in SqliteStore(db).effects()] == ["m1", "m2", "m3", "m4", "m5"]
    again = node(broker, "p2p.inbound.B", db)
    assert again.returncode == 0 and again.stdout == "", again.stderr   # every copy acknowledged: the queue is empty
