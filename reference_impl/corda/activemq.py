"""A real message broker for the reference receiving node: Apache ActiveMQ Classic (Debian package
``activemq``), started in the foreground on loopback, free ports and a temporary folder, and
stopped by the PID of its JVM (never by name). Ready when it answers a STOMP CONNECT."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

from rmkit.interrupts import held

JAR = Path("/usr/share/activemq/bin/activemq.jar")
# A broker that is killed and restarted many times should start on little CPU: the client compiler
# only and the serial collector take about 1.1 s of CPU to readiness instead of 1.75 s (measured).
JVM_OPTS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto")
_LOG4J = """log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=%d %-5p %m%n
"""


def available() -> str | None:
    """None when a broker can be started here, else why not."""
    if shutil.which("java") is None:
        return "java is not installed (apt-get install openjdk-17-jre-headless)"
    if not JAR.is_file():
        return f"ActiveMQ is not installed ({JAR} missing; apt-get install activemq)"
    return None


BIND_ATTEMPTS = 4  # first starts tried on fresh ports when a port was taken before the JVM bound it


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ActiveMQ:
    def __init__(self, folder: str | None = None):
        self.base = Path(folder or tempfile.mkdtemp(prefix="rmkit-activemq-"))
        self.stomp_port = _free_port()
        self.proc: subprocess.Popen | None = None
        self.jvm_opts: list[str] = list(JVM_OPTS)
        self.abandon = threading.Event()   # set from another thread: a start under way gives up (and kills its JVM)
        self.started = False   # answered once: its STOMP port is known to others and kept

    def start(self, timeout: float = 60) -> "ActiveMQ":
        """Start the JVM and wait until it answers STOMP. A free port is only free when it is
        picked: another program (another test's broker) may take it before the JVM binds it. A
        first start that fails so ("Address already in use") is tried again on other ports, a few
        times; a restart keeps its STOMP port, which nodes and bridges already know."""
        (self.base / "conf").mkdir(parents=True, exist_ok=True)
        (self.base / "data").mkdir(exist_ok=True)
        (self.base / "conf" / "log4j.properties").write_text(_LOG4J)
        for attempt in range(1 if self.started else BIND_ATTEMPTS):
            if self._start_jvm(timeout):
                self.started = True
                return self
            if attempt == BIND_ATTEMPTS - 1 or not self._lost_a_port():
                break
            self.stomp_port = _free_port()
        if self.proc.poll() is not None:
            raise RuntimeError(f"ActiveMQ exited with {self.proc.returncode}; see {self.base / 'broker.log'}")
        self.stop()
        raise RuntimeError(f"ActiveMQ did not answer STOMP within {timeout} s; see {self.base / 'broker.log'}")

    def _start_jvm(self, timeout: float) -> bool:
        """One JVM started, until it answers (True), exits, or ``timeout`` passes (False)."""
        opens = [f"--add-opens=java.base/{m}=ALL-UNNAMED" for m in ("java.lang", "java.util", "java.util.concurrent", "java.net")]
        # the folder is a value in the broker's URI: percent-encoded (ActiveMQ decodes it), so that a
        # space or any other character a URI cannot hold does not make the URI invalid
        uri = (f"broker:(tcp://127.0.0.1:{_free_port()},stomp://127.0.0.1:{self.stomp_port}?transport.tcpNoDelay=true)"
               f"?brokerName=rmkit&useJmx=false&persistent=true&dataDirectory={quote(str(self.base / 'data'), safe='/')}")
        argv = ["java", "-Xms64m", "-Xmx256m", *self.jvm_opts, *opens, "-Dactivemq.home=/usr/share/activemq", f"-Dactivemq.base={self.base}",
                f"-Dactivemq.conf={self.base / 'conf'}", f"-Dactivemq.data={self.base / 'data'}", "-jar", str(JAR), "start", uri]
        if self.abandon.is_set():
            raise RuntimeError("ActiveMQ start abandoned")
        log_path = self.base / "broker.log"
        self.log_from = log_path.stat().st_size if log_path.exists() else 0
        with held():   # the JVM started and its PID recorded, or neither
            self.log = open(log_path, "ab")
            self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.abandon.is_set():
                self.kill()
                raise RuntimeError("ActiveMQ start abandoned")
            if self.proc.poll() is not None:
                self.log.close()
                return False
            if self._answers():
                return True
            time.sleep(0.3)
        return False

    def _lost_a_port(self) -> bool:
        """Did the JVM just started exit because a port it was given was taken meanwhile?"""
        if self.proc is None or self.proc.poll() is None:
            return False
        with open(self.base / "broker.log", "rb") as f:
            f.seek(self.log_from)
            return b"Address already in use" in f.read()

    def _answers(self) -> bool:
        """Does the STOMP port answer a CONNECT frame with CONNECTED, within 5 s? A raw frame on a
        socket with a timeout: a port that another program holds and that never answers STOMP must
        not hang the wait (a STOMP client library waits for its CONNECTED without a limit)."""
        try:
            with socket.create_connection(("127.0.0.1", self.stomp_port), timeout=5) as s:
                s.sendall(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00")
                return s.recv(16).startswith(b"CONNECTED")
        except OSError:
            return False

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float = 15) -> bool:
        """Stop the JVM by its PID (SIGTERM; SIGKILL after ``grace`` seconds); False when it needed SIGKILL."""
        clean = True
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                clean = False
        if getattr(self, "log", None):
            self.log.close()
        return clean

    def kill(self) -> None:
        """SIGKILL the JVM (a crash: the journal is replayed at the next :meth:`start`, which keeps
        the folder and the STOMP port)."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if getattr(self, "log", None):
            self.log.close()
