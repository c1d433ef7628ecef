"""Spark jobs that check receipt logs too large for one machine (``rmkit audit``); the streaming
``rmkit check`` stays the fast path on one machine. See spark_checks/README.md."""
