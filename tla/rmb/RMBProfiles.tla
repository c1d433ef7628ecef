----------------------------- MODULE RMBProfiles -----------------------------
(* GENERATED from spec/rmb/behaviour.yaml by `make tla-tables`                  *)
(* (rmkit.conformance.rmb.tla_tables). Do not edit: change the YAML and         *)
(* regenerate; a test fails when this is stale.                                  *)
Profiles == {"spec", "rmb-rs-v1", "rmb-go"}

\* try_bounds.min: the fewest attempts a forward job makes
TryMinIn(p) ==
    CASE p = "spec" -> 1
    [] p = "rmb-rs-v1" -> 1
    [] p = "rmb-go" -> 1
\* try_bounds.max: the most attempts (0: no bound)
TryMaxIn(p) ==
    CASE p = "spec" -> 0
    [] p = "rmb-rs-v1" -> 5
    [] p = "rmb-go" -> 0
\* retry_on: TRUE when an HTTP error status is retried too (not only connection errors)
RetryAnyIn(p) ==
    CASE p = "spec" -> FALSE
    [] p = "rmb-rs-v1" -> FALSE
    [] p = "rmb-go" -> TRUE
\* retry_queue: a retry waits in a Redis list, its attempt number with it (else in the worker's memory)
RetryQueueIn(p) ==
    CASE p = "spec" -> FALSE
    [] p = "rmb-rs-v1" -> FALSE
    [] p = "rmb-go" -> TRUE
\* backlog_written: TRUE when the backlog entry is written after a successful POST (the request waits under pending_key before)
BacklogAfterPostIn(p) ==
    CASE p = "spec" -> FALSE
    [] p = "rmb-rs-v1" -> FALSE
    [] p = "rmb-go" -> TRUE
\* restamp_per_attempt: the deadline is checked (and now re-stamped) before every attempt
RestampIn(p) ==
    CASE p = "spec" -> FALSE
    [] p = "rmb-rs-v1" -> TRUE
    [] p = "rmb-go" -> FALSE
\* refuse_expired: the remote endpoint refuses a request whose now + exp has passed
RefuseExpiredIn(p) ==
    CASE p = "spec" -> FALSE
    [] p = "rmb-rs-v1" -> TRUE
    [] p = "rmb-go" -> FALSE
\* scrubber: a periodic task removes backlog entries past epoch + exp and pushes a timeout error to ret
ScrubberIn(p) ==
    CASE p = "spec" -> FALSE
    [] p = "rmb-rs-v1" -> FALSE
    [] p = "rmb-go" -> TRUE
\* backlog_deleted_on_reply: the reply endpoint deletes the backlog entry
DeletedOnReplyIn(p) ==
    CASE p = "spec" -> FALSE
    [] p = "rmb-rs-v1" -> FALSE
    [] p = "rmb-go" -> FALSE
=============================================================================
