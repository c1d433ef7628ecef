"""The names of the node's variants (``--variant``): the reference and the faulty ones that the
crash-point harness must catch (:mod:`.node` says what each does wrong). Kept apart from the node
so that every rmkit command, which lists them in its parser, need not import the node's broker,
database and STOMP modules."""

VARIANTS = ("reference", "ack_before_commit", "memory_dedup", "fastpath_no_db")
