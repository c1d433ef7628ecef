------------------------------- MODULE MCREMP -------------------------------
(* Model values and bounds for checking REMP with TLC; each configuration   *)
(* (MCREMP*.cfg) says in its header what it checks and what its bounds      *)
(* leave out.                                                               *)
EXTENDS REMP

CONSTANTS v1, v2, v3, v4, v5, v6, v7, m1, m2

\* The same four validators in every session (N = 4, FaultyMax(4) = 1, Quorum 3).
MCMembersFour == [s \in 0..MaxSession |-> {v1, v2, v3, v4}]
\* The same seven validators in every session (N = 7, FaultyMax(7) = 2, Quorum 5).
MCMembersSeven == [s \in 0..MaxSession |-> {v1, v2, v3, v4, v5, v6, v7}]
\* One validator per session, a different one after each switch (N = 1): what the next validator
\* knows of the previous session comes from the hand-over alone.
MCMembersAlternating == [s \in 0..MaxSession |-> IF s % 2 = 0 THEN {v1} ELSE {v2}]

\* Bodies and the cache's key (UidOf, CacheKey in REMP.tla). MCUidShared: every id carries the same
\* body, so the second id is the client resubmitting the message under a new id (the ever-node
\* profile keys the cache by uid: it is one message). MCKeyById: the documents' profile, the cache
\* knows a message by its id only.
MCUidShared == [m \in Msgs |-> "u1"]
MCKeyById == [m \in Msgs |-> m]

