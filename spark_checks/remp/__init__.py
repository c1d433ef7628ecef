"""``rmkit audit --protocol remp``: the REMP rules of ``rmkit check`` as one PySpark job."""
