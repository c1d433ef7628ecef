------------------------------- MODULE MCCorda -------------------------------
(* Bounds for checking CordaP2P with TLC; each MCCorda*.cfg says what its   *)
(* bounds mean and tla/manifest.json holds the expected figures.           *)
EXTENDS CordaP2P

\* The state without the step label: behaviours that reach the same state by different steps are
\* one state for TLC.
view == <<ckpt, produced, recov, epoch, seq, out, otag, transit, acks, inq, itag, iconn, proc, toack, db,
          effects, sent, early, budget>>
=============================================================================