CONSTANTS MaxCands, MaxInTransit
\* State constraints (each configuration says which it uses):
\* at most MaxCands candidate blocks (each ignored round can make collators try again);
CandsBound == Len(cands) <= MaxCands
\* the client makes its messages in the first session (a message made later expires after the
\* last session explored, so it adds states but no expiry).
SubmitFirst == session > 0 => \A m \in Msgs : fn[m] # "none"
\* at most MaxInTransit catchain records, and one fan-out's copies from the full node, in transit.
\* Hand-over records are not counted: each honest validator posts them once per switch (Rotate), to
\* the next session's honest members, so they are finitely many without a bound; counted, they
\* would stay in transit until each recipient rotates and the bound would cut every behaviour that
\* completes a switch with more than one honest validator.
NotHandOver == {p \in CcLive : p.r.k # "handover"}
TransitBound == Cardinality(NotHandOver) <= MaxInTransit /\ Cardinality(NetLive) <= Fanout
Bounds == CandsBound /\ SubmitFirst /\ TransitBound

\* The client makes a message (or the same body under a new id) only once every message made before
\* has settled (ClientSubmits <- AfterSettled): the full node reported a final status for it
\* (Finalized, or rejected in pre-evaluation), or it is in no block and every honest validator is done
\* with it (Resolved in REMP.tla: rejected, in its cache, or stopped by 2/3 rejects) with nothing left
\* in transit and every honest validator at the top of the chain. Left out: two messages in
\* processing at once before the first has an outcome (both ids in one candidate, a collator choosing
\* between them, the second id reaching a validator before the first is in a block). Kept: the
\* second id made while validators are still applying the block that holds the first (after the
\* full node's Finalized), and a faulty validator replaying the first during the second's processing.
Quiet == CcLive = {} /\ NetLive = {} /\ \A w \in Honest : tip[w] = Len(chain)
Settled(n) == fn[n] \in FnFinal \/ (n \notin ChainMsgs /\ Resolved(n) /\ Quiet)
AfterSettled(m) == \A n \in Msgs \ {m} : fn[n] # "none" => Settled(n)

\* A witness, not a property: TLC must find it violated, which shows that a configuration carries every
\* message to an outcome (the full node's Finalized, or a final status at every honest validator).
Carried(m) == fn[m] = "finalized" \/ (fn[m] = "sent" /\ \A w \in Honest : st[w][m] \in FinalStatuses)
NotAllCarried == ~\A m \in Msgs : Carried(m)

\* A witness, not a property: TLC must find it violated, which shows that a configuration completes
\* every switch it allows: the masterchain is in the last session and every honest validator has
\* moved to it (Rotate), not only the masterchain's clock.
BeforeLastSession == session < MaxSession \/ \E w \in Honest : ses[w] < MaxSession

\* Witnesses of the properties (tla/manifest.json): each must be violated, which shows that the states
\* the property speaks of are reached under a configuration's bounds (rmkit tlc --mutations remp).
\* NoReplay: an accepted message's body is still where a replay can come from: the faulty validators
\* hold it, or a copy that still counts is in flight (a resend, a late copy).
NoReplayThreat == ChainMsgs \cap (byz \cup {c[1] : c \in NetLive}) = {}
\* OneIdPerUid: the client made a second id of a body already in the chain.
NoSecondIdOfAccepted == ~\E m \in ChainMsgs, n \in passed : n # m /\ UidOf[n] = UidOf[m]
\* NoInclusionAfterObsolete: a body of a message obsolete in the session in action is still held by
\* the faulty validators or in flight to a validator.
NoObsoleteBodyAround == \A m \in byz \cup {c[1] : c \in NetLive} : LiveIn(origin[m], session)
\* FinalSticky: a message with a final status at the full node or an honest validator comes again
\* (a copy that reaches the validator, the client's resubmission).
NoFinalComesAgain ==
    /\ ~\E c \in net : c[2] \in Honest /\ st[c[2]][c[1]] \in FinalStatuses
    /\ ~(last.a = "Resubmit")
\* RejectsStopCollation: an honest validator stops collating a message for the 2/3 rule.
NobodyStopped == ~\E w \in Honest, m \in Msgs : Stopped(w, m)
\* EverySubmittedResolved: a message sent is still open after the switch (the hand-over must carry it).
NothingOpenAcrossSwitch == ~\E m \in Msgs : fn[m] = "sent" /\ session > origin[m] /\ ~Resolved(m)
\* EveryMemberHasIt: a message sent that the faulty validator holds and an honest member does not.
NoMemberWithout == ~\E m \in byz, w \in Honest : fn[m] = "sent" /\ w \in Members[session] /\ st[w][m] = "none"

\* NoFork: two candidates of one height each carry an honest signature (the votes split).
NoSplitVote ==
    ~\E b1, b2 \in 1..Len(cands) :
        /\ b1 # b2 /\ cands[b1].ses = cands[b2].ses /\ cands[b1].h = cands[b2].h
        /\ SignedBy(b1) \cap Honest # {} /\ SignedBy(b2) \cap Honest # {}

\* Bounds of the switch configuration (each says what it leaves out): the full node does not resend
\* (ResendTargets <- MCNoResend): its first copies are never lost in this model (a lost copy is one
\* never received), so a resend only repeats them; left out: a resend reaching a validator after
\* its first copy was spent (a late copy of an accepted or rejected message: small, one, handover).
\* The collator includes every message it is handed (Collate <- MCCollateAll, as in the liveness
\* configurations): left out, rejections and the 2/3 stop across a switch with a faulty validator
\* (with N = 1 in handover; byzswitch draws them at random).
MCNoResend(m) == {}
MCCollateAll(w) == CollateNoOverload(w)

\* The ever-node profile's hand-over (ForwardsAccepted <- MCNoAcceptedForwarded): finally accepted
\* messages are not forwarded (remp-as-built section 5).
MCNoAcceptedForwarded == FALSE

\* The view of the live configuration: without the reject records counted. There no collator
\* rejects and one faulty validator cannot reach StopCollationRejected(4) = 3 alone, so the records
\* change no step and no property: states that differ only in them are the same state.
LiveView == <<session, fn, origin, passed, net, byz, st, arr, tip, ses, handed, cc, cands, sigs, chain>>

\* Honest validators are interchangeable, and so are messages: the symmetry group is their product
\* (TLC reduces by the permutations listed, without composing them, so each pair is listed).
MCSymmetry == {p @@ q : p \in Permutations(Honest), q \in Permutations(Msgs)}
MsgSymmetry == Permutations(Msgs)
=============================================================================
