-------------------------------- MODULE MCRMB --------------------------------
(* Bounds for checking RMB with TLC; each MCRMB_*.cfg says what its bounds  *)
(* mean and tla/manifest.json holds the expected figures.                   *)
EXTENDS RMB

\* The state without the step label: behaviours that reach the same state by different steps are
\* one state for TLC.
view == <<clock, local, bl, hash, fwd, rq, w, ex, todo, rp, out, posts, got, liveUntil, skew, budget>>

\* A destination of another implementation, which does not check the request's exp (document 004
\* asks no check of it; the spec and rmb-go profiles make none): only the sender's own deadline check
\* then keeps an expired request from its handler. (For `RefuseExpired <- DestinationAcceptsExpired`.)
DestinationAcceptsExpired == FALSE

\* Witnesses (tla/manifest.json "properties"): each invariant is EXPECTED to be violated, showing that
\* the states a property speaks of are reachable in the configuration that checks it.
\* NoDeliveryAfterExpiry: a handler gets the request in the deadline's second.
NoDeliveryAtDeadline == \A g \in got : g.t < Deadline
\* AtMostTryAttempts: a destination gets every attempt try allows.
FewerPostsThanTry == \A d \in Dst : posts[d] < TryEff
\* RepliesOnlyWhileLive: a reply reaches $ret in the last second the request is live.
NoReplyInLastLiveSecond == \A o \in out : o.k = "reply" => o.t < liveUntil
\* AnsweredByDeadline: every destination answered, the clock past the deadline, an answer made in
\* the deadline's second.
NotAnsweredAtDeadline == ~(clock > Deadline /\ \A d \in Dst : \E o \in out : o.d = d)
                         \/ \A o \in out : o.t < Deadline
\* EventuallyAnswered: every destination answered after HTTP lost a request or an answer.
NotAnsweredAfterLoss == ~(budget["loss"] > 0 /\ \A d \in Dst : \E o \in out : o.d = d)
=============================================================================
