-------------------------------- MODULE REMP --------------------------------
(***************************************************************************)
(* REMP, Everscale's Reliable External Messaging Protocol, against the     *)
(* adversary its design documents assume:                                  *)
(*   000 "REMP: Reliable External Messaging Protocol" (statuses, catchain  *)
(*       records, collation, "If the message was processed by some node    *)
(*       and accepted, then the current block is declined", forward        *)
(*       messages "for replay protection purposes"),                       *)
(*   001 "REMP architecture and message lifetimes" (fan-out to N/3+1,       *)
(*       "we suppose that at most N/3 validators are invalid", N -> N+2).  *)
(*                                                                         *)
(* Local knowledge: each honest validator acts on what it holds itself:    *)
(* copies it received from the full node, catchain records delivered to it *)
(* (one recipient at a time, in any order), the shard blocks it applied,   *)
(* the hand-over records of the previous session's validators. No action   *)
(* writes into two validators. The masterchain's session switch is a       *)
(* global event; each validator notices it in its own step (Rotate).       *)
(*                                                                         *)
(* Adversary: the validators in Faulty (at most FaultyMax(N) per session)  *)
(* withhold, equivocate (a record to one peer and not to another, or       *)
(* different records to different peers), post records for messages they  *)
(* never saw, sign anything, and propose blocks with any message whose     *)
(* body they hold, including messages already in the shard chain. They    *)
(* cannot make up a message body (the client signs it) nor an honest       *)
(* validator's record or signature, nor a digest of a block that was never *)
(* accepted (a digest names a block signed by 2/3).                        *)
(*                                                                         *)
(* Mechanisms are constants (TRUE in every configuration of MCREMP); the   *)
(* mutation tests set one of them FALSE and TLC must find the property it  *)
(* protects violated.                                                      *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences, TLC, REMPTables

CONSTANTS
    Validators,   \* every validator of any session
    Faulty,       \* the Byzantine ones
    Msgs,         \* external messages (ids; each has its own body and expiry)
    Members,      \* [0..MaxSession -> SUBSET Validators]: the shard's validators per session
    MaxSession,   \* last master catchain session explored
    Fanout,       \* how many validators the full node sends each message to
    \* mechanisms
    ValidateAgainstCache,  \* a validator refuses to sign a block holding a message its cache has as accepted
    CacheOnReceive,        \* a message already processed is known as such when it comes again (validators, full node)
    Digests,               \* at a switch, accepted messages are handed over as digests
    Rebroadcast,           \* the catchain re-sends a record until its recipient has it
    SignedRecords,         \* a catchain record carries its sender's signature: no one posts in another's name
    LifetimeFromMessage,   \* a message's lifetime counts from its own session (its expiry), not from arrival
    BodiesSigned           \* a faulty validator cannot make up a message body

ASSUME Faulty \subseteq Validators
ASSUME \A s \in 0..MaxSession :
          /\ Members[s] \subseteq Validators
          /\ Cardinality(Faulty \cap Members[s]) <= FaultyMax(Cardinality(Members[s]))
          /\ Fanout <= Cardinality(Members[s])

Honest == Validators \ Faulty

(* Message ids and bodies. UidOf gives each id the hash of its body (its    *)
(* uid); CacheKey is what a validator's cache knows a message by. By        *)
(* default every id has its own body and the cache is keyed by uid, which   *)
(* is then the id. A configuration overrides them (UidOf <- ...): the       *)
(* ever-node profile finds duplicates by uid (remp-as-built section 3), so  *)
(* two ids of one body are one message there; in the documents' profile    *)
(* the cache is keyed by id (CacheKey <- an id map): two ids are two        *)
(* messages, and the same body under a new id is accepted again.           *)
UidOf == [m \in Msgs |-> m]
CacheKey == UidOf
SameKey(m, n) == CacheKey[m] = CacheKey[n]
Sessions == 0..MaxSession
HonestMembers(s) == Honest \cap Members[s]
FaultyMembers(s) == Faulty \cap Members[s]
NOf(s) == Cardinality(Members[s])
\* consensus on shard blocks: a block needs the signatures of more than 2/3 of the session's validators
Quorum(s) == (2 * NOf(s)) \div 3 + 1

(* 001: "if a message is received when master catchain N was in action,   *)
(* then it becomes obsolete at master catchain N+2."                       *)
LiveIn(origin, s) == s < origin + ObsoleteAfterSessions

(* An honest validator's status of a message (its receipts, coarsened):    *)
(* queued (PutIntoQueue), cand (IncludedIntoBlock: in its own candidate),   *)
(* rejected (RejectedByCollator), accepted (in a shard block it applied or  *)
(* known from a digest: its replay cache), gone (Timeout / forgotten).      *)
Statuses == {"none", "queued", "cand", "rejected", "accepted", "gone"}
FinalStatuses == {"rejected", "accepted", "gone"}

VARIABLES
    session,  \* the master catchain session in action (the masterchain's clock)
    fn,       \* [Msgs -> FnPositions]: the full node's status of each message
    origin,   \* [Msgs -> Sessions]: the session the client made the message in (its expiry counts from it)
    passed,   \* messages the full node passed on to validators (the client submitted them)
    net,      \* copies <<m, v>> in flight from the full node to validator v, in any order; a copy
              \* that is lost is one never received (the full node's resends stand for its retries)
    byz,      \* message bodies the faulty validators hold (they share everything)
    st,       \* [Honest -> [Msgs -> Statuses]]
    rej,      \* [Honest -> [Msgs -> SUBSET Validators]]: senders of the reject records it counted
    arr,      \* [Honest -> [Msgs -> Sessions]]: session of arrival (used only when ~LifetimeFromMessage)
    tip,      \* [Honest -> Nat]: shard blocks the validator applied
    ses,      \* [Honest -> Sessions]: the session the validator works in
    handed,   \* [Honest -> SUBSET Validators]: previous validators whose hand-over it received
    cc,       \* catchain records in transit: [r: record, to: recipient]
    cands,    \* sequence of candidate blocks [by, msgs, ses, h]: proposer, messages, session, height
    sigs,     \* [Honest -> SUBSET Nat]: the candidates (indices into cands) each honest validator signed
    chain,    \* the shard chain: sequence of accepted blocks [msgs, ses]
    last      \* the step just taken (for readable traces; not in the view)

vars == <<session, fn, origin, passed, net, byz, st, rej, arr, tip, ses, handed, cc, cands, sigs, chain, last>>

ChainMsgs == UNION {chain[i].msgs : i \in 1..Len(chain)}

(* The caches of processed messages. A message w (the full node) has a     *)
(* final status for is known: a copy of it, a record, a resubmission is    *)
(* answered from the cache and not processed again. Without the cache      *)
(* (mutation) such a message is unseen again, exactly like a new one: the  *)
(* ordinary steps (Submit, PreReject, Receive, Learn) run on it as on a    *)
(* message never met. This is the only place the mechanism is read; no     *)
(* step has a branch of its own for it.                                     *)
Unseen(w, m) == st[w][m] = "none" \/ (~CacheOnReceive /\ st[w][m] \in FinalStatuses)
FnUnseen(m) == fn[m] = "none" \/ (~CacheOnReceive /\ fn[m] \in FnFinal)

(* Whether validator w takes m to be live in its session: from the         *)
(* message's own session, or (mutation) from when w first saw it.          *)
Arrival(w, m) == IF Unseen(w, m) THEN ses[w] ELSE arr[w][m]
LiveFor(w, m, s) == IF LifetimeFromMessage THEN LiveIn(origin[m], s) ELSE LiveIn(Arrival(w, m), s)

(* 000: messages "rejected by 2/3 of collators should not be collated      *)
(* further": w counts the distinct signed senders of the reject records     *)
(* that reached it.                                                        *)
Stopped(w, m) ==
    Cardinality(rej[w][m] \cap Members[ses[w]]) >= StopCollationRejected(NOf(ses[w]))

(* A validator new to a session works once it has the hand-over of enough  *)
(* of the previous validators that at least one of them is honest... and   *)
(* as many as the faulty ones can leave out: N - f of them.                *)
Ready(w) ==
    IF ses[w] = 0 THEN TRUE
    ELSE \/ w \in Members[ses[w] - 1]
         \/ Cardinality(handed[w]) >= NOf(ses[w] - 1) - FaultyMax(NOf(ses[w] - 1))

Works(w) == w \in Members[session] /\ ses[w] = session /\ Ready(w)

(* Consensus votes: an honest validator signs at most one candidate per    *)
(* session and height. Its signature is recorded when it is given and      *)
(* counts from then on (it is not re-judged at acceptance), so candidates   *)
(* compete at one height and a signature can be stale. The votes are kept   *)
(* in the validator's catchain log: a restart does not forget them.        *)
VotedAt(u, s, h) == \E b \in sigs[u] : cands[b].ses = s /\ cands[b].h = h

Records ==
    [k: {"new"}, m: Msgs, s: Sessions]
    \cup [k: {"reject"}, m: Msgs, from: Validators, s: Sessions]
    \cup [k: {"handover"}, from: Validators, s: Sessions, acc: SUBSET Msgs, pend: SUBSET Msgs, rej: SUBSET Msgs]

(* Records an honest validator posts go to each other honest member of     *)
(* its session (the faulty ones get everything: their bodies are added to  *)
(* byz where the record carries one).                                      *)
Post(from, r, s) == {[r |-> r, to |-> w] : w \in HonestMembers(s) \ {from}}
(* A body in transit is the same record whoever sent it (its sender does    *)
(* not matter to the recipient), so copies from several senders merge.     *)

(* Copies and records whose arrival can no longer change anything: a copy *)
(* for a faulty validator whose side already holds the body; a copy or a   *)
(* "new" record for an honest validator to which the message is not unseen *)
(* (it is queued or in a candidate, or its cache keeps it); a reject       *)
(* record its recipient already counted; a record of a session its          *)
(* recipient has left (dropped on arrival). Their arrival would be a step  *)
(* that changes only net or cc, so they are not delivered, the view leaves  *)
(* them out, and the full node's resend waits only for the copies that     *)
(* still count.                                                             *)
(* A hand-over to a validator that was a member of the previous session     *)
(* (so it does not count hand-overs) that would change nothing, and never   *)
(* will: every digest names a message it holds as accepted or timed out,   *)
(* every pending message is one it holds or one obsolete for it, every     *)
(* reject it counted already. Each of these stays so (statuses move on     *)
(* from accepted only to gone, a held message is unseen again only after a  *)
(* restart, which drops the spent records addressed to it, obsolete stays   *)
(* obsolete, counted rejects stay counted). Without the cache on receive (a *)
(* mutation) a held message is unseen again once final, so there the       *)
(* reduction may merge states the mutant tells apart: it can only hide a    *)
(* mutant's violation, never one of the model.                             *)
HandOverSpent(w, r) ==
    /\ LifetimeFromMessage
    /\ r.s > 0 /\ w \in Members[r.s - 1]
    /\ \A m \in r.acc : st[w][m] \in {"accepted", "gone"}
    /\ \A m \in r.pend : ~Unseen(w, m) \/ ~LiveFor(w, m, ses[w])
    /\ \A m \in r.rej : r.from \in rej[w][m]
SpentCopy(c) ==
    IF c[2] \in Faulty THEN c[1] \in byz
    ELSE ~Unseen(c[2], c[1])
SpentRecord(p) ==
    \/ p.r.s < ses[p.to]
    \/ p.r.k = "new" /\ ~Unseen(p.to, p.r.m)
    \/ p.r.k = "reject" /\ p.r.from \in rej[p.to][p.r.m]
    \/ p.r.k = "handover" /\ HandOverSpent(p.to, p.r)
NetLive == {c \in net : ~SpentCopy(c)}
CcLive == {p \in cc : ~SpentRecord(p)}

(* The view TLC tells states apart by: without the step label, the copies *)
(* and records whose arrival changes nothing (SpentCopy, SpentRecord), and  *)
(* the candidates no longer on top of the chain (they can never be         *)
(* accepted; only their number is kept, for the MaxCands bound). Two states *)
(* with the same view have the same steps up to those arrivals, which      *)
(* change nothing else, and the same properties.                           *)
LiveIdx == {j \in 1..Len(cands) : cands[j].h = Len(chain) /\ cands[j].ses = session}
LiveCands == {cands[i] : i \in LiveIdx}
(* The signatures that can still matter: those on candidates on top of the chain (a signature on a *)
(* dead candidate counts for nothing, and the one-vote rule reads only the height in action).      *)
LiveSigs == UNION {{<<u, cands[b]>> : b \in sigs[u] \cap LiveIdx} : u \in Honest}
view == <<session, fn, origin, passed, NetLive, byz, st, rej, arr, tip, ses, handed, CcLive, LiveCands, LiveSigs, Len(cands), chain>>
(* Every variable but the step label: for liveness checking, where a step   *)
(* that changes only what view leaves out must not count as stuttering.    *)
stepView == <<session, fn, origin, passed, net, byz, st, rej, arr, tip, ses, handed, cc, cands, sigs, chain>>

TypeOK ==
    /\ session \in Sessions
    /\ fn \in [Msgs -> FnPositions]
    /\ origin \in [Msgs -> Sessions]
    /\ passed \subseteq Msgs
    /\ net \subseteq Msgs \X Validators
    /\ byz \subseteq Msgs
    /\ st \in [Honest -> [Msgs -> Statuses]]
    /\ rej \in [Honest -> [Msgs -> SUBSET Validators]]
    /\ arr \in [Honest -> [Msgs -> Sessions]]
    /\ tip \in [Honest -> 0..Len(chain)]
    /\ ses \in [Honest -> Sessions]
    /\ handed \in [Honest -> SUBSET Validators]
    /\ cc \subseteq [r: Records, to: Honest]
    /\ \A i \in 1..Len(cands) :
          /\ cands[i].by \in Validators /\ cands[i].msgs \subseteq Msgs /\ cands[i].msgs # {}
          /\ cands[i].ses \in Sessions /\ cands[i].h \in Nat
    /\ sigs \in [Honest -> SUBSET (1..Len(cands))]
    /\ \A i \in 1..Len(chain) : chain[i].msgs \subseteq Msgs /\ chain[i].ses \in Sessions

Init ==
    /\ session = 0
    /\ fn = [m \in Msgs |-> "none"]
    /\ origin = [m \in Msgs |-> 0]
    /\ passed = {}
    /\ net = {}
    /\ byz = {}
    /\ st = [w \in Honest |-> [m \in Msgs |-> "none"]]
    /\ rej = [w \in Honest |-> [m \in Msgs |-> {}]]
    /\ arr = [w \in Honest |-> [m \in Msgs |-> 0]]
    /\ tip = [w \in Honest |-> 0]
    /\ ses = [w \in Honest |-> 0]
    /\ handed = [w \in Honest |-> {}]
    /\ cc = {}
    /\ cands = << >>
    /\ sigs = [w \in Honest |-> {}]
    /\ chain = << >>
    /\ last = [a |-> "Init"]

-----------------------------------------------------------------------------
(* The client and the full node.                                           *)

Recipients == {T \in SUBSET Members[session] : Cardinality(T) = Fanout}

(* When the client may make message m: at any time. A configuration may    *)
(* replace it (ClientSubmits <- ...) to bound the search; MCREMP.tla says   *)
(* what each replacement leaves out.                                        *)
ClientSubmits(m) == TRUE

(* The client makes message m in this session (its expiry counts from it)  *)
(* and the full node passes pre-evaluation and sends it to Fanout          *)
(* validators of the session (001: "at least 1/3 + 1 of validators"). A    *)
(* message the full node has no outcome cached for may also be one the     *)
(* client made before and resubmits (FnUnseen: only without the cache); it *)
(* keeps its expiry.                                                        *)
Submit(m, T) ==
    /\ FnUnseen(m)
    /\ ClientSubmits(m)
    /\ fn' = [fn EXCEPT ![m] = FnTo["SentToValidators"]]
    /\ origin' = IF fn[m] = "none" THEN [origin EXCEPT ![m] = session] ELSE origin
    /\ passed' = passed \cup {m}
    /\ net' = net \cup {<<m, v>> : v \in T}
    /\ last' = [a |-> "Submit", m |-> m, to |-> T]
    /\ UNCHANGED <<session, byz, st, rej, arr, tip, ses, handed, cc, cands, sigs, chain>>

(* 000: pre-evaluation failed; RejectedByFullnode is final.                *)
PreReject(m) ==
    /\ FnUnseen(m)
    /\ fn' = [fn EXCEPT ![m] = FnTo["RejectedByFullnode"]]
    /\ last' = [a |-> "PreReject", m |-> m]
    /\ UNCHANGED <<session, origin, passed, net, byz, st, rej, arr, tip, ses, handed, cc, cands, sigs, chain>>

(* The validators a resend reaches, leaving out those for which a copy    *)
(* is spent (SpentCopy): a copy to them changes nothing, so the sets that   *)
(* differ only in them are one resend.                                       *)
ResendTargets(m) == {{v \in T : ~SpentCopy(<<m, v>>)} : T \in Recipients} \ {{}}

(* The full node resends a message it has no outcome for, once its         *)
(* previous copies are gone (the client                                     *)
(* resubmitting the same message while it is in processing comes to the    *)
(* same), to Fanout validators of the session in action.                   *)
Resend(m, T) ==
    /\ fn[m] = "sent"
    /\ \A v \in Validators : <<m, v>> \notin NetLive   \* the previous copies arrived or were lost
    /\ net' = net \cup {<<m, v>> : v \in T}
    /\ last' = [a |-> "Resend", m |-> m, to |-> T]
    /\ UNCHANGED <<session, fn, origin, passed, byz, st, rej, arr, tip, ses, handed, cc, cands, sigs, chain>>

(* The client resubmits a message that already has a final status, and the *)
(* full node's cache answers with that status. (Without the cache the       *)
(* message is unseen to the full node: the resubmission is Submit or        *)
(* PreReject, evaluated again as a new message.)                           *)
Resubmit(m) ==
    /\ fn[m] \in FnFinal
    /\ ~FnUnseen(m)
    /\ fn' = fn
    /\ last' = [a |-> "Resubmit", m |-> m]
    /\ UNCHANGED <<session, origin, passed, net, byz, st, rej, arr, tip, ses, handed, cc, cands, sigs, chain>>

(* The full node follows the shard chain: a message in an accepted block    *)
(* is Finalized (this model does not separate shard and master chain).     *)
Finalize(m) ==
    /\ fn[m] = "sent"
    /\ \E i \in 1..Len(chain) : m \in chain[i].msgs
    /\ fn' = [fn EXCEPT ![m] = FnTo["Finalized"]]
    /\ last' = [a |-> "Finalize", m |-> m]
    /\ UNCHANGED <<session, origin, passed, net, byz, st, rej, arr, tip, ses, handed, cc, cands, sigs, chain>>

-----------------------------------------------------------------------------
(* Honest validators.                                                      *)

(* A copy of m's body reaches w (from the full node, the catchain or a      *)
(* hand-over): a live message unseen to w is queued; one it holds or       *)
(* already processed is left alone (its cache), an obsolete one is not      *)
(* taken (001: "Such messages are not transmitted").                        *)
Take(w, m) ==
    IF Unseen(w, m) /\ LiveFor(w, m, ses[w]) THEN "queued" ELSE st[w][m]

Arrive(w, M) ==
    IF LifetimeFromMessage THEN arr
    ELSE [arr EXCEPT ![w] = [m \in Msgs |-> IF m \in M /\ Unseen(w, m) THEN ses[w] ELSE @[m]]]

(* w has an accepted block of its session still to apply. Its other steps  *)
(* (taking a copy, a catchain record, a faulty validator's record) wait     *)
(* until it applied it: a reduction of interleavings, not of behaviours.    *)
(* Those steps commute with applying: they neither read nor write tip,      *)
(* applying overwrites only the statuses of the block's messages (to        *)
(* accepted), and what they would do with one of those messages first       *)
(* (queue it, forward it) reaches only validators that apply the same block *)
(* and the faulty ones, which hold every body in the chain anyway. A        *)
(* validator behind cannot sign or collate at the top, so waiting does not  *)
(* change which blocks can be accepted.                                     *)
Behind(w) ==
    /\ tip[w] < Len(chain)
    /\ chain[tip[w] + 1].ses = ses[w]
    /\ w \in Members[ses[w]]

(* 000: a validator receiving a message from the full node queues it and,   *)
(* not having it from the catchain yet, puts it into the REMP catchain.     *)
Receive(m, v) ==
    /\ <<m, v>> \in net
    /\ v \in Honest
    /\ ~SpentCopy(<<m, v>>)
    /\ ~Behind(v)
    /\ net' = net \ {<<m, v>>}
    /\ IF v \in Members[ses[v]] /\ Unseen(v, m) /\ LiveFor(v, m, ses[v])
          THEN /\ st' = [st EXCEPT ![v][m] = "queued"]
               /\ arr' = Arrive(v, {m})
               /\ cc' = cc \cup Post(v, [k |-> "new", m |-> m, s |-> ses[v]], ses[v])
               /\ byz' = IF FaultyMembers(ses[v]) # {} THEN byz \cup {m} ELSE byz
          ELSE /\ st' = IF v \in Members[ses[v]] THEN [st EXCEPT ![v][m] = Take(v, m)] ELSE st
               /\ UNCHANGED <<arr, cc, byz>>
    /\ last' = [a |-> "Receive", m |-> m, v |-> v]
    /\ UNCHANGED <<session, fn, origin, passed, rej, tip, ses, handed, cands, sigs, chain>>

(* What record r, of w's session, does to w.                               *)
Learn(w, r) ==
    CASE r.k = "new" ->
            /\ st' = [st EXCEPT ![w][r.m] = Take(w, r.m)]
            /\ arr' = Arrive(w, {r.m})
            /\ UNCHANGED <<rej, handed>>
      [] r.k = "reject" ->
            /\ rej' = [rej EXCEPT ![w][r.m] = @ \cup {r.from}]
            /\ UNCHANGED <<st, arr, handed>>
      [] r.k = "handover" ->
            /\ st' = [st EXCEPT ![w] = [m \in Msgs |->
                        IF m \in r.acc /\ @[m] \in {"none", "queued", "rejected"} THEN "accepted"
                        ELSE IF m \in r.pend THEN Take(w, m) ELSE @[m]]]
            /\ arr' = Arrive(w, r.pend)
            /\ rej' = [rej EXCEPT ![w] = [m \in Msgs |-> IF m \in r.rej THEN @[m] \cup {r.from} ELSE @[m]]]
            \* (only a validator new to the session waits for hand-overs)
            /\ handed' = IF w \in Members[ses[w] - 1] THEN handed ELSE [handed EXCEPT ![w] = @ \cup {r.from}]

(* The catchain delivers record p.r to p.to, in any order. A record of a   *)
(* session the recipient has left is dropped; one of a session it has not  *)
(* reached yet waits.                                                      *)
Deliver(p) ==
    /\ p \in cc
    /\ ~SpentRecord(p)
    /\ ~Behind(p.to)
    /\ p.r.s <= ses[p.to]
    /\ cc' = cc \ {p}
    /\ IF p.r.s # ses[p.to] THEN UNCHANGED <<st, rej, arr, handed>> ELSE Learn(p.to, p.r)
    /\ last' = [a |-> "Deliver", to |-> p.to, r |-> p.r]
    /\ UNCHANGED <<session, fn, origin, passed, net, byz, tip, ses, cands, sigs, chain>>

(* Without re-broadcast (mutation) a record lost on the way is never       *)
(* delivered; with it, a loss only delays the record.                      *)
CcLose(p) ==
    /\ ~Rebroadcast
    /\ p \in cc
    /\ ~SpentRecord(p)
    /\ cc' = cc \ {p}
    /\ last' = [a |-> "CatchainLoses", to |-> p.to, r |-> p.r]
    /\ UNCHANGED <<session, fn, origin, passed, net, byz, st, rej, arr, tip, ses, handed, cands, sigs, chain>>

(* Collation round of w at the height it has applied. 000: messages        *)
(* rejected by 2/3 are not collated further; obsolete ones are not. The     *)
(* collator accepts each message it is handed into the candidate, rejects   *)
(* it (the validator tells the others), or ignores it (it stays queued).   *)
(* A message whose key (its uid, in the ever-node profile) w's cache holds  *)
(* as accepted under another id is a duplicate (ever-node: RejectedByQueue  *)
(* "Duplicate uid"): it is not collated.                                    *)
DuplicateAt(w, m) == \E n \in Msgs \ {m} : SameKey(m, n) /\ st[w][n] = "accepted"
Eligible(w) == {m \in Msgs : st[w][m] = "queued" /\ LiveFor(w, m, ses[w]) /\ ~Stopped(w, m) /\ ~DuplicateAt(w, m)}
(* At most one id of a key in a block: the collator takes one of them (the  *)
(* ever-node collator the lowest id; which one is left open here).          *)
OneIdPerKey(M) == \A m, n \in M : SameKey(m, n) => m = n

CollateWith(w, res) ==
    LET A == {m \in DOMAIN res : res[m] = "acc"}
        R == {m \in DOMAIN res : res[m] = "rej"}
    IN
    /\ A # {}  \/ R # {}
    /\ OneIdPerKey(A)
    /\ cands' = IF A = {} THEN cands
                ELSE Append(cands, [by |-> w, msgs |-> A, ses |-> session, h |-> tip[w]])
    \* the collator signs its own candidate, unless it already voted at this height
    /\ sigs' = IF A # {} /\ ~VotedAt(w, session, tip[w]) THEN [sigs EXCEPT ![w] = @ \cup {Len(cands) + 1}] ELSE sigs
    /\ st' = [st EXCEPT ![w] = [m \in Msgs |-> IF m \in A THEN "cand" ELSE IF m \in R THEN "rejected" ELSE @[m]]]
    /\ rej' = [rej EXCEPT ![w] = [m \in Msgs |-> IF m \in R THEN @[m] \cup {w} ELSE @[m]]]
    /\ cc' = cc \cup UNION {Post(w, [k |-> "reject", m |-> m, from |-> w, s |-> session], session) : m \in R}
    /\ last' = [a |-> "Collate", v |-> w, res |-> res]
    /\ UNCHANGED <<session, fn, origin, passed, net, byz, arr, tip, ses, handed, chain>>

NoCandidateYet(v) == ~\E i \in 1..Len(cands) : cands[i].by = v /\ cands[i].ses = session /\ cands[i].h = Len(chain)

Collate(w) ==
    /\ Works(w)
    /\ tip[w] = Len(chain)
    /\ NoCandidateYet(w)
    /\ \E res \in [Eligible(w) -> {"acc", "rej", "ign"}] : CollateWith(w, res)

(* No overload and valid messages: the collator includes every message it *)
(* is handed (rejections are checked for safety, not here).                 *)
CollateNoOverload(w) ==
    /\ Works(w)
    /\ tip[w] = Len(chain)
    /\ NoCandidateYet(w)
    /\ CollateWith(w, [m \in Eligible(w) |-> "acc"])

(* Validation of a candidate on top of the chain u has applied. 000: "If   *)
(* the message was processed by some node and accepted, then the current    *)
(* block is declined" (u's cache); an obsolete message is not valid.        *)
Valid(u, m) ==
    /\ ValidateAgainstCache => \A n \in Msgs : SameKey(m, n) => st[u][n] # "accepted"
    /\ LiveFor(u, m, session)

(* u signs candidate c if it works in c's session, has applied the chain  *)
(* c builds on, and finds every message of c valid.                       *)
SignsCand(u, c) ==
    /\ Works(u)
    /\ c.h = tip[u]
    /\ \A m \in c.msgs : Valid(u, m)
    /\ ValidateAgainstCache => OneIdPerKey(c.msgs)
(* Honest validator u signs candidate b of the session in action on top of *)
(* the chain, on its own knowledge, once per height.                       *)
Sign(u, b) ==
    LET c == cands[b] IN
    /\ c.ses = session
    /\ c.h = Len(chain)
    /\ b \notin sigs[u]
    /\ ~VotedAt(u, c.ses, c.h)
    /\ SignsCand(u, c)
    /\ sigs' = [sigs EXCEPT ![u] = @ \cup {b}]
    /\ last' = [a |-> "Sign", v |-> u, b |-> b]
    /\ UNCHANGED <<session, fn, origin, passed, net, byz, st, rej, arr, tip, ses, handed, cc, cands, chain>>

(* The signatures candidate b carries: the honest members of its session   *)
(* that signed it, and the faulty ones (they sign anything).               *)
SignedBy(b) == {u \in HonestMembers(cands[b].ses) : b \in sigs[u]} \cup FaultyMembers(cands[b].ses)
Certified(b) == Cardinality(SignedBy(b)) >= Quorum(cands[b].ses)

(* Consensus: a candidate on top of the chain that carries the signatures  *)
(* of more than 2/3 of the session's validators is accepted.               *)
Accept(b) ==
    /\ cands[b].ses = session
    /\ cands[b].h = Len(chain)
    /\ Certified(b)
    /\ chain' = Append(chain, [msgs |-> cands[b].msgs, ses |-> session])
    /\ last' = [a |-> "Accept", b |-> b, signers |-> SignedBy(b) \cap Honest]
    /\ UNCHANGED <<session, fn, origin, passed, net, byz, st, rej, arr, tip, ses, handed, cc, cands, sigs>>

(* w applies the next shard block of its session: its messages go into w's *)
(* cache (IncludedIntoAcceptedBlock); messages of w's own candidate that    *)
(* lost the round return to the queue (IgnoredByShardchain).               *)
Apply(w) ==
    LET blk == chain[tip[w] + 1] IN
    /\ Behind(w)
    /\ tip' = [tip EXCEPT ![w] = @ + 1]
    /\ st' = [st EXCEPT ![w] = [m \in Msgs |->
                 IF m \in blk.msgs /\ @[m] # "gone" THEN "accepted"
                 ELSE IF @[m] = "cand" THEN "queued" ELSE @[m]]]
    /\ last' = [a |-> "Apply", v |-> w, h |-> tip[w] + 1]
    /\ UNCHANGED <<session, fn, origin, passed, net, byz, rej, arr, ses, handed, cc, cands, sigs, chain>>

(* Whether the hand-over carries digests of the accepted messages: 000 says *)
(* so ("for replay protection purposes"); ever-node does not forward        *)
(* finally accepted messages (remp-as-built section 5), and its profile's   *)
(* configuration replaces this definition (ForwardsAccepted <- ...).        *)
ForwardsAccepted == TRUE

(* w moves to the session in action. 001: its messages obsolete there time  *)
(* out; candidates of the ended session are dead (their messages return to  *)
(* the queue). A validator of the ended session hands over to the next      *)
(* one's validators: pending messages whole, accepted ones as digests       *)
(* (000: "for replay protection purposes"), rejected ones as ids            *)
(* (remp-as-built section 5). A validator new to the shard syncs the chain  *)
(* (its state, not the messages in it).                                     *)
Rotate(w) ==
    LET old == ses[w]
        new == old + 1
        s2 == [m \in Msgs |-> IF st[w][m] \in {"queued", "cand", "accepted", "rejected"} /\ ~LiveFor(w, m, new)
                                 THEN "gone"
                              ELSE IF st[w][m] = "cand" THEN "queued" ELSE st[w][m]]
        ho == [k |-> "handover", from |-> w, s |-> new,
               acc |-> IF Digests /\ ForwardsAccepted THEN {m \in Msgs : s2[m] = "accepted"} ELSE {},
               pend |-> {m \in Msgs : s2[m] = "queued" /\ ~Stopped(w, m)},
               rej |-> {m \in Msgs : s2[m] = "rejected"}]
    IN
    /\ old < session
    /\ w \in Members[old] => tip[w] = Len(chain)
    /\ ses' = [ses EXCEPT ![w] = new]
    /\ st' = [st EXCEPT ![w] = s2]
    /\ cc' = IF w \in Members[old] THEN cc \cup Post(w, ho, new) ELSE cc
    /\ byz' = IF w \in Members[old] /\ FaultyMembers(new) # {} THEN byz \cup ho.pend ELSE byz
    /\ tip' = IF w \in Members[new] \ Members[old] THEN [tip EXCEPT ![w] = Len(chain)] ELSE tip
    /\ last' = [a |-> "Rotate", v |-> w, s |-> new]
    /\ UNCHANGED <<session, fn, origin, passed, net, rej, arr, handed, cands, sigs, chain>>

(* The masterchain moves to the next session once every honest validator   *)
(* works in this one (sessions last long enough for that).                 *)
Switch ==
    /\ session < MaxSession
    /\ \A w \in Honest : ses[w] = session
    /\ session' = session + 1
    /\ last' = [a |-> "Switch", s |-> session + 1]
    /\ UNCHANGED <<fn, origin, passed, net, byz, st, rej, arr, tip, ses, handed, cc, cands, sigs, chain>>

(* An honest validator crashes and restarts (not a Byzantine fault: it is  *)
(* not counted in f). What survives is what the validator keeps on disk:   *)
(* the blocks it applied (tip), its session (ses), its catchain log (the    *)
(* records delivered to it, so the reject senders counted, rej, and the     *)
(* hand-overs received, handed; its own votes, sigs) and its replay cache   *)
(* of final statuses (001: the ids of messages in accepted blocks are kept  *)
(* "as about some extended Shard State"; its own reject is a record of its  *)
(* catchain log; a message timed out stays obsolete). What is lost is the   *)
(* in-memory queue: a message queued or in its candidate is unseen again,   *)
(* and comes back by the full node's resend. Copies and records in transit  *)
(* to it are not lost (the network holds them). When a restart may happen  *)
(* is a definition a configuration replaces (RestartPossible <- ...) to     *)
(* bound the crashes; by default none.                                      *)
RestartPossible(w) == FALSE
KeptOnRestart == FinalStatuses

Restart(w) ==
    /\ RestartPossible(w)
    /\ st' = [st EXCEPT ![w] = [m \in Msgs |-> IF @[m] \in KeptOnRestart THEN @[m] ELSE "none"]]
    /\ sigs' = sigs
    /\ st' # st   \* (a restart that loses nothing is not a step)
    \* Copies and records to w whose arrival changes nothing (spent) are taken to have arrived
    \* before the crash: after it they would count again, and the view has merged the states
    \* that differ only in them.
    /\ net' = {c \in net : ~(c[2] = w /\ SpentCopy(c))}
    /\ cc' = {p \in cc : ~(p.to = w /\ SpentRecord(p))}
    /\ last' = [a |-> "Restart", v |-> w]
    /\ UNCHANGED <<session, fn, origin, passed, byz, rej, arr, tip, ses, handed, cands, chain>>

-----------------------------------------------------------------------------
(* Faulty validators.                                                      *)

ByzReceive(m, v) ==
    /\ <<m, v>> \in net
    /\ v \in Faulty
    /\ m \notin byz
    /\ net' = net \ {<<m, v>>}
    /\ byz' = byz \cup {m}
    /\ last' = [a |-> "ByzReceive", m |-> m, v |-> v]
    /\ UNCHANGED <<session, fn, origin, passed, st, rej, arr, tip, ses, handed, cc, cands, sigs, chain>>

Bodies == IF BodiesSigned THEN byz \cup ChainMsgs ELSE Msgs

(* A record to honest member w: a body it holds, a reject of any message   *)
(* (seen or not), or (in a session after the first) a hand-over that        *)
(* leaves out or adds what it likes, but digests only of real blocks.       *)
(* Its own reject of m reaches w only when it completes w's 2/3 count: a    *)
(* reduction, not a limit on the adversary. Before that moment the record   *)
(* changes nothing any step or property reads (rej is read only through     *)
(* that count), and the adversary can always tell it later, so every        *)
(* behaviour with an earlier record has one with the record moved to that   *)
(* moment that passes through the same statuses.                            *)
CompletesStop(w, m) == Cardinality(rej[w][m] \cap Members[ses[w]]) = StopCollationRejected(NOf(ses[w])) - 1

ByzRecords(v, w) ==
    [k: {"new"}, m: Bodies, s: {session}]
    \cup [k: {"reject"}, m: {m \in Msgs : CompletesStop(w, m)}, from: {v}, s: {session}]
    \* (without signatures, in any name but w's own: w knows what it signed itself)
    \cup (IF SignedRecords THEN {} ELSE [k: {"reject"}, m: Msgs, from: Validators \ {v, w}, s: {session}])
    \cup (IF session > 0 /\ v \in Members[session - 1]
          THEN [k: {"handover"}, from: {v}, s: {session}, acc: {{}}, pend: SUBSET Bodies, rej: SUBSET Msgs]
          ELSE {})

(* A faulty validator's record reaches one honest member w of its session *)
(* (to w alone: equivocation); the adversary picks the moment, so it is    *)
(* delivered in the same step.                                             *)
ByzTell(v, w, r) ==
    /\ ses[w] = session
    /\ ~Behind(w)
    /\ Learn(w, r)
    /\ <<st, rej, arr, handed>>' # <<st, rej, arr, handed>>   \* (a record that changes nothing is not told)
    /\ last' = [a |-> "ByzTell", v |-> v, to |-> w, r |-> r]
    /\ UNCHANGED <<session, fn, origin, passed, net, byz, tip, ses, cc, cands, sigs, chain>>

(* A faulty proposer's candidate on top of the chain, with any bodies it   *)
(* holds; the honest validators sign it or not (Sign), each on its own     *)
(* knowledge; the faulty ones sign it.                                     *)
ByzPropose(v, M) ==
    /\ NoCandidateYet(v)
    /\ cands' = Append(cands, [by |-> v, msgs |-> M, ses |-> session, h |-> Len(chain)])
    /\ last' = [a |-> "ByzPropose", v |-> v, msgs |-> M]
    /\ UNCHANGED <<session, fn, origin, passed, net, byz, st, rej, arr, tip, ses, handed, cc, sigs, chain>>

Byzantine ==
    \/ \E <<m, v>> \in net : ByzReceive(m, v)
    \/ \E v \in FaultyMembers(session), w \in HonestMembers(session) :
          \E r \in ByzRecords(v, w) : ByzTell(v, w, r)
    \/ \E v \in FaultyMembers(session), M \in SUBSET Bodies : M # {} /\ ByzPropose(v, M)

-----------------------------------------------------------------------------
Environment ==
    \/ \E m \in Msgs, T \in Recipients : Submit(m, T)
    \/ \E m \in Msgs : \E T \in ResendTargets(m) : Resend(m, T)
    \/ \E m \in Msgs : PreReject(m) \/ Resubmit(m) \/ Finalize(m)
    \/ \E p \in cc : CcLose(p)
    \/ \E b \in 1..Len(cands) : Accept(b)
    \/ Switch

HonestSteps(Collation(_)) ==
    \/ \E <<m, v>> \in net : Receive(m, v)
    \/ \E p \in cc : Deliver(p)
    \/ \E w \in Honest : Collation(w) \/ Apply(w) \/ Rotate(w)
    \/ \E w \in Honest, b \in 1..Len(cands) : Sign(w, b)

Next == Environment \/ HonestSteps(Collate) \/ Byzantine \/ \E w \in Honest : Restart(w)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Safety: what users are promised.                                        *)

(* 000 replay protection: no message is in two blocks of the shard chain.  *)
NoReplay ==
    \A i, j \in 1..Len(chain) : i # j => chain[i].msgs \cap chain[j].msgs = {}

(* The ever-node profile: the client resubmitting a body under a new id    *)
(* (the same uid) gets it executed at most once: no two ids of one uid are  *)
(* in the shard chain. Promised where the cache is keyed by uid; in the     *)
(* documents' profile (keyed by id) two ids are two messages.              *)
OneIdPerUid ==
    \A i, j \in 1..Len(chain) : \A m \in chain[i].msgs, n \in chain[j].msgs :
        UidOf[m] = UidOf[n] => m = n

(* Consensus safety, which replay protection rests on: no two candidates   *)
(* of one session and height both carry a quorum of signatures (else both  *)
(* could be accepted, on two forks of the shard chain, and a message        *)
(* finalized on one could be executed again on the other). A consequence   *)
(* of the 2/3 quorum and of each honest validator's one vote per height:   *)
(* two quorums of more than 2/3 share an honest validator.                 *)
NoFork ==
    \A b1, b2 \in 1..Len(cands) :
        (b1 # b2 /\ cands[b1].ses = cands[b2].ses /\ cands[b1].h = cands[b2].h) => ~(Certified(b1) /\ Certified(b2))

(* 001: no message is in a block of a session in which it is obsolete.     *)
NoInclusionAfterObsolete ==
    \A i \in 1..Len(chain) : \A m \in chain[i].msgs : LiveIn(origin[m], chain[i].ses)

(* Every message in the shard chain was submitted by the client and passed *)
(* on by the full node: nothing is executed that the client did not send.  *)
ChainHoldsOnlySubmitted == \A i \in 1..Len(chain) : chain[i].msgs \subseteq passed

(* Every message the full node reported Finalized is in the shard chain.   *)
(* Not checked on this model, where it is Finalize's own guard; it is a    *)
(* promise of the step model (REMPSteps.tla), whose full node finalizes on *)
(* its own rule, checked there through a refinement mapping onto these     *)
(* definitions (conformance/remp/agreement/promises.py).                   *)
FinalizedIsInChain == \A m \in Msgs : fn[m] = "finalized" => m \in ChainMsgs
FinalizedWasSubmittedAndAccepted == ChainHoldsOnlySubmitted /\ FinalizedIsInChain

(* No receipt contradicts a final one: a client that was told a final      *)
(* status is never told otherwise later. fn is the position the full       *)
(* node's last receipt to the client put the message at (FnTo), so once it *)
(* reported Finalized or RejectedByFullnode it reports nothing else; st is *)
(* a validator's receipts, coarsened: after its accepted (in a block it    *)
(* applied) it only forgets the message once obsolete, after its rejected  *)
(* (000: "will not be tried again by this particular validator") it may    *)
(* only learn that another validator's block holds it, and after it timed  *)
(* the message out nothing. With every mechanism on no step is written to  *)
(* leave a final status; what keeps it is the cache (Unseen, FnUnseen):    *)
(* without it a resubmission or a late copy runs the ordinary pipeline     *)
(* again and the new receipts contradict the final one.                    *)
FinalSticky ==
    [][/\ \A m \in Msgs : fn[m] \in FnFinal => fn'[m] = fn[m]
       /\ \A w \in Honest, m \in Msgs :
            /\ st[w][m] = "accepted" => st'[w][m] \in {"accepted", "gone"}
            /\ st[w][m] = "rejected" => st'[w][m] \in {"rejected", "accepted", "gone"}
            /\ st[w][m] = "gone" => st'[w][m] = "gone"]_vars

(* 000: "those rejected by 2/3 of collators should not be collated         *)
(* further", and 000/001: "All validators must reject the message before it *)
(* is finally rejected": when an honest validator stops collating a message *)
(* for the 2/3 rule, 2/3 of its session's validators really rejected it:    *)
(* with at most f of them faulty, at least StopCollationRejected(N) - f     *)
(* honest members rejected it in their own collation. The faulty ones       *)
(* cannot stop a message alone. A consequence of the signatures on catchain *)
(* records (counted per distinct signer) and of what honest validators      *)
(* post; not of the rule that reads the count.                              *)
HonestRejecters(m, s) == {u \in HonestMembers(s) : u \in rej[u][m]}

RejectsStopCollation ==
    \A w \in Honest, m \in Msgs :
        Stopped(w, m) =>
            Cardinality(HonestRejecters(m, ses[w])) + Cardinality(FaultyMembers(ses[w]))
                >= StopCollationRejected(NOf(ses[w]))

(* 001's "Such messages are not transmitted" (no obsolete message queued   *)
(* or handed over) is not claimed: it is Take's and Rotate's own rule. What *)
(* users are promised of lifetimes is NoInclusionAfterObsolete.             *)

-----------------------------------------------------------------------------
(* Liveness under fairness: at most FaultyMax(N) faulty, Fanout =          *)
(* FanoutMin(N), no overload (the collator includes or rejects what it is  *)
(* handed), the catchain delivers each honest sender's records, the full   *)
(* node resends, blocks with a quorum are accepted, sessions go on.        *)
(* The consensus's rounds are not modelled: several honest candidates of   *)
(* one height could split the honest votes so that none gets a quorum, and  *)
(* what resolves that is a new round with another leader. So liveness is    *)
(* checked with one honest proposal per height (a round whose leader is     *)
(* honest), beside which the faulty validator may propose its own.          *)
CollateLive(w) ==
    /\ ~\E i \in 1..Len(cands) : cands[i].by \in Honest /\ cands[i].ses = session /\ cands[i].h = Len(chain)
    /\ CollateNoOverload(w)

NextLive == Environment \/ HonestSteps(CollateLive) \/ Byzantine

(* Each class of honest step is finite (a record is delivered once, a     *)
(* message collated once per height, a block accepted once),              *)
(* so one weak fairness condition per class makes each happen; receiving  *)
(* a copy needs strong fairness, as the full node's resends go on.        *)
LiveSpec ==
    /\ Init /\ [][NextLive]_vars
    /\ \A m \in Msgs : WF_vars(\E T \in ResendTargets(m) : Resend(m, T)) /\ WF_vars(Finalize(m))
    /\ \A m \in Msgs : SF_vars(\E v \in Honest : Receive(m, v))
    /\ WF_vars(\E p \in cc : Deliver(p))
    /\ WF_vars(\E w \in Honest : CollateLive(w))
    /\ WF_vars(\E w \in Honest, b \in 1..Len(cands) : Sign(w, b))
    /\ WF_vars(\E w \in Honest : Apply(w))
    /\ WF_vars(\E w \in Honest : Rotate(w))
    /\ WF_vars(\E b \in 1..Len(cands) : Accept(b))
    /\ WF_vars(Switch)

(* Resolved: Finalized or rejected at the full node, obsolete, or every    *)
(* honest validator of the session is done with it (in its cache,          *)
(* rejected, forgotten, or stopped by 2/3 rejects).                        *)
Resolved(m) ==
    \/ fn[m] \in FnFinal
    \/ ~LiveIn(origin[m], session)
    \/ \A w \in HonestMembers(session) : st[w][m] \in FinalStatuses \/ Stopped(w, m)

EverySubmittedResolved == \A m \in Msgs : fn[m] = "sent" ~> Resolved(m)

EveryMemberHasIt ==
    \A m \in Msgs, w \in Honest :
        (fn[m] = "sent" /\ w \in Members[session]) ~> (st[w][m] # "none" \/ Resolved(m))
=============================================================================
