"""One place that starts Spark for the audit, the tests and the benchmark.

A local session on a shared 2-core machine must stay small and quiet: the driver binds the
loopback address (otherwise Spark picks an external interface), the web UI is off, shuffles use
few partitions, and the JVM's log level is WARN-free so that the console shows the stage progress
bar rather than a flood of warnings. On a cluster (``--master spark://…``, ``yarn``) the same
settings apply except the partition count, which the cluster's defaults decide.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys

from rmkit.errors import RmkitError


class SparkUnavailable(RmkitError):
    """PySpark or Java is missing: the audit cannot run (exit code 2)."""

    exit_code = 2


def java_problem() -> str | None:
    """Why Java cannot be used (None when it can): Spark needs a JVM, found by JAVA_HOME or PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return None
    if shutil.which("java"):
        return None
    return "Spark needs Java 17 or later: expected `java` on PATH or JAVA_HOME set, found neither"


def is_local(master: str) -> bool:
    return master.startswith("local")


def unreachable_master(master: str | None, timeout: float = 5.0) -> str | None:
    """Why a standalone master (``spark://host:port[,host:port]``) cannot be reached, checked with a
    TCP connection before the JVM starts (None: one answers, or the master is not standalone).
    Spark itself would retry for a minute and then fail with a Py4J message naming no host."""
    import socket

    if not master or not master.startswith("spark://"):
        return None
    why = []
    for hostport in master[len("spark://"):].split(","):
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            return f"--master {master}: expected spark://HOST:PORT, found {hostport!r}"
        try:
            socket.create_connection((host, int(port)), timeout).close()
            return None
        except OSError as exc:
            why.append(f"{host}:{port}: {exc.strerror or exc}")
    return f"--master {master}: no Spark master answers ({'; '.join(why)}); is it started, and is the port its RPC port (7077 by default)?"


def get_session(master: str | None = "local[2]", app: str = "rmkit-audit", shuffle_partitions: int | None = None,
                driver_memory: str | None = None, progress: bool = True, extra: dict | None = None,
                log_file: str | None = None):
    """The SparkSession for ``master`` (an existing active session is reused as it is, so that one
    test session or a spark-submit launch serves every call). ``extra``: Spark settings (``--conf``),
    applied last. ``log_file``: where the JVM's own output goes (its log, its warnings, its stage
    bars), so that the console holds the audit's output alone."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailable("rmkit audit needs PySpark: install the `spark` extra "
                               "(pip install 'rmkit[spark]'), found no module named pyspark") from None
    for module in ("pyarrow", "pandas"):  # Spark hands the records to the checker as Arrow batches
        try:
            importlib.import_module(module)
        except ImportError:
            raise SparkUnavailable(f"rmkit audit needs {module} (Spark's Arrow transfer): install the `spark` extra "
                                   f"(pip install 'rmkit[spark]'), found no module named {module}") from None
    # a cluster master named on the command line is asked first, even where this process already
    # holds a session (of another master, e.g. a local one an earlier audit started)
    problem = unreachable_master(master) if master is not None and not is_local(master) else None
    if problem:
        raise SparkUnavailable(problem)
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    problem = java_problem() or unreachable_master(master)
    if problem:
        raise SparkUnavailable(problem)
    # master None: launched by spark-submit, whose --master and --conf decide
    local = master is not None and is_local(master)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # the driver's Python must be the workers' Python too (a venv is not on PATH under spark-submit)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = SparkSession.builder if master is None else SparkSession.builder.master(master)
    b = (b.appName(app)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "true" if progress and not log_file else "false")
         .config("spark.sql.variant.allowDuplicateKeys", "true")  # a JSON reader keeps the last value
         .config("spark.sql.session.timeZone", "UTC"))
    if master is not None:  # the driver JVM starts here: give it the quiet log configuration
        log_conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
        b = b.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_conf}")
    if local:
        b = b.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        b = b.config("spark.sql.shuffle.partitions", str(shuffle_partitions or 4))
        b = b.config("spark.driver.memory", driver_memory or "3g")
    elif shuffle_partitions:
        b = b.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    for k, v in (extra or {}).items():
        b = b.config(k, v)
    try:
        with _stderr_to(log_file):  # the JVM, started here, keeps the stderr it was given
            spark = b.getOrCreate()
    except Exception as exc:  # the JVM failed to start: report it as the environment's problem
        text = str(exc)
        first = next((ln for ln in text.splitlines() if "Exception:" in ln or "Error:" in ln), text.splitlines()[0] if text else "")
        raise SparkUnavailable(f"could not start Spark (master {master}): {first or type(exc).__name__}"
                               + (f"; Spark's own log: {log_file}" if log_file else "")) from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class _stderr_to:
    """File descriptor 2 pointed at ``path`` (appended to) for the block, then restored: a child
    process started inside it (Spark's JVM) writes its stderr there for its whole life."""

    def __init__(self, path: str | None):
        self.path, self.saved = path, None

    def __enter__(self):
        if self.path:
            sys.stderr.flush()
            self.saved = os.dup(2)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(fd, 2)
            os.close(fd)
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            sys.stderr.flush()
            os.dup2(self.saved, 2)
            os.close(self.saved)
        return False
