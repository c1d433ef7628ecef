"""rmkit audit's Spark options, checked before any JVM starts: --conf KEY=VALUE reaches the
session's settings, a standalone master that does not answer is a clear error (exit 2)."""

from __future__ import annotations

import socket

import pytest

from rmkit.cli import main
from rmkit.spark_checks.job import spark_conf, spark_log_path
from rmkit.spark_checks.session import unreachable_master

pytest.importorskip("pyspark")


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens on it now
    return port


def test_conf_pairs_are_parsed_as_spark_submit_takes_them():
    assert spark_conf(["spark.executor.memory=4g", "spark.x=a=b"]) == {"spark.executor.memory": "4g", "spark.x": "a=b"}
    with pytest.raises(Exception, match="expected KEY=VALUE"):
        spark_conf(["spark.executor.memory"])


def test_a_master_that_does_not_answer_is_named(tmp_path, capsys):
    port = _closed_port()
    why = unreachable_master(f"spark://127.0.0.1:{port}", timeout=5)
    assert why and f"127.0.0.1:{port}" in why and "no Spark master answers" in why
    assert unreachable_master("local[2]") is None and unreachable_master(None) is None
    assert "expected spark://HOST:PORT" in unreachable_master("spark://nohostport")
    log = tmp_path / "log.jsonl"  # one receipt: an empty log is refused before any master is asked
    log.write_text('{"kind":"PutIntoQueue","message_id":"' + "a" * 64 + '","timestamp":1000,"source_id":"v1","signature":""}\n')
    code = main(["audit", "--master", f"spark://127.0.0.1:{port}", str(log)])
    err = capsys.readouterr().err
    assert code == 2 and "no Spark master answers" in err and "Traceback" not in err, err


def test_a_bad_conf_is_a_usage_error(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    log.write_text("")
    assert main(["audit", "--conf", "nonsense", str(log)]) == 2
    assert "--conf 'nonsense': expected KEY=VALUE" in capsys.readouterr().err


def test_spark_log_goes_beside_the_tables(tmp_path):
    assert spark_log_path(str(tmp_path / "out")) == str(tmp_path / "out" / "spark.log")
