"""A protocol's rules as handlers registered by rule id.

Why: a rule should be judged in one place that its id leads to. Each protocol keeps a
:class:`RuleRegistry` (``conformance/<protocol>/handlers.py``) and marks the code that judges a rule
with ``@registry.handles("ID", ...)``; a second handler for one id is refused at import, and the
registry is what the tests hold against ``rules.yaml`` (every rule: one handler, or the reason no
log shows it) and what the rule index of ARCHITECTURE.md names.

Where a protocol's checker raises events (a record of some kind read, a subject closed), its
handlers are classes whose ``on_<event>`` methods listen; :class:`EventHooks` binds each event to
the one method that listens to it, as a plain attribute, so that the engine's hot loop calls it
without a lookup (an event nobody listens to reads as None, and the engine skips it).
"""

from __future__ import annotations

from typing import Any, Callable


class RuleRegistry(dict):
    """Rule id -> the handler (a class or a function) that judges it."""

    def handles(self, *rules: str) -> Callable:
        """Register the decorated handler as the one judge of ``rules`` (kept on it as ``rules``)."""

        def register(handler):
            for rule in rules:
                if rule in self:
                    raise ValueError(f"{rule} has two handlers: {self[rule].__name__} and {handler.__name__}")
                self[rule] = handler
            handler.rules = rules
            return handler

        return register


class EventHooks:
    """The engine's events, each bound to the one handler method that listens to it (``on_<event>``
    of a handler class in ``registry``, built once with ``owner``: the run it judges for), or None
    where no handler does; ``handlers`` maps each handler class to its instance."""

    def __init__(self, registry: RuleRegistry, owner: Any):
        self.handlers = {}
        for cls in dict.fromkeys(registry.values()):  # (in registration order)
            h = self.handlers[cls] = cls(owner)
            for name in dir(cls):
                if name.startswith("on_"):
                    event = name[3:]
                    if getattr(self, event, None) is not None:
                        raise ValueError(f"event {event!r} has two listeners: {getattr(self, event).__qualname__} "
                                         f"and {cls.__name__}.{name}")
                    setattr(self, event, getattr(h, name))

    def __getattr__(self, event: str):
        return None  # an event nobody listens to
