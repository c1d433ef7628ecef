"""Generate ``tla/rmb/RMBProfiles.tla`` from spec/rmb's behaviour.yaml: the per-profile settings the
TLA+ model of RMB reads (try bounds, which failures are retried, where the attempt counter lives,
when the backlog is written, the per-attempt deadline check, the receiver's expiry check, the
scrubber), so the model and the reference daemon read the same facts (``make tla-tables``; a test
fails when the module is stale)."""

from __future__ import annotations

from rmkit.protocols.rmb.model import rmb_spec


def _tla(v: object) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    return f'"{v}"'


def _case(name: str, doc: str, values: dict[str, object]) -> str:
    arms = "\n    [] ".join(f'p = "{p}" -> {_tla(v)}' for p, v in values.items())
    return f"\\* {doc}\n{name}(p) ==\n    CASE {arms}"


def tables() -> dict[str, tuple[str, dict[str, object]]]:
    """Operator name -> (comment, value per profile), each read from one behaviour.yaml setting."""
    spec = rmb_spec()
    b = {p: spec.behaviour(p) for p in spec.profiles}
    return {
        "TryMinIn": ("try_bounds.min: the fewest attempts a forward job makes", {p: b[p]["try_bounds"]["min"] for p in b}),
        "TryMaxIn": ("try_bounds.max: the most attempts (0: no bound)", {p: b[p]["try_bounds"]["max"] or 0 for p in b}),
        "RetryAnyIn": ("retry_on: TRUE when an HTTP error status is retried too (not only connection errors)",
                       {p: b[p]["retry_on"] == "any" for p in b}),
        "RetryQueueIn": ("retry_queue: a retry waits in a Redis list, its attempt number with it (else in the worker's memory)",
                         {p: b[p]["retry_queue"] is not None for p in b}),
        "BacklogAfterPostIn": ("backlog_written: TRUE when the backlog entry is written after a successful POST (the request waits under pending_key before)",
                               {p: b[p]["backlog_written"] == "after-post" for p in b}),
        "RestampIn": ("restamp_per_attempt: the deadline is checked (and now re-stamped) before every attempt",
                      {p: bool(b[p]["restamp_per_attempt"]) for p in b}),
        "RefuseExpiredIn": ("refuse_expired: the remote endpoint refuses a request whose now + exp has passed",
                            {p: bool(b[p]["refuse_expired"]) for p in b}),
        "ScrubberIn": ("scrubber: a periodic task removes backlog entries past epoch + exp and pushes a timeout error to ret",
                       {p: b[p]["scrubber"] is not None for p in b}),
        "DeletedOnReplyIn": ("backlog_deleted_on_reply: the reply endpoint deletes the backlog entry",
                             {p: bool(b[p]["backlog_deleted_on_reply"]) for p in b}),
    }


def render() -> str:
    spec = rmb_spec()
    parts = [
        "----------------------------- MODULE RMBProfiles -----------------------------",
        "(* GENERATED from spec/rmb/behaviour.yaml by `make tla-tables`                  *)",
        "(* (rmkit.conformance.rmb.tla_tables). Do not edit: change the YAML and         *)",
        "(* regenerate; a test fails when this is stale.                                  *)",
        "Profiles == {" + ", ".join(f'"{p}"' for p in spec.profiles) + "}",
        "",
    ]
    parts += [_case(name, doc, values) for name, (doc, values) in tables().items()]
    parts.append("=============================================================================")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
