"""One STOMP 1.2 connection to an ActiveMQ broker, as the node and bridge processes use it:
heart-beats on (a frozen client is dropped by the broker and its messages redelivered), individual
acknowledgements, sends that wait for the broker's receipt (the message is persisted when it comes),
and a clear signal when the connection is lost (the process then exits; its supervisor restarts it
and the broker redelivers what it had not acknowledged)."""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import time


class LinkLost(Exception):
    """The broker connection is gone (broker killed or restarted, heart-beats missed)."""


@contextlib.contextmanager
def _link_errors(port: int):
    """A STOMP call on a connection that went away (broker killed or restarting) is a lost link."""
    from stomp.exception import StompException

    try:
        yield
    except (StompException, OSError) as e:
        raise LinkLost(f"connection to the broker on port {port} lost ({type(e).__name__})") from e


class StompLink:
    def __init__(self, port: int, heartbeat_ms: int = 1000, connect_timeout: float = 30.0, host: str = "127.0.0.1"):
        import stomp

        self.port = port
        self.inbox: queue.Queue = queue.Queue()
        self.lost = threading.Event()
        self._receipts: dict[str, threading.Event] = {}
        self._ids = itertools.count(1)
        self._closing = False
        link = self

        class Listener(stomp.ConnectionListener):
            def on_message(self, frame):
                link.inbox.put(frame)

            def on_receipt(self, frame):
                ev = link._receipts.get(frame.headers.get("receipt-id", ""))
                if ev is not None:
                    ev.set()

            def on_disconnected(self):
                if not link._closing:
                    link.lost.set()

            def on_heartbeat_timeout(self):
                link.lost.set()

            def on_error(self, frame):
                link.lost.set()

        deadline = time.monotonic() + connect_timeout
        while True:   # the broker may still be starting (or restarting)
            self.conn = stomp.Connection12([(host, port)], heartbeats=(heartbeat_ms, heartbeat_ms),
                                           reconnect_attempts_max=1)
            self.conn.set_listener("link", Listener())
            try:
                self.conn.connect(wait=True)
                break
            except Exception as e:
                if time.monotonic() > deadline:
                    raise LinkLost(f"no broker answering STOMP on {host}:{port} within {connect_timeout} s: {e}") from e
                time.sleep(0.2)

    def subscribe(self, queue_name: str, prefetch: int) -> None:
        with _link_errors(self.port):
            self.conn.subscribe(destination=f"/queue/{queue_name}", id="1", ack="client-individual",
                                headers={"activemq.prefetchSize": str(prefetch)})

    def take(self, most: int, timeout: float) -> list:
        """Up to ``most`` frames: waits ``timeout`` for the first, then takes what is there."""
        self.check()
        try:
            frames = [self.inbox.get(timeout=timeout)]
        except queue.Empty:
            return []
        while len(frames) < most:
            try:
                frames.append(self.inbox.get_nowait())
            except queue.Empty:
                break
        return frames

    def check(self) -> None:
        if self.lost.is_set():
            raise LinkLost(f"connection to the broker on port {self.port} lost")

    def send(self, queue_name: str, headers: dict, body: str = "", timeout: float = 10.0) -> None:
        """Send a persistent message and wait for the broker's receipt."""
        self.wait(self.send_async(queue_name, headers, body), timeout)

    def send_async(self, queue_name: str, headers: dict, body: str = "") -> str:
        """Send a persistent message asking for a receipt; :meth:`wait` for it by the returned id."""
        self.check()
        rid = f"r{next(self._ids)}"
        self._receipts[rid] = threading.Event()
        with _link_errors(self.port):
            self.conn.send(destination=f"/queue/{queue_name}", body=body, headers={**headers, "persistent": "true"}, receipt=rid)
        return rid

    def wait(self, rid: str, timeout: float = 10.0) -> None:
        """Until the broker's receipt for ``rid`` came (the message is persisted)."""
        ev = self._receipts[rid]
        try:
            deadline = time.monotonic() + timeout
            while not ev.wait(0.05):
                self.check()
                if time.monotonic() > deadline:
                    raise LinkLost(f"no receipt from the broker on port {self.port} within {timeout} s")
        finally:
            del self._receipts[rid]

    def ack(self, frame) -> None:
        self.check()
        with _link_errors(self.port):
            self.conn.ack(frame.headers["ack"])

    def close(self) -> None:
        self._closing = True
        try:
            self.conn.disconnect()
        except Exception:
            pass
