-------------------------------- MODULE MCRMB --------------------------------
(* Bounds for checking RMB with TLC; each MCRMB_*.cfg says what its bounds  *)
(* mean and tla/manifest.json holds the expected figures.                   *)
EXTENDS RMB

\* The state without the step label: behaviours that reach the same state by different steps are
\* one state for TLC.
view == <<clock, local, bl, hash, fwd, rq, w, ex, todo, rp, out, posts, got, liveUntil, budget>>
=============================================================================
