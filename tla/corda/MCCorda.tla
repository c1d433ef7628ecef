------------------------------- MODULE MCCorda -------------------------------
(* Bounds for checking CordaP2P with TLC; each MCCorda*.cfg says what its   *)
(* bounds mean and tla/manifest.json holds the expected figures.           *)
EXTENDS CordaP2P

\* The state without the step label: behaviours that reach the same state by different steps are
\* one state for TLC.
view == <<ckpt, produced, recov, epoch, seq, out, otag, transit, acks, inq, itag, iconn, proc, toack, db,
          effects, sent, budget>>

\* Witnesses (tla/manifest.json "properties"): each invariant is EXPECTED to be violated, showing that
\* the states a property speaks of are reachable in the configuration that checks it.
\* ExactlyOnce: a second copy of a message reaches the deduplicator and is answered DUPLICATE.
NoDuplicateAnswered == \A i \in DOMAIN toack : toack[i].ans # "DUPLICATE"
\* NoLoss: a transfer is lost (the message or its acknowledgement), the outbound copy alone is left.
NoTransferLost == \A i \in DOMAIN out : ~Stale(i)
\* AckAfterCommit: the broker forgets a copy the node acknowledged.
NoCopyAcked == Len(inq) = itag - 1
\* FifoPerSession: both messages committed after a rollback of the bridge.
NoneCommittedAfterRollback == ~(budget["rb"] > 0 /\ Len(effects) = N)
\* EventuallyProcessed: every message processed after the link lost one.
NoneProcessedAfterLoss == ~(budget["loss"] > 0 /\ \A k \in 1..N : Processed(k) = 1)
=============================================================================
