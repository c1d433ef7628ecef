"""Per protocol, what every layer above reads: the compiled spec (``model``), the record
format (``records``), signing and key files (``signing``, ``keys``). Nothing here imports
the reference implementations, checkers or driven suites."""
