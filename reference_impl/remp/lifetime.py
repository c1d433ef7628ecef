"""When a REMP message becomes obsolete: the two session rules of ``spec/remp/lifetimes.yaml``.

Why two: the documents say "received while master catchain session N is in action: obsolete at
N+2" (:class:`DocumentsRule`), while the running node keeps one bucket per master session and drops
the buckets below a lower bound computed from session start times (:class:`SessionWindow`). Which
profile uses which rule, and the rules' numbers, come from the spec's ``session_rules``.

Both rules have the same face: ``start(seqno, start_time)`` records a session start and returns the
seqnos of the buckets that just fell out of the window; ``lower_bound`` is the oldest live session;
``is_live(seqno)`` tells whether messages received in that session are still tracked. Times are
integers in any unit (the machines use milliseconds); lifetimes are in the same unit.
"""

from __future__ import annotations

from rmkit.protocols.remp.model import model_for

DOCUMENTS, WINDOW = "documents", "window"


def session_rule_name(profile: str) -> str:
    """The name of the ``session_rules`` entry the profile follows."""
    rules = model_for(profile).session_rules
    for name, rule in rules.items():
        if profile in rule.get("profiles", ()):
            return name
    raise ValueError(f"spec/remp/lifetimes.yaml names no session rule for profile {profile!r}")


def obsolete_after_sessions(profile: str = "spec") -> int:
    """N of the documents' rule "received in session S: obsolete at S+N" (2 in the documents)."""
    return int(model_for(profile).session_rules[DOCUMENTS]["obsolete_after_sessions"])


def documents_obsolete(received_session: int, current_session: int, after: int | None = None) -> bool:
    """The documents' rule: a message received in ``received_session`` is obsolete in ``current_session``."""
    n = obsolete_after_sessions() if after is None else after
    return current_session >= received_session + n


class DocumentsRule:
    """The documents' rule as a window: at the start of session S the buckets of sessions
    <= S - N are dropped (N = ``obsolete_after``, 2 in the spec)."""

    def __init__(self, obsolete_after: int | None = None):
        self.obsolete_after = obsolete_after_sessions() if obsolete_after is None else obsolete_after
        self.lower_bound: int | None = None
        self.latest: int | None = None

    def start(self, seqno: int, start_time: int) -> tuple[int, ...]:
        if self.latest is not None and seqno < self.latest:
            raise ValueError(f"session {seqno} started after session {self.latest}: sessions cannot go backwards")
        self.latest = seqno
        new = seqno - self.obsolete_after + 1
        old = self.lower_bound
        if old is not None and new <= old:
            return ()
        self.lower_bound = new
        return tuple(range(old, new)) if old is not None else ()

    def is_live(self, seqno: int) -> bool:
        return self.lower_bound is None or seqno >= self.lower_bound


class SessionWindow:
    """The replay-protection window as the node codes it (spec ``session_rules.window``).

    At the start of a session with start time T the lower bound becomes the largest recorded seqno
    whose start is <= T - lifetime; when none qualifies it stays (the first session started sets
    it). Errors, raised as ValueError: start times decreasing with seqno, a session recreated with
    another start time, a session started below the latest one (advancing backwards).
    """

    def __init__(self, lifetime: int):
        if lifetime <= 0:
            raise ValueError(f"lifetime must be positive, got {lifetime}")
        self.lifetime = lifetime
        self.lower_bound: int | None = None
        self._starts: dict[int, int] = {}  # seqno -> start, for seqnos >= lower_bound, ascending
        self.latest: int | None = None

    def start(self, seqno: int, start_time: int) -> tuple[int, ...]:
        known = self._starts.get(seqno)
        if known is not None:
            if known != start_time:
                raise ValueError(f"session {seqno} recreated with start time {start_time}; it started at {known}")
            return ()
        latest = self.latest
        if latest is not None:
            if seqno < latest:
                raise ValueError(f"session {seqno} started after session {latest}: the window cannot advance backwards")
            if start_time < self._starts[latest]:
                raise ValueError(f"session {seqno} starts at {start_time}, before session {latest} ({self._starts[latest]}): "
                                 "start times must not decrease with seqno")
        self._starts[seqno] = start_time
        self.latest = seqno
        cutoff = start_time - self.lifetime
        new = None
        for s, t in self._starts.items():  # ascending seqno, non-decreasing start
            if t <= cutoff:
                new = s
            else:
                break
        old = self.lower_bound
        if old is None:
            self.lower_bound = new if new is not None else seqno
            return ()
        if new is None or new == old:
            return ()
        if new < old:  # cannot happen with the checks above; kept as the rule's own guard
            raise ValueError(f"lower bound would move backwards from {old} to {new}")
        dropped = tuple(s for s in self._starts if s < new)
        for s in dropped:
            del self._starts[s]
        self.lower_bound = new
        return dropped

    def is_live(self, seqno: int) -> bool:
        return self.lower_bound is None or seqno >= self.lower_bound


def expiry_rule(profile: str, lifetime: int):
    """The session rule the profile follows, as a fresh window (``lifetime`` in the caller's unit)."""
    name = session_rule_name(profile)
    if name == DOCUMENTS:
        return DocumentsRule(obsolete_after_sessions(profile))
    if name == WINDOW:
        return SessionWindow(lifetime)
    raise ValueError(f"unknown session rule {name!r} in spec/remp/lifetimes.yaml")
