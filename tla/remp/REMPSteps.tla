----------------------------- MODULE REMPSteps -----------------------------
(***************************************************************************)
(* REMP, Everscale's Reliable External Messaging Protocol, as the design   *)
(* documents describe it:                                                  *)
(*   000 "REMP: Reliable External Messaging Protocol" (statuses, levels,   *)
(*       catchain records, collation order, replay protection),           *)
(*   001 "REMP architecture and message lifetimes" (fan-out to N/3+1      *)
(*       validators, lifetime by master catchain session, N -> N+2).      *)
(* Where the documents leave a choice open, the model makes the choice of  *)
(* the project's Python reference machines (reference_impl/remp), so that  *)
(* the two can be checked against each other step by step; each such      *)
(* choice is marked "reference:" below. A profile is the spec's tables    *)
(* (REMPTables, generated per profile) and the three choices of            *)
(* spec/remp/behaviours.yaml taken as constants; the committed REMPTables  *)
(* is the documents' profile.                                              *)
(*                                                                         *)
(* Actors: honest validators of the current and the previous session      *)
(* (Members), up to FaultyMax(N) faulty validators that drop or withhold   *)
(* everything they get, one full node (told the next session's set ahead  *)
(* of a switch: Announce), a lossy network from the full node              *)
(* to the validators, and the REMP catchain (reliable among honest         *)
(* validators, unordered, asynchronous). Shard blocks and master blocks    *)
(* are decided by the environment: accepted, ignored or rejected.          *)
(*                                                                         *)
(* Receipts are not variables: each validator's status of each message     *)
(* (pos) is the position its receipts moved it to, by the spec's           *)
(* transition table (REMPTables, generated from spec/remp). A receipt the   *)
(* table does not allow from the current position is not sent.            *)
(*                                                                         *)
(* This module states no property: what users are promised is REMP.tla's,  *)
(* checked there against the adversary. This one is the step relation the  *)
(* reference machines are checked against, status by status and receipt   *)
(* by receipt (Emitted, FnEmitted), by rmkit.conformance.remp.agreement;   *)
(* REMP.tla's promises are evaluated on its behaviours through a mapping   *)
(* of its variables onto REMP.tla's (agreement.promises).                  *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences, TLC, REMPTables

CONSTANTS
    Validators,   \* every validator of any session
    Faulty,       \* the faulty ones: they drop or withhold what they receive
    Msgs,         \* external messages
    Members,      \* [0..MaxSession -> SUBSET Validators]: the shard's set per session
    MaxSession,   \* last master catchain session explored
    MinFanout,    \* the full node sends to at least this many validators (FanoutMin(N) or more)
    \* where the profile's machines choose what the documents leave open (spec/remp/behaviours.yaml):
    OlderSessionEntry,   \* the receipt of a message that reaches a validator from an older session
    RejectResubmission,  \* the full node rejects a resubmission of a message still in processing
    SilentSuperseded     \* a candidate another one of its round superseded is ignored without a receipt

ASSUME Faulty \subseteq Validators
ASSUME OlderSessionEntry \in VKinds /\ RejectResubmission \in BOOLEAN /\ SilentSuperseded \in BOOLEAN
ASSUME \A s \in 0..MaxSession : MinFanout >= FanoutMin(Cardinality(Members[s]))
ASSUME \A s \in 0..MaxSession :
          /\ Members[s] \subseteq Validators
          /\ Cardinality(Faulty \cap Members[s]) <= FaultyMax(Cardinality(Members[s]))

Honest == Validators \ Faulty
Sessions == 0..MaxSession
NoBlock == 0

(* What one honest validator knows about one message (reference: _Msg).   *)
(* rec: it has an entry; body: header and body known (else only the id,    *)
(* from a catchain record or a block); queued: in the collation queue;      *)
(* cand: its own pending candidate block holding it; acc: the accepted     *)
(* shard block holding it; done: committed or forgotten; ownRej: its own   *)
(* collator (or the shardchain) rejected it; rej: validators whose reject  *)
(* records it counted; stopped: 2/3 rejected it; expired: obsolete but     *)
(* kept until its block's fate is known; others: pending candidates of     *)
(* other validators holding it; gone: forgotten after expiry; fin: the     *)
(* first final position it reported ("none" before); said, prev: its last  *)
(* two receipts; n: how many it sent.                                      *)
Said == [k: VKinds \cup {"none"}, b: Nat]
Entry == [pos: VPositions, rec: BOOLEAN, body: BOOLEAN, queued: BOOLEAN,
          cand: Nat, acc: Nat, done: BOOLEAN, ownRej: BOOLEAN,
          rej: SUBSET Validators, stopped: BOOLEAN, expired: BOOLEAN,
          others: SUBSET Nat, gone: BOOLEAN, fin: VPositions, said: Said, prev: Said, n: Nat]

NoEntry == [pos |-> "none", rec |-> FALSE, body |-> FALSE, queued |-> FALSE,
            cand |-> NoBlock, acc |-> NoBlock, done |-> FALSE, ownRej |-> FALSE,
            rej |-> {}, stopped |-> FALSE, expired |-> FALSE, others |-> {},
            gone |-> FALSE, fin |-> "none", said |-> [k |-> "none", b |-> NoBlock],
            prev |-> [k |-> "none", b |-> NoBlock], n |-> 0]

(* What the full node knows of one message (reference: _FnMsg): st "none"  *)
(* (never submitted), "open" (sent, outcome unknown) or "final" (rejected  *)
(* by pre-evaluation or in a committed block); its last receipt and count. *)
FnEntry == [st: {"none", "open", "final"}, k: FnKinds \cup {"none"}, b: Nat, n: Nat]
FnNone == [st |-> "none", k |-> "none", b |-> NoBlock, n |-> 0]

(* Catchain records (000: "the message is put into the REMP catchain";    *)
(* refusal and "successfully collated" receipts; 001 hand-over).          *)
(*   new:    a message with its body, posted by a validator of session s   *)
(*           (also a pending message forwarded at the end of session s)    *)
(*   accept: the sender's collator put the message into candidate b       *)
(*   reject: the sender's collator rejected the message                   *)
(*   digest: a processed (b > 0, the accepted block) or finally rejected  *)
(*           (b = 0) message handed over as its id only                   *)
Records == [k: {"new"}, m: Msgs, s: Nat]
           \cup [k: {"accept"}, m: Msgs, b: Nat]
           \cup [k: {"reject"}, m: Msgs, from: Validators]
           \cup [k: {"digest"}, m: Msgs, b: Nat]

BlockStates == {"candidate", "accepted", "ignored", "rejected", "committed", "mcignored"}

VARIABLES
    session,  \* the master catchain session in action
    fn,       \* [Msgs -> FnPositions]: the full node's status of each message
    fk,       \* [Msgs -> FnEntry]: what the full node knows of it, and the receipts it sent
    upcoming, \* the next session's validator set is announced (the full node also sends to it)
    sub,      \* [Msgs -> Sessions]: session in which the full node sent it (its lifetime counts from it)
    net,      \* copies <<m, v>> in flight from the full node to validator v
    vs,       \* [Honest -> [Msgs -> Entry]]
    cc,       \* records posted into the catchain, not yet delivered: [rec, to] (to: the recipients)
    blocks,   \* sequence of [by, msgs, st, ses, h, shard]: candidates (collator, messages, state,
              \* session, shard blocks accepted before it was made, whether it became one)
    last      \* the step just taken, with its parameters (for trace translation; not in the view)

vars == <<session, fn, fk, upcoming, sub, net, vs, cc, blocks, last>>
view == <<session, fn, fk, upcoming, sub, net, vs, cc, blocks>>

N == Cardinality(Members[session])
HonestMembers(s) == Honest \cap Members[s]

(* 001: "if a message is received when master catchain N was in action,   *)
(* then it becomes obsolete at master catchain N+2."                       *)
LiveIn(origin, s) == s < origin + ObsoleteAfterSessions

(* A receipt is sent if its kind is in the profile's table and the table    *)
(* allows it from the validator's position and from the first final        *)
(* position it reported (reference: _emit); it moves the position. The     *)
(* entry keeps the receipts it sent last (kind and the block named, NoBlock *)
(* where none) and how many it sent, so that a step's receipts are the      *)
(* entries whose count moved (Emitted below).                              *)
Says(e, kind) ==
    /\ kind \in VKinds
    /\ e.pos \in VFrom[kind]
    /\ e.fin = "none" \/ e.fin \in VFrom[kind]

Emit(e, kind, b) ==
    IF Says(e, kind)
    THEN [e EXCEPT !.pos = VTo[kind], !.fin = IF @ = "none" /\ VTo[kind] \in VFinal THEN VTo[kind] ELSE @,
                   !.prev = e.said, !.said = [k |-> kind, b |-> b], !.n = @ + 1]
    ELSE e

(* The full node's receipts, the same way by its table (FnFrom, FnTo).     *)
FnSays(m, kind) == kind \in FnKinds /\ fn[m] \in FnFrom[kind]
FnMove(m, kind) == IF FnSays(m, kind) THEN FnTo[kind] ELSE fn[m]
FnSay(m, kind, b, st) ==
    IF FnSays(m, kind) THEN [st |-> st, k |-> kind, b |-> b, n |-> fk[m].n + 1]
    ELSE [fk[m] EXCEPT !.st = st]

(* A message's body arrives: report it and queue it, unless it is already *)
(* processed or obsolete (reference: _enter). older: it came from an older *)
(* session's catchain (reported as the profile's OlderSessionEntry).       *)
Enter(e, m, older) ==
    IF e.acc # NoBlock \/ e.done \/ ~LiveIn(sub[m], session) THEN e
    ELSE LET e2 == Emit(e, IF older THEN OlderSessionEntry ELSE "PutIntoQueue", NoBlock)
         IN IF e2.ownRej \/ e2.stopped THEN e2 ELSE [e2 EXCEPT !.queued = TRUE]

(* Count a reject record; 000: "those rejected by 2/3 of collators should  *)
(* not be collated further".                                               *)
CountReject(e, who) ==
    LET r == e.rej \cup {who}
    IN [e EXCEPT !.rej = r, !.stopped = @ \/ Cardinality(r) >= StopCollationRejected(N)]

(* Shard blocks accepted so far (the height the next one would get).      *)
Height == Cardinality({i \in 1..Len(blocks) : blocks[i].shard})

Stub(e) == IF e.rec THEN e ELSE [e EXCEPT !.rec = TRUE]

(* Post records into the catchain of the current session: every other     *)
(* honest member will get them. The catchain is a common log: a record      *)
(* reaches all its recipients in one step, at a time of the network's       *)
(* choosing (other steps may come first).                                   *)
Posted(from, recs, s) ==
    IF HonestMembers(s) \ {from} = {} THEN {}
    ELSE {[rec |-> r, to |-> HonestMembers(s) \ {from}] : r \in recs}

Post(from, recs) == cc \cup Posted(from, recs, session)

TypeOK ==
    /\ session \in Sessions
    /\ fn \in [Msgs -> FnPositions]
    /\ fk \in [Msgs -> FnEntry]
    /\ upcoming \in BOOLEAN
    /\ sub \in [Msgs -> Sessions]
    /\ net \subseteq Msgs \X Validators
    /\ vs \in [Honest -> [Msgs -> Entry]]
    /\ cc \subseteq [rec: Records, to: SUBSET Honest]
    /\ \A i \in 1..Len(blocks) :
          /\ blocks[i].by \in Honest
          /\ blocks[i].msgs \subseteq Msgs
          /\ blocks[i].st \in BlockStates
          /\ blocks[i].ses \in Sessions
          /\ blocks[i].h \in Nat
          /\ blocks[i].shard \in BOOLEAN

Init ==
    /\ session = 0
    /\ fn = [m \in Msgs |-> "none"]
    /\ fk = [m \in Msgs |-> FnNone]
    /\ upcoming = FALSE
    /\ sub = [m \in Msgs |-> 0]
    /\ net = {}
    /\ vs = [w \in Honest |-> [m \in Msgs |-> NoEntry]]
    /\ cc = {}
    /\ blocks = << >>
    /\ last = [a |-> "Init"]

-----------------------------------------------------------------------------
(* The full node. 001: "If at least 1/3 + 1 of validators receive the      *)
(* message via REMP Client protocol, then at least one good validator      *)
(* processes it": it sends to at least FanoutMin(N) validators, and, once  *)
(* the next session's set is announced, as many of that set (000: "to each *)
(* validator in the current shard and to each validator in the next shard  *)
(* (in case of session switching)").                                       *)
Addressed == Members[session] \cup (IF upcoming THEN Members[session + 1] ELSE {})

FanOut(to) ==
    /\ Cardinality(to \cap Members[session]) >= MinFanout
    /\ upcoming => Cardinality(to \cap Members[session + 1]) >= MinFanout

Submit(m, to) ==
    /\ fk[m].st = "none"
    /\ fn' = [fn EXCEPT ![m] = FnMove(m, "SentToValidators")]
    /\ fk' = [fk EXCEPT ![m] = FnSay(m, "SentToValidators", NoBlock, "open")]
    /\ sub' = [sub EXCEPT ![m] = session]
    /\ net' = net \cup {<<m, v>> : v \in to}
    /\ last' = [a |-> "Submit", m |-> m, to |-> to]
    /\ UNCHANGED <<session, upcoming, vs, cc, blocks>>

(* 000: the full node pre-evaluates the message; a failure is final.       *)
RejectByFullNode(m) ==
    /\ fk[m].st = "none"
    /\ fn' = [fn EXCEPT ![m] = FnMove(m, "RejectedByFullnode")]
    /\ fk' = [fk EXCEPT ![m] = FnSay(m, "RejectedByFullnode", NoBlock, "final")]
    /\ last' = [a |-> "RejectByFullNode", m |-> m]
    /\ UNCHANGED <<session, upcoming, sub, net, vs, cc, blocks>>

(* A user submits again a message still in processing (act: a submission, *)
(* or one that fails pre-evaluation): the profile's full node rejects the  *)
(* copy while the original goes on (RejectResubmission), or ignores it (no *)
(* step). No copy is sent.                                                 *)
Resubmit(m, act) ==
    /\ RejectResubmission
    /\ fk[m].st = "open"
    /\ fn' = [fn EXCEPT ![m] = FnMove(m, "RejectedByFullnode")]
    /\ fk' = [fk EXCEPT ![m] = FnSay(m, "RejectedByFullnode", NoBlock, "open")]
    /\ last' = act
    /\ UNCHANGED <<session, upcoming, sub, net, vs, cc, blocks>>

(* The next session's validator set becomes known ahead of the switch     *)
(* (reference: UpcomingValidators, which only the full node takes).        *)
Announce ==
    /\ session < MaxSession
    /\ ~upcoming
    /\ upcoming' = TRUE
    /\ last' = [a |-> "Announce"]
    /\ UNCHANGED <<session, fn, fk, sub, net, vs, cc, blocks>>

(* The network loses a copy.                                               *)
Lose(m, v) ==
    /\ <<m, v>> \in net
    /\ net' = net \ {<<m, v>>}
    /\ last' = [a |-> "Lose", m |-> m, v |-> v]
    /\ UNCHANGED <<session, fn, fk, upcoming, sub, vs, cc, blocks>>

(* A faulty validator receives a copy and withholds it for ever.           *)
Withhold(m, v) ==
    /\ <<m, v>> \in net
    /\ v \in Faulty
    /\ net' = net \ {<<m, v>>}
    /\ last' = [a |-> "Withhold", m |-> m, v |-> v]
    /\ UNCHANGED <<session, fn, fk, upcoming, sub, vs, cc, blocks>>

(* An honest validator receives the message from the full node. 000: it   *)
(* is put into the queue (PutIntoQueue) and into the REMP catchain; a copy *)
(* it already has is ignored (reference: _on_message).                     *)
Receive(m, v) ==
    LET e == vs[v][m] IN
    /\ <<m, v>> \in net
    /\ v \in Honest
    /\ net' = net \ {<<m, v>>}
    /\ IF e.gone \/ e.body
          THEN UNCHANGED <<vs, cc>>
          ELSE /\ vs' = [vs EXCEPT ![v][m] = Enter([e EXCEPT !.rec = TRUE, !.body = TRUE], m, FALSE)]
               /\ cc' = Post(v, {[k |-> "new", m |-> m, s |-> session]})
    /\ last' = [a |-> "Receive", m |-> m, v |-> v]
    /\ UNCHANGED <<session, fn, fk, upcoming, sub, blocks>>

-----------------------------------------------------------------------------
(* The REMP catchain delivers record r to validator w.                     *)
OnRecord(w, r, e) ==
    CASE r.k = "new" ->
            \* a copy from the catchain; an obsolete one is not taken any more
            IF e.gone THEN e
            ELSE IF ~e.rec THEN (IF LiveIn(sub[r.m], session)
                                  THEN Enter([e EXCEPT !.rec = TRUE, !.body = TRUE], r.m, r.s < session) ELSE e)
            ELSE IF ~e.body THEN Enter([e EXCEPT !.body = TRUE], r.m, r.s < session)
            ELSE e
      [] r.k = "accept" ->
            \* another validator collated it: not collated here while that candidate is pending;
            \* 000 "SkippedAsDuplicate ... Each node" reports Duplicate for a queued message
            IF e.gone \/ blocks[r.b].st # "candidate" THEN e
            ELSE LET e2 == [Stub(e) EXCEPT !.others = @ \cup {r.b}]
                 IN IF e2.body /\ e2.pos = "queue" /\ ~e2.done /\ e2.acc = NoBlock
                       THEN Emit(e2, "Duplicate", r.b) ELSE e2
      [] r.k = "reject" ->
            IF e.gone THEN e ELSE CountReject(Stub(e), r.from)
      [] r.k = "digest" ->
            \* hand-over digests only teach ids the validator does not know yet
            IF e.rec \/ e.gone \/ ~LiveIn(sub[r.m], session) THEN e
            ELSE IF r.b # NoBlock THEN [Stub(e) EXCEPT !.acc = r.b]
            ELSE [Stub(e) EXCEPT !.stopped = TRUE]

DeliverRecord(p) ==
    LET r == p.rec IN
    /\ p \in cc
    /\ cc' = cc \ {p}
    /\ vs' = [w \in Honest |-> IF w \in p.to THEN [vs[w] EXCEPT ![r.m] = OnRecord(w, r, @)] ELSE vs[w]]
    /\ last' = [a |-> "DeliverRecord", r |-> r, to |-> p.to]
    /\ UNCHANGED <<session, fn, fk, upcoming, sub, net, blocks>>

-----------------------------------------------------------------------------
(* Collation. 000: messages are collated oldest first, never one already   *)
(* in an accepted block, one rejected by 2/3, one another validator has in *)
(* a pending candidate, or an obsolete one. Reference: a round hands every *)
(* eligible message to the collator, which accepts it into the candidate,  *)
(* rejects it, or ignores it (then it returns to the queue).               *)
Eligible(e, m) ==
    /\ LiveIn(sub[m], session)
    /\ e.queued /\ e.body /\ ~e.gone /\ ~e.done /\ ~e.ownRej /\ ~e.stopped /\ ~e.expired
    /\ e.acc = NoBlock /\ e.cand = NoBlock /\ e.others = {}

(* The hand-off to the collator is reported where the profile's table has  *)
(* AcceptedByQueue (ever-node), then the collator's verdict.               *)
Collated(e0, res, v, b) ==
    LET e == Emit(e0, "AcceptedByQueue", NoBlock) IN
    CASE res = "acc" -> Emit([e EXCEPT !.queued = FALSE, !.cand = b], "IncludedIntoBlock", b)
      [] res = "rej" -> Emit(CountReject([e EXCEPT !.queued = FALSE, !.ownRej = TRUE], v), "RejectedByCollator", NoBlock)
      [] res = "ign" -> Emit([e EXCEPT !.queued = TRUE], "IgnoredByCollator", NoBlock)

CollateWith(v, res) ==
    LET taken == DOMAIN res
        A == {m \in taken : res[m] = "acc"}
        R == {m \in taken : res[m] = "rej"}
        b == Len(blocks) + 1
    IN
    /\ blocks' = IF A = {} THEN blocks
                 ELSE Append(blocks, [by |-> v, msgs |-> A, st |-> "candidate", ses |-> session,
                                     h |-> Height, shard |-> FALSE])
    /\ vs' = [vs EXCEPT ![v] = [m \in Msgs |-> IF m \in taken THEN Collated(@[m], res[m], v, b) ELSE @[m]]]
    /\ cc' = Post(v, {[k |-> "accept", m |-> m, b |-> b] : m \in A} \cup {[k |-> "reject", m |-> m, from |-> v] : m \in R})
    /\ last' = [a |-> "Collate", v |-> v, res |-> res]
    /\ UNCHANGED <<session, fn, fk, upcoming, sub, net>>

Taken(v) == {m \in Msgs : Eligible(vs[v][m], m)}

(* A round may find nothing to collate (res is then the empty function).   *)
Collate(v) ==
    /\ v \in HonestMembers(session)
    /\ \E res \in [Taken(v) -> {"acc", "rej", "ign"}] : CollateWith(v, res)

-----------------------------------------------------------------------------
(* Shard blocks. 000: validation refuses a block holding a message that is *)
(* already in another accepted block (replay protection); with at most     *)
(* FaultyMax(N) faulty validators, such a block cannot gather 2/3. A        *)
(* candidate of an earlier session can no longer become a shard block      *)
(* (reference: the simulator ignores it); only its fate is announced.       *)
Refused(b) ==
    \E w \in Honest, m \in blocks[b].msgs :
        ~vs[w][m].gone /\ vs[w][m].acc \notin {NoBlock, b}

OnShardAccepted(e, b) ==
    IF e.gone THEN e
    \* reference: an id known only from an accepted block is remembered apart, without an entry
    ELSE IF ~e.rec THEN [e EXCEPT !.acc = b]
    ELSE LET e2 == [e EXCEPT !.acc = b, !.others = {}, !.cand = NoBlock, !.queued = FALSE]
         IN IF e2.body /\ ~e2.done /\ e2.pos # "none"
               THEN Emit(e2, "IncludedIntoAcceptedBlock", b) ELSE e2

SetBlock(b, st) == [blocks EXCEPT ![b].st = st, ![b].shard = @ \/ st = "accepted"]

ForBlock(b, F(_, _)) ==
    [w \in Honest |-> [m \in Msgs |-> IF m \in blocks[b].msgs THEN F(vs[w][m], b) ELSE vs[w][m]]]

Acceptable(b) ==
    /\ blocks[b].st = "candidate"
    /\ blocks[b].ses = session     \* a candidate is decided in its own session,
    /\ blocks[b].h = Height        \* and before another block of its round is accepted
    /\ ~Refused(b)

ShardAccept(b) ==
    /\ Acceptable(b)
    /\ blocks' = SetBlock(b, "accepted")
    /\ vs' = ForBlock(b, OnShardAccepted)
    /\ last' = [a |-> "ShardAccept", b |-> b]
    /\ UNCHANGED <<session, fn, fk, upcoming, sub, net, cc>>

(* A validator's own candidate that did not become a shard block (000:    *)
(* "Ignored ... returns the message to the queue").                         *)
CandidateFate(e, b) == [e EXCEPT !.others = @ \ {b}]
OwnCandidate(e, b) == e.rec /\ ~e.gone /\ e.cand = b /\ ~e.done /\ e.acc = NoBlock

(* A candidate made at a height where another block was accepted since was *)
(* superseded by it (reference: ShardBlockIgnored.superseded); the profile *)
(* may ignore it without a receipt (SilentSuperseded).                     *)
Silent(b) == SilentSuperseded /\ blocks[b].h < Height

OnShardIgnored(e, b) ==
    IF ~e.rec \/ e.gone THEN e
    ELSE LET e1 == CandidateFate(e, b) IN
         IF ~OwnCandidate(e, b) THEN (IF e1.cand = b THEN [e1 EXCEPT !.cand = NoBlock] ELSE e1)
         ELSE LET e2 == [e1 EXCEPT !.cand = NoBlock] IN
              IF e2.expired THEN [Emit(e2, "Timeout", NoBlock) EXCEPT !.gone = TRUE, !.done = TRUE, !.queued = FALSE]
              ELSE LET e3 == IF Silent(b) THEN e2 ELSE Emit(e2, "IgnoredByShardchain", b)
                   IN IF e3.ownRej THEN e3 ELSE [e3 EXCEPT !.queued = TRUE]

OnShardRejected(e, b) ==
    IF ~e.rec \/ e.gone THEN e
    ELSE LET e1 == CandidateFate(e, b) IN
         IF ~OwnCandidate(e, b) THEN (IF e1.cand = b THEN [e1 EXCEPT !.cand = NoBlock] ELSE e1)
         ELSE LET e2 == Emit([e1 EXCEPT !.cand = NoBlock, !.ownRej = TRUE], "RejectedByShardchain", b)
              IN IF e2.expired THEN [e2 EXCEPT !.gone = TRUE, !.done = TRUE, !.queued = FALSE] ELSE e2

ShardIgnore(b) ==
    /\ blocks[b].st = "candidate"
    /\ blocks' = SetBlock(b, "ignored")
    /\ vs' = ForBlock(b, OnShardIgnored)
    /\ last' = [a |-> "ShardIgnore", b |-> b]
    /\ UNCHANGED <<session, fn, fk, upcoming, sub, net, cc>>

ShardReject(b) ==
    /\ blocks[b].st = "candidate"
    /\ blocks' = SetBlock(b, "rejected")
    /\ vs' = ForBlock(b, OnShardRejected)
    /\ last' = [a |-> "ShardReject", b |-> b]
    /\ UNCHANGED <<session, fn, fk, upcoming, sub, net, cc>>

-----------------------------------------------------------------------------
(* Masterchain. 000: "AddedToShardchain -> AddedToMasterchain /           *)
(* BlockIgnoredByMasterchain / BlockRejectedByMasterchain"; the full node  *)
(* reports Finalized (in the documents' profile Finalized is the full       *)
(* node's receipt; in ever-node each validator that knew the message also  *)
(* reports it: Finalized is then in the validators' table, VKinds).         *)
ValidatorsFinalize == "Finalized" \in VKinds

OnCommit(e, b) ==
    IF ~e.rec \/ e.gone THEN e
    ELSE LET e1 == IF e.acc = NoBlock THEN [e EXCEPT !.acc = b] ELSE e IN
         IF e1.done THEN e1
         ELSE LET e2 == IF e1.body /\ e1.pos # "none" THEN Emit(e1, "Finalized", b) ELSE e1 IN
              IF e2.expired THEN [e2 EXCEPT !.done = TRUE, !.gone = TRUE, !.queued = FALSE]
              ELSE [e2 EXCEPT !.done = TRUE]

(* The full node's messages in the block are final; it reports Finalized   *)
(* where the validators do not.                                            *)
Committed(b, m) == m \in blocks[b].msgs /\ fk[m].st = "open"

McCommit(b) ==
    /\ blocks[b].st = "accepted"
    /\ blocks' = SetBlock(b, "committed")
    /\ vs' = ForBlock(b, OnCommit)
    /\ fn' = [m \in Msgs |-> IF Committed(b, m) /\ ~ValidatorsFinalize THEN FnMove(m, "Finalized") ELSE fn[m]]
    /\ fk' = [m \in Msgs |-> IF ~Committed(b, m) THEN fk[m]
                             ELSE IF ValidatorsFinalize THEN [fk[m] EXCEPT !.st = "final"]
                             ELSE FnSay(m, "Finalized", b, "final")]
    /\ last' = [a |-> "McCommit", b |-> b]
    /\ UNCHANGED <<session, upcoming, sub, net, cc>>

OnMcIgnored(e, b) ==
    IF ~e.rec /\ e.acc = b THEN [e EXCEPT !.acc = NoBlock]
    ELSE IF ~e.rec \/ e.gone \/ e.acc # b \/ e.done THEN e
    ELSE LET e1 == [e EXCEPT !.acc = NoBlock] IN
         IF ~e1.body THEN e1
         ELSE IF e1.expired THEN [Emit(e1, "Timeout", NoBlock) EXCEPT !.gone = TRUE, !.done = TRUE, !.queued = FALSE]
         ELSE LET e2 == Emit(e1, "IgnoredByMasterchain", b)
              IN IF e2.ownRej \/ e2.stopped THEN e2 ELSE [e2 EXCEPT !.queued = TRUE]

McIgnore(b) ==
    /\ blocks[b].st = "accepted"
    /\ blocks' = SetBlock(b, "mcignored")
    /\ vs' = ForBlock(b, OnMcIgnored)
    /\ last' = [a |-> "McIgnore", b |-> b]
    /\ UNCHANGED <<session, fn, fk, upcoming, sub, net, cc>>

-----------------------------------------------------------------------------
(* Session switch. 001: at the end of a session its validators hand over  *)
(* to the next session's catchain: pending messages whole, processed or   *)
(* finally rejected ones as ids (reference fact: remp-as-built section 5). *)
(* Messages received in session s expire at s+2: Timeout, unless a block   *)
(* holding them is still pending (its fate then decides).                   *)
Pending(e) ==
    e.rec /\ e.body /\ ~e.gone /\ ~e.expired /\ ~e.done /\ e.acc = NoBlock /\ ~e.ownRej /\ ~e.stopped

Forward(v, new) ==
    IF v \notin Members[session] THEN {}
    ELSE {[k |-> "new", m |-> m, s |-> session] : m \in {m \in Msgs : Pending(vs[v][m]) /\ LiveIn(sub[m], new)}}
         \cup {[k |-> "digest", m |-> m, b |-> vs[v][m].acc] :
                 m \in {m \in Msgs : LET e == vs[v][m] IN
                          e.rec /\ e.body /\ ~e.gone /\ ~e.expired /\ LiveIn(sub[m], new) /\ e.acc # NoBlock}}
         \cup {[k |-> "digest", m |-> m, b |-> NoBlock] :
                 m \in {m \in Msgs : LET e == vs[v][m] IN
                          e.rec /\ e.body /\ ~e.gone /\ ~e.expired /\ LiveIn(sub[m], new)
                          /\ e.acc = NoBlock /\ ~e.done /\ (e.ownRej \/ e.stopped)}}

Expire(e, m, new) ==
    IF ~e.rec /\ ~LiveIn(sub[m], new) THEN [e EXCEPT !.acc = NoBlock]
    ELSE IF ~e.rec \/ e.gone \/ LiveIn(sub[m], new) THEN e
    ELSE IF ~e.done /\ (e.cand # NoBlock \/ e.acc # NoBlock) THEN [e EXCEPT !.expired = TRUE]
    ELSE LET e1 == IF ~e.done /\ e.body /\ ~e.ownRej THEN Emit(e, "Timeout", NoBlock) ELSE e
         IN [e1 EXCEPT !.gone = TRUE, !.done = TRUE, !.queued = FALSE]

SwitchSession ==
    LET new == session + 1 IN
    /\ session < MaxSession
    /\ session' = new
    /\ vs' = [w \in Honest |-> [m \in Msgs |-> Expire(vs[w][m], m, new)]]
    /\ cc' = cc \cup UNION {Posted(v, Forward(v, new), new) : v \in Honest}
    \* copies still in flight to the old session's validators are lost (the message's own
    \* expiry time keeps it from being received later)
    /\ net' = {}
    /\ upcoming' = FALSE
    /\ last' = [a |-> "Switch", s |-> new]
    /\ UNCHANGED <<fn, fk, sub, blocks>>

-----------------------------------------------------------------------------
Next ==
    \/ \E m \in Msgs, to \in SUBSET Addressed : FanOut(to) /\ Submit(m, to)
    \/ \E m \in Msgs : RejectByFullNode(m)
    \/ \E m \in Msgs : Resubmit(m, [a |-> "Submit", m |-> m, to |-> {}])
                      \/ Resubmit(m, [a |-> "RejectByFullNode", m |-> m])
    \/ Announce
    \/ \E <<m, v>> \in net : Lose(m, v) \/ Withhold(m, v) \/ Receive(m, v)
    \/ \E p \in cc : DeliverRecord(p)
    \/ \E v \in Honest : Collate(v)
    \/ \E b \in 1..Len(blocks) : ShardAccept(b) \/ ShardIgnore(b) \/ ShardReject(b)
                                 \/ McCommit(b) \/ McIgnore(b)
    \/ SwitchSession

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* The receipts a step sends (action-level: they compare vs and fn with    *)
(* their next values), as the agreement with the reference machines        *)
(* compares them: each validator's [src, m, k, b] (source, message, kind,   *)
(* the block it names or NoBlock), and the full node's (source FullNode). A *)
(* validator sends at most two receipts per message in a step (ever-node's *)
(* AcceptedByQueue before the collator's verdict), the full node one.      *)
Moved == {<<w, m>> \in Honest \X Msgs : vs'[w][m].n # vs[w][m].n}

Emitted ==
    {[src |-> w, m |-> m, k |-> vs'[w][m].said.k, b |-> vs'[w][m].said.b] : <<w, m>> \in Moved}
    \cup {[src |-> w, m |-> m, k |-> vs'[w][m].prev.k, b |-> vs'[w][m].prev.b] :
            <<w, m>> \in {p \in Moved : vs'[p[1]][p[2]].n = vs[p[1]][p[2]].n + 2}}

FullNode == "fullnode"  \* the full node's name, the source of its receipts

FnEmitted ==
    {[src |-> FullNode, m |-> m, k |-> fk'[m].k, b |-> fk'[m].b] : m \in {m \in Msgs : fk'[m].n # fk[m].n}}

=============================================================================
