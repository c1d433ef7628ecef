-------------------------------- MODULE MCRMB --------------------------------
(* Bounds for checking RMB with TLC; each MCRMB_*.cfg says what its bounds  *)
(* mean and tla/manifest.json holds the expected figures.                   *)
EXTENDS RMB

\* The state without the step label: behaviours that reach the same state by different steps are
\* one state for TLC.
view == <<clock, local, bl, hash, fwd, rq, w, ex, todo, rp, out, posts, got, liveUntil, budget>>

\* A destination of another implementation, which does not check the request's exp (document 004
\* asks no check of it; the spec and rmb-go profiles make none): only the sender's own deadline check
\* then keeps an expired request from its handler. (For `RefuseExpired <- DestinationAcceptsExpired`.)
DestinationAcceptsExpired == FALSE

\* The network holds no request across a second: a POST reaches the destination (or is lost) in the
\* second it was made. Time still passes while the sender's worker waits (a slow worker, a
\* connection timeout before a retry), a handler works or a reply travels.
\* (For `DelayPossible <- NoRequestOnTheWire`.)
NoRequestOnTheWire == \A d \in Dst : ex[d] # "sent"
=============================================================================
