------------------------------ MODULE CordaP2P ------------------------------
(***************************************************************************)
(* Corda peer-to-peer messaging (document 003 and the facts of             *)
(* corda-as-built): exactly-once processing built from at-least-once       *)
(* delivery, with crashes at every crash point of spec/corda/system.yaml.  *)
(*                                                                         *)
(* One flow on node A sends messages 1..N to node B, one per suspend, on  *)
(* `Sessions` sessions in turn. The path: A's checkpointed flow -> A's     *)
(* outbound queue (internal.peers.B) -> the bridge -> a link that loses    *)
(* and duplicates                                                          *)
(* messages and loses acknowledgements -> B's inbound queue                *)
(* (p2p.inbound.B) -> B's deduplicator -> commit (checkpoint, processed    *)
(* id, effect in one transaction) -> acknowledgement. The adversary: the   *)
(* link, crashes of A (the flow is replayed from its checkpoint), of B     *)
(* (memory lost, database kept), of B's broker, and rollbacks of the       *)
(* bridge, each up to a bound. The profile's choices come from the         *)
(* generated CordaProfiles module.                                         *)
(*                                                                         *)
(* Every action has the name of a step of the Python reference machines    *)
(* (reference_impl/corda/system.py) and records it in `last`, so TLC's     *)
(* behaviours replay into them (conformance/corda/agreement.py).           *)
(* Where the documents leave a choice open the model makes the reference   *)
(* machines' choice, marked "reference:".                                  *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, CordaProfiles

CONSTANTS
    Profile,          \* one of Profiles
    N,                \* messages the flow sends (one per suspend)
    Sessions,         \* sessions the flow has with B: message k goes on session ((k - 1) % Sessions) + 1
    MaxSenderCrash,   \* crash points: sender_after_checkpoint ...
    MaxRcvCrash,      \* ... receiver_before_commit / receiver_between_commit_and_ack
    MaxBrokerRestart, \* ... broker_restart (the receiving node's broker)
    MaxRollback,      \* ... bridge_between_remote_ack_and_local_ack, and any bridge rollback
    MaxLoss,          \* messages or acknowledgements the link loses
    MaxDup            \* messages the link duplicates

ASSUME Profile \in Profiles /\ N \in Nat \ {0} /\ Sessions \in 1..N

InOrderBridge == InOrderBridgeIn(Profile)
FastPath == FastPathIn(Profile)
Consequence(ans) ==
    CASE ans = "NEW" -> NewConsequenceIn(Profile)
      [] ans = "DUPLICATE" -> DuplicateConsequenceIn(Profile)
      [] ans = "IN_FLIGHT" -> InFlightConsequenceIn(Profile)

VARIABLES
    ckpt, produced, recov, epoch, seq,   \* sender: checkpoints, sends done in this life, replaying?, process generation, sequence counter
    out, otag,                           \* A's outbound queue: <<[tag, m, dlv]>> (dlv: delivered to the bridge, not acked)
    transit, acks,                       \* the link: <<[tag, m]>> towards B, <<tag>> acknowledgements back
    inq, itag, iconn,                    \* B's inbound queue: <<[tag, m, dlv, conn]>>; consumer connection generation
    proc, toack,                         \* B's memory: NEW copies being processed; acknowledgements pending
    db, effects,                         \* B's database: processed-id rows; the committed effects (message indexes)
    sent,                                \* ghost: every (index, id) produced
    budget,                              \* the adversary's moves used so far
    last                                 \* the step just taken (for replay into the reference machines)

vars == <<ckpt, produced, recov, epoch, seq, out, otag, transit, acks, inq, itag, iconn, proc, toack, db,
          effects, sent, budget, last>>

\* A message as the deduplicator sees it: index k (its payload), dedup id, sender UUID (process
\* generation + 1; 0: none), sequence number (0: none). A flow's N- id is its suspend number.
Msg == [k : 1..N, did : Nat, uuid : Nat, sq : Nat]
Session(k) == ((k - 1) % Sessions) + 1
Init(k) == k <= Sessions   \* the session-init flag: the first message of its session

Range(s) == {s[i] : i \in DOMAIN s}
Remove(s, i) == SubSeq(s, 1, i - 1) \o SubSeq(s, i + 1, Len(s))
Undeliver(q) == [i \in DOMAIN q |-> [q[i] EXCEPT !.dlv = FALSE]]
Spent(c) == budget[c] >= CASE c = "sc" -> MaxSenderCrash [] c = "rc" -> MaxRcvCrash [] c = "br" -> MaxBrokerRestart
                           [] c = "rb" -> MaxRollback [] c = "loss" -> MaxLoss [] c = "dup" -> MaxDup
Use(c) == budget' = [budget EXCEPT ![c] = @ + 1]

\* ---- the receiver's deduplicator ----
InFlight == {proc[i].m.did : i \in DOMAIN proc}
DbIds == {r.did : r \in db}
Key(m) == <<m.uuid, Init(m.k)>>
MarkRows(key) == {r \in db : r.uuid # 0 /\ <<r.uuid, r.init>> = key}
HasMark(key) == MarkRows(key) # {}
Mark(key) == CHOOSE x \in {r.sq : r \in MarkRows(key)} : \A r \in MarkRows(key) : r.sq <= x
\* The fast path answers NEW without a database read only above an existing mark; without a sender
\* UUID or without a mark the database is read (corda-as-built, section Receiver-side deduplicator).
FastNew(m) == FastPath /\ m.uuid # 0 /\ HasMark(Key(m)) /\ m.sq > Mark(Key(m))
Check(m) ==
    IF m.did \in InFlight THEN "IN_FLIGHT"
    ELSE IF FastNew(m) THEN "NEW"
    ELSE IF m.did \in DbIds THEN "DUPLICATE"
    ELSE "NEW"

TypeOK ==
    /\ ckpt \in 0..N /\ produced \in 0..N /\ produced <= ckpt /\ recov \in BOOLEAN
    /\ epoch \in Nat /\ seq \in Nat
    /\ \A i \in DOMAIN out : out[i].m \in Msg /\ out[i].dlv \in BOOLEAN /\ out[i].tag \in Nat
    /\ \A i \in DOMAIN transit : transit[i].m \in Msg
    /\ Range(acks) \subseteq Nat
    /\ \A i \in DOMAIN inq : inq[i].m \in Msg /\ inq[i].dlv \in BOOLEAN /\ inq[i].conn \in Nat
    /\ \A i \in DOMAIN proc : proc[i].m \in Msg
    /\ \A i \in DOMAIN toack : toack[i].m \in Msg /\ toack[i].ans \in {"NEW", "DUPLICATE", "IN_FLIGHT"}
    /\ Range(effects) \subseteq 1..N

InitState ==
    /\ ckpt = 0 /\ produced = 0 /\ recov = FALSE /\ epoch = 0 /\ seq = 0
    /\ out = <<>> /\ otag = 1 /\ transit = <<>> /\ acks = <<>>
    /\ inq = <<>> /\ itag = 1 /\ iconn = 0 /\ proc = <<>> /\ toack = <<>>
    /\ db = {} /\ effects = <<>> /\ sent = {}
    /\ budget = [c \in {"sc", "rc", "br", "rb", "loss", "dup"} |-> 0]
    /\ last = [a |-> "Init"]

Sender == <<ckpt, produced, recov, epoch, seq, sent>>
Outbound == <<out, otag>>
Link == <<transit, acks>>
Inbound == <<inq, itag, iconn>>
Receiver == <<proc, toack, db, effects>>

\* ---- the sending node ----
\* Suspend: the flow persists its next checkpoint (and commits) before its send runs (003: "1. The
\* new checkpoint is persisted 2. The current database transaction is committed").
Suspend ==
    /\ produced = ckpt /\ ckpt < N
    /\ ckpt' = ckpt + 1
    /\ last' = [a |-> "Suspend"]
    /\ UNCHANGED <<produced, recov, epoch, seq, sent, Outbound, Link, Inbound, Receiver, budget>>

\* Produce: the send of the last checkpoint goes to the outbound queue, with the deterministic N- id;
\* sender UUID and sequence number only when this process is the original sender.
Produce ==
    /\ produced < ckpt
    /\ LET m == [k |-> ckpt, did |-> ckpt, uuid |-> IF recov THEN 0 ELSE epoch + 1,
                 sq |-> IF recov THEN 0 ELSE seq + 1]
       IN /\ out' = Append(out, [tag |-> otag, m |-> m, dlv |-> FALSE])
          /\ sent' = sent \cup {<<m.k, m.did>>}
    /\ seq' = IF recov THEN seq ELSE seq + 1
    /\ otag' = otag + 1
    /\ produced' = ckpt /\ recov' = FALSE
    /\ last' = [a |-> "Produce"]
    /\ UNCHANGED <<ckpt, epoch, Link, Inbound, Receiver, budget>>

\* Crash point sender_after_checkpoint: a new process (new UUID, counter from 0) replays the flow
\* from its last checkpoint, re-sending that checkpoint's message (reference: always, since the
\* process cannot know whether the send ran before the crash).
SenderCrash ==
    /\ ~Spent("sc") /\ Use("sc")
    /\ epoch' = epoch + 1 /\ seq' = 0
    /\ produced' = IF ckpt > 0 THEN ckpt - 1 ELSE 0
    /\ recov' = (ckpt > 0)
    /\ last' = [a |-> "SenderCrash"]
    /\ UNCHANGED <<ckpt, sent, Outbound, Link, Inbound, Receiver>>

\* ---- the bridge and the link ----
FirstUndelivered(q) == CHOOSE i \in DOMAIN q : ~q[i].dlv /\ \A j \in 1..(i - 1) : q[j].dlv

\* Forward: the bridge takes the next message from the outbound queue and puts it on the link. In
\* order (spec profile, reference choice): only when nothing it forwarded awaits its remote ack.
Forward ==
    /\ \E i \in DOMAIN out : ~out[i].dlv
    /\ InOrderBridge => \A i \in DOMAIN out : ~out[i].dlv
    /\ LET i == FirstUndelivered(out)
       IN /\ out' = [out EXCEPT ![i].dlv = TRUE]
          /\ transit' = Append(transit, [tag |-> out[i].tag, m |-> out[i].m])
    /\ last' = [a |-> "Forward"]
    /\ UNCHANGED <<Sender, otag, acks, Inbound, Receiver, budget>>

LinkLose(i) ==
    /\ ~Spent("loss") /\ Use("loss")
    /\ transit' = Remove(transit, i)
    /\ last' = [a |-> "LinkLose", i |-> i - 1]
    /\ UNCHANGED <<Sender, Outbound, acks, Inbound, Receiver>>

LinkDup(i) ==
    /\ ~Spent("dup") /\ Use("dup")
    /\ transit' = SubSeq(transit, 1, i) \o <<transit[i]>> \o SubSeq(transit, i + 1, Len(transit))
    /\ last' = [a |-> "LinkDup", i |-> i - 1]
    /\ UNCHANGED <<Sender, Outbound, acks, Inbound, Receiver>>

AckLose(i) ==
    /\ ~Spent("loss") /\ Use("loss")
    /\ acks' = Remove(acks, i)
    /\ last' = [a |-> "AckLose", i |-> i - 1]
    /\ UNCHANGED <<Sender, Outbound, transit, Inbound, Receiver>>

\* The remote broker persists the head message (B's inbound queue) and acknowledges it.
RemoteAccept ==
    /\ transit # <<>>
    /\ inq' = Append(inq, [tag |-> itag, m |-> Head(transit).m, dlv |-> FALSE, conn |-> 0])
    /\ itag' = itag + 1
    /\ acks' = Append(acks, Head(transit).tag)
    /\ transit' = Tail(transit)
    /\ last' = [a |-> "RemoteAccept"]
    /\ UNCHANGED <<Sender, Outbound, iconn, Receiver, budget>>

\* Only the remote acknowledgement removes the message from the outbound queue (003: "Only when the
\* local Artermis Bridge ... has received receipt acknowledgement ... will the message in the local
\* outbound queue be removed").
BridgeAck ==
    /\ acks # <<>>
    /\ out' = IF \E i \in DOMAIN out : out[i].tag = Head(acks) /\ out[i].dlv
              THEN Remove(out, CHOOSE i \in DOMAIN out : out[i].tag = Head(acks) /\ out[i].dlv)
              ELSE out
    /\ acks' = Tail(acks)
    /\ last' = [a |-> "BridgeAck"]
    /\ UNCHANGED <<Sender, otag, transit, Inbound, Receiver, budget>>

\* Resend: a transfer of which nothing is left on the link (the message or its acknowledgement was
\* lost) is sent again, the same message under the same tag, once the bridge's wait for the remote
\* acknowledgement times out (003: the message stays in the outbound queue until that acknowledgement
\* arrives, and "will eventually" reach the peer). The oldest such transfer first.
OnLink(t) == (\E j \in DOMAIN transit : transit[j].tag = t) \/ (\E j \in DOMAIN acks : acks[j] = t)
Stale(i) == out[i].dlv /\ ~OnLink(out[i].tag)
Resend ==
    /\ \E i \in DOMAIN out : Stale(i)
    /\ LET i == CHOOSE i \in DOMAIN out : Stale(i) /\ \A j \in 1..(i - 1) : ~Stale(j)
       IN transit' = Append(transit, [tag |-> out[i].tag, m |-> out[i].m])
    /\ last' = [a |-> "Resend"]
    /\ UNCHANGED <<Sender, Outbound, acks, Inbound, Receiver, budget>>

\* A rollback of the bridge's session (a failed transfer, a reconnect, or the crash point
\* bridge_between_remote_ack_and_local_ack): its unacknowledged deliveries are redelivered.
BridgeRollback ==
    /\ ~Spent("rb") /\ Use("rb")
    /\ out' = Undeliver(out)
    /\ transit' = <<>> /\ acks' = <<>>
    /\ last' = [a |-> "BridgeRollback"]
    /\ UNCHANGED <<Sender, otag, Inbound, Receiver>>

\* ---- the receiving node ----
\* Deliver: the next copy from the inbound queue; the deduplicator answers and the profile's
\* consequence follows: process (being processed until the commit), ack_and_drop (an
\* acknowledgement pending), discard (nothing: the copy stays delivered and unacknowledged).
Deliver ==
    /\ \E i \in DOMAIN inq : ~inq[i].dlv
    /\ LET i == FirstUndelivered(inq)
           c == [tag |-> inq[i].tag, m |-> inq[i].m, conn |-> iconn]
           ans == Check(inq[i].m)
       IN /\ inq' = [inq EXCEPT ![i].dlv = TRUE, ![i].conn = iconn]
          /\ proc' = IF Consequence(ans) = "process" THEN Append(proc, c) ELSE proc
          /\ toack' = IF Consequence(ans) = "ack_and_drop"
                       THEN Append(toack, [tag |-> c.tag, m |-> c.m, conn |-> c.conn, ans |-> ans]) ELSE toack
          /\ last' = [a |-> "Deliver", ans |-> ans]
    /\ UNCHANGED <<Sender, Outbound, Link, itag, iconn, db, effects, budget>>

\* Commit: the receiving flow consumes the oldest NEW copy; checkpoint, processed id (with sender
\* key and sequence number) and effect in one transaction; the acknowledgement follows.
Commit ==
    /\ proc # <<>>
    /\ LET p == Head(proc)
       IN /\ db' = db \cup {[did |-> p.m.did, uuid |-> p.m.uuid, init |-> Init(p.m.k), sq |-> p.m.sq]}
          /\ effects' = Append(effects, p.m.k)
          /\ toack' = Append(toack, [tag |-> p.tag, m |-> p.m, conn |-> p.conn, ans |-> "NEW"])
    /\ proc' = Tail(proc)
    /\ last' = [a |-> "Commit"]
    /\ UNCHANGED <<Sender, Outbound, Link, Inbound, sent, budget>>

\* Ack: the oldest pending acknowledgement (they may wait and go in batches); it removes the copy
\* only if it was delivered on the current connection.
Ack ==
    /\ toack # <<>>
    /\ LET a == Head(toack)
           hit == {i \in DOMAIN inq : inq[i].tag = a.tag /\ inq[i].dlv /\ inq[i].conn = a.conn}
       IN inq' = IF hit # {} THEN Remove(inq, CHOOSE i \in hit : TRUE) ELSE inq
    /\ toack' = Tail(toack)
    /\ last' = [a |-> "Ack"]
    /\ UNCHANGED <<Sender, Outbound, Link, itag, iconn, proc, db, effects, sent, budget>>

\* Crash points receiver_before_commit and receiver_between_commit_and_ack: memory is lost, the
\* database stays, the broker redelivers every unacknowledged copy (in its place).
ReceiverCrash ==
    /\ ~Spent("rc") /\ Use("rc")
    /\ proc' = <<>> /\ toack' = <<>>
    /\ inq' = Undeliver(inq) /\ iconn' = iconn + 1
    /\ last' = [a |-> "ReceiverCrash"]
    /\ UNCHANGED <<Sender, Outbound, Link, itag, db, effects, sent>>

\* Crash point broker_restart (B's broker): persistent messages stay, deliveries are cancelled and
\* redelivered; the node keeps processing what it holds, its pending acknowledgements are lost.
BrokerRestart ==
    /\ ~Spent("br") /\ Use("br")
    /\ toack' = <<>>
    /\ inq' = Undeliver(inq) /\ iconn' = iconn + 1
    /\ last' = [a |-> "BrokerRestart"]
    /\ UNCHANGED <<Sender, Outbound, Link, itag, proc, db, effects, sent>>

Next ==
    \/ Suspend \/ Produce \/ SenderCrash
    \/ Forward \/ Resend \/ RemoteAccept \/ BridgeAck \/ BridgeRollback
    \/ \E i \in DOMAIN transit : LinkLose(i) \/ LinkDup(i)
    \/ \E i \in DOMAIN acks : AckLose(i)
    \/ Deliver \/ Commit \/ Ack \/ ReceiverCrash \/ BrokerRestart

Spec == InitState /\ [][Next]_vars

\* The protocol's own steps are weakly fair (each, when it stays enabled, is eventually taken); the
\* adversary's moves (losses, duplicates, crashes, rollbacks) are not, and each is bounded, so every
\* behaviour ends its faults and the protocol must then finish the job.
FairSpec == Spec /\ WF_vars(Suspend) /\ WF_vars(Produce) /\ WF_vars(Forward) /\ WF_vars(Resend)
                 /\ WF_vars(RemoteAccept) /\ WF_vars(BridgeAck) /\ WF_vars(Deliver) /\ WF_vars(Commit)
                 /\ WF_vars(Ack)

\* ---- properties ----
\* CORDA-DEDUP-001: each message's effect is committed at most once, across crashes of both nodes,
\* redeliveries, duplicates on the link and the sender's replays.
ExactlyOnce == \A i, j \in DOMAIN effects : i # j => effects[i] # effects[j]

\* CORDA-DEDUP-002: a message sent is never lost: until its effect is committed some copy of it is
\* in the outbound queue, on the link, in the inbound queue or being processed, or the sender's replay
\* will still send it (a flow replayed from its last checkpoint re-sends that checkpoint's message:
\* no copy left is then no loss yet). A violation is a message no step of the protocol can bring back.
Copies(k) == {x \in Range(out) \cup Range(transit) \cup Range(inq) \cup Range(proc) : x.m.k = k}
ReplayPending(k) == k = ckpt /\ produced < ckpt
NoLoss == \A s \in sent : s[1] \in Range(effects) \/ Copies(s[1]) # {} \/ ReplayPending(s[1])

\* CORDA-ACK-001: a copy leaves the inbound queue (the broker forgets it: it was acknowledged) only
\* once its id is committed, whichever step removes it. Stated on every step of the whole system, not
\* on the Ack step, so that an acknowledgement made inside another step (a consumer acknowledging on
\* delivery) breaks it as well. An IN_FLIGHT copy the profile acknowledges (corda-os-2021,
\* CORDA-DEDUP-004) is not stated apart: that would restate the profile table; what users lose there
\* is the message, which NoLoss states.
Tags(q) == {q[i].tag : i \in DOMAIN q}
AckedInFlight(c) == \E i \in DOMAIN toack : toack[i].tag = c.tag /\ toack[i].ans = "IN_FLIGHT"
AckAfterCommit == [][\A c \in Range(inq) : c.tag \notin Tags(inq') => c.m.did \in {r.did : r \in db'} \/ AckedInFlight(c)]_vars

\* CORDA-DEDUP-001 and 003 ("will eventually"): every message the flow sends is eventually processed,
\* exactly once, under FairSpec (the bounded adversary's faults over, the protocol's steps recover).
Processed(k) == Cardinality({i \in DOMAIN effects : effects[i] = k})
EventuallyProcessed == <>[](ckpt = N /\ \A k \in 1..N : Processed(k) = 1)

\* CORDA-ID-002 (a replayed flow re-sends under the same N- ids) is a mechanism, not a promise: Produce
\* builds the id from the checkpoint. What it buys is ExactlyOnce across the sender's replays, and
\* tests/test_tla_corda.py shows ExactlyOnce failing when a replay sends under a fresh id.

\* CORDA-ORDER-001: each session's messages reach the receiving flow in the order they were sent.
FifoPerSession == \A i, j \in DOMAIN effects : i < j /\ Session(effects[i]) = Session(effects[j]) => effects[i] < effects[j]
=============================================================================
