"""``rmkit rmb serve`` and ``rmkit rmb up``: placeholders filled by the daemon module."""


def add_commands(rsub, guard) -> None:
    pass
