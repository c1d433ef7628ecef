--------------------------------- MODULE RMB ---------------------------------
(***************************************************************************)
(* RMB v1 (document 004 and the facts of rmb-as-built), one request seen   *)
(* from its sender's daemon: the client pushes it to msgbus.system.local,  *)
(* the local dispatcher writes the backlog (a Redis key with a TTL) and    *)
(* one forward job per destination, forward workers POST it to each       *)
(* destination's remote endpoint up to `try` times, the remote handler     *)
(* answers, the remote daemon POSTs the reply to the sender's reply        *)
(* endpoint, which routes it to $ret while the request is live.            *)
(*                                                                         *)
(* The adversary, each move bounded by a constant: HTTP loses a request or *)
(* its answer (the sender sees a connection error; a lost answer means the *)
(* remote handler got the request, so a retry delivers it twice), the      *)
(* remote refuses with a server error, a reply is lost or delivered twice, *)
(* the sender's daemon crashes (its memory is lost, Redis keeps its keys   *)
(* and lists), and time passes while work is pending (a slow network, an   *)
(* HTTP timeout). Otherwise the daemon's own steps take less than a second:*)
(* the clock moves only when nothing is pending.                           *)
(*                                                                         *)
(* The profile's choices come from the generated RMBProfiles module.       *)
(* Every action records its step in `last`, in the names the agreement     *)
(* with the reference daemon uses (conformance/rmb/agreement.py).          *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, RMBProfiles

CONSTANTS
    Profile,       \* one of Profiles
    Dests,         \* how many destinations the request names (twins 2, 3, ... in the client's order)
    Try,           \* the request's try field
    Exp,           \* the request's exp: seconds after its now (the client stamps now = 0)
    MaxTime,       \* the last second explored
    MaxLoss,       \* requests, or their answers, HTTP loses on the way to a destination
    MaxFail,       \* requests a remote refuses with a server error (500)
    MaxReplyLoss,  \* replies lost on their way back (every retry of the remote daemon failed)
    MaxDup,        \* replies delivered twice (the remote daemon retried one whose answer was lost)
    MaxCrash,      \* crashes of the sender's daemon
    MaxDelay,      \* seconds that pass while work is pending
    Persistence,   \* what the sender's Redis keeps across a restart: "none" (nothing) or "aof" (every write)
    MaxRedisCrash, \* restarts of the sender's Redis
    MaxRemoteCrash,\* crashes of a destination's daemon
    MaxSkew        \* the most a destination's clock is ahead of (or behind) the sender's, in seconds

ASSUME Profile \in Profiles /\ Exp \in Nat \ {0} /\ Try \in Nat /\ Dests \in Nat \ {0}
ASSUME Persistence \in {"none", "aof"} /\ MaxSkew \in Nat

DstSeq == [i \in 1..Dests |-> i + 1]   \* the request's dst; the sender is twin 1

Dst == {DstSeq[i] : i \in DOMAIN DstSeq}
Deadline == Exp                         \* now + exp, with now = 0 (RMB-MSG-004)
Clamp(n) == LET lo == IF n < TryMinIn(Profile) THEN TryMinIn(Profile) ELSE n
            IN IF TryMaxIn(Profile) # 0 /\ lo > TryMaxIn(Profile) THEN TryMaxIn(Profile) ELSE lo
TryEff == Clamp(Try)                    \* RMB-RETRY-001: try clamped to the profile's bounds
RetryAny == RetryAnyIn(Profile)
RetryQueue == RetryQueueIn(Profile)
AfterPost == BacklogAfterPostIn(Profile)
Restamp == RestampIn(Profile)
RefuseExpired == RefuseExpiredIn(Profile)
Scrubber == ScrubberIn(Profile)

\* "late": a request on the wire since the second before (the network holds a request across one
\* second at most: it reaches the destination or is lost before the next second passes).
Exchanges == {"idle", "sent", "late", "accepted", "refused", "failed", "lost"}
OnWire == {"sent", "late"}
Answered == {"accepted", "refused", "failed", "lost"}

VARIABLES
    clock,      \* seconds since the client stamped the request
    local,      \* the request waits in msgbus.system.local
    bl,         \* the key with a TTL: [on, until] (spec, rmb-rs-v1: the backlog; rmb-go: the pending copy)
    hash,       \* rmb-go's entry in the backlog hash, written after a successful POST: [on, epoch, d]
    fwd,        \* msgbus.system.forward: the destinations whose job waits, oldest first
    rq,         \* rmb-go's msgbus.system.retry: d -> the attempt number its entry carries (0: none)
    w,          \* the forward workers' memory: d -> the attempt it is on (0: no worker holds d's job)
    ex,         \* d -> the HTTP exchange of d's current attempt
    todo,       \* d -> requests d's handler got and has still to answer
    rp,         \* d -> replies on their way to the sender's reply endpoint
    out,        \* what reached $ret: [d, k ("reply", "error", "timeout"), t]
    posts,      \* ghost: d -> POSTs made to d
    got,        \* ghost: deliveries to d's handler: [d, t]
    liveUntil,  \* ghost: the last second the request is live, from when its entry was written (-1: never)
    skew,       \* the destinations' clocks minus the sender's (fixed for a run, within MaxSkew)
    budget,     \* the adversary's moves used so far
    last        \* the step just taken

vars == <<clock, local, bl, hash, fwd, rq, w, ex, todo, rp, out, posts, got, liveUntil, skew, budget, last>>
Moves == {"loss", "fail", "rloss", "dup", "crash", "delay", "redis", "rcrash"}
Bound(c) == CASE c = "loss" -> MaxLoss [] c = "fail" -> MaxFail [] c = "rloss" -> MaxReplyLoss
              [] c = "dup" -> MaxDup [] c = "crash" -> MaxCrash [] c = "delay" -> MaxDelay
              [] c = "redis" -> MaxRedisCrash [] c = "rcrash" -> MaxRemoteCrash
Spent(c) == budget[c] >= Bound(c)
Use(c) == budget' = [budget EXCEPT ![c] = @ + 1]

TypeOK ==
    /\ clock \in 0..MaxTime /\ local \in BOOLEAN
    /\ bl.on \in BOOLEAN /\ bl.until \in -1..(MaxTime + Exp) /\ hash.on \in BOOLEAN /\ hash.epoch \in -1..MaxTime
    /\ {fwd[i] : i \in DOMAIN fwd} \subseteq Dst
    /\ rq \in [Dst -> 0..TryEff] /\ w \in [Dst -> 0..TryEff] /\ ex \in [Dst -> Exchanges]
    /\ todo \in [Dst -> Nat] /\ rp \in [Dst -> Nat] /\ posts \in [Dst -> Nat]
    /\ \A o \in out : o.d \in Dst /\ o.k \in {"reply", "error", "timeout"} /\ o.t \in 0..MaxTime
    /\ \A g \in got : g.d \in Dst /\ g.t \in 0..MaxTime
    /\ \A d \in Dst : ~(w[d] > 0 /\ rq[d] > 0)
    /\ skew \in -MaxSkew..MaxSkew

Init ==
    /\ clock = 0 /\ local = TRUE
    /\ bl = [on |-> FALSE, until |-> -1] /\ hash = [on |-> FALSE, epoch |-> -1, d |-> DstSeq[1]]
    /\ fwd = <<>> /\ rq = [d \in Dst |-> 0] /\ w = [d \in Dst |-> 0] /\ ex = [d \in Dst |-> "idle"]
    /\ todo = [d \in Dst |-> 0] /\ rp = [d \in Dst |-> 0]
    /\ out = {} /\ posts = [d \in Dst |-> 0] /\ got = {} /\ liveUntil = -1
    /\ skew \in -MaxSkew..MaxSkew
    /\ budget = [c \in Moves |-> 0]
    /\ last = [a |-> "Init"]

Remote == <<todo, rp, got>>

\* ---- the sender's daemon ----
\* The local dispatcher pops the request and, in one transaction, writes it under a key with a TTL
\* of exp (RMB-BACKLOG-001; rmb-go: the pending copy, its backlog entry comes after the POST) and
\* pushes one forward job per destination (RMB-FANOUT-001).
Dispatch ==
    /\ local
    /\ local' = FALSE
    /\ bl' = [on |-> TRUE, until |-> clock + Exp]
    /\ liveUntil' = IF AfterPost THEN liveUntil ELSE clock + Exp
    /\ fwd' = DstSeq
    /\ last' = [a |-> "Dispatch"]
    /\ UNCHANGED <<clock, hash, rq, w, ex, out, posts, budget, Remote, skew>>

\* A worker pops the oldest forward job and reads the request; a job whose key is gone (expired)
\* is dropped without a POST (RMB-BACKLOG-002).
Take ==
    /\ fwd # <<>>
    /\ LET d == Head(fwd)
       IN /\ w' = IF bl.on THEN [w EXCEPT ![d] = 1] ELSE w
          /\ last' = [a |-> "Take", d |-> d, skipped |-> ~bl.on]
    /\ fwd' = Tail(fwd)
    /\ UNCHANGED <<clock, local, bl, hash, rq, ex, out, posts, liveUntil, budget, Remote, skew>>

\* rmb-go: the retry loop pops a retry entry and runs the job again from the attempt the entry
\* carries, reading the pending copy again (gone: dropped).
RetryTake(d) ==
    /\ RetryQueue /\ rq[d] > 0
    /\ rq' = [rq EXCEPT ![d] = 0]
    /\ w' = IF bl.on THEN [w EXCEPT ![d] = rq[d]] ELSE w
    /\ last' = [a |-> "RetryTake", d |-> d, skipped |-> ~bl.on]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, ex, out, posts, liveUntil, budget, Remote, skew>>

\* The worker signs the request and POSTs it to d's remote endpoint (RMB-FWD-001). Where the
\* profile re-stamps (rmb-rs-v1), the deadline is checked first (RMB-RETRY-004).
Post(d) ==
    /\ w[d] > 0 /\ ex[d] = "idle"
    /\ ~(Restamp /\ clock >= Deadline)
    /\ ex' = [ex EXCEPT ![d] = "sent"]
    /\ posts' = [posts EXCEPT ![d] = @ + 1]
    /\ last' = [a |-> "Post", d |-> d]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, rq, w, out, liveUntil, budget, Remote, skew>>

\* rmb-rs-v1: the deadline has passed before an attempt; the client gets an error (RMB-RETRY-002).
GiveUpExpired(d) ==
    /\ w[d] > 0 /\ ex[d] = "idle"
    /\ Restamp /\ clock >= Deadline
    /\ w' = [w EXCEPT ![d] = 0]
    /\ out' = out \cup {[d |-> d, k |-> "error", t |-> clock]}
    /\ last' = [a |-> "GiveUpExpired", d |-> d]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, rq, ex, posts, liveUntil, budget, Remote, skew>>

\* The worker reads the answer of d's exchange (RMB-RETRY-001..003): accepted ends the job (rmb-go
\* then writes its backlog entry); a connection error, or any failure where the profile retries
\* every failure, is retried while attempts remain (in the worker, or through rmb-go's retry
\* queue with the next attempt number); otherwise an error message goes to $ret.
React(d) ==
    /\ w[d] > 0 /\ ex[d] \in Answered
    /\ ex' = [ex EXCEPT ![d] = "idle"]
    /\ IF ex[d] = "accepted"
       THEN /\ w' = [w EXCEPT ![d] = 0]
            /\ hash' = IF AfterPost THEN [on |-> TRUE, epoch |-> clock, d |-> d] ELSE hash
            /\ liveUntil' = IF AfterPost THEN clock + Exp ELSE liveUntil
            /\ UNCHANGED <<rq, out, skew>>
       ELSE IF (ex[d] = "lost" \/ RetryAny) /\ w[d] < TryEff
       THEN /\ rq' = IF RetryQueue THEN [rq EXCEPT ![d] = w[d] + 1] ELSE rq
            /\ w' = [w EXCEPT ![d] = IF RetryQueue THEN 0 ELSE @ + 1]
            /\ UNCHANGED <<hash, liveUntil, out, skew>>
       ELSE /\ w' = [w EXCEPT ![d] = 0]
            /\ out' = out \cup {[d |-> d, k |-> "error", t |-> clock]}
            /\ UNCHANGED <<rq, hash, liveUntil, skew>>
    /\ last' = [a |-> "React", d |-> d, ex |-> ex[d]]
    /\ UNCHANGED <<clock, local, bl, fwd, posts, budget, Remote, skew>>

\* An answer to an exchange whose worker died in a crash goes nowhere.
Orphan(d) ==
    /\ w[d] = 0 /\ ex[d] \in Answered
    /\ ex' = [ex EXCEPT ![d] = "idle"]
    /\ last' = [a |-> "Orphan", d |-> d]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, rq, w, out, posts, liveUntil, budget, Remote, skew>>

\* The reply endpoint: a reply whose request is live (its entry still in Redis) goes to the
\* request's $ret (RMB-REPLY-005); otherwise it is dropped (RMB-REPLY-004).
ReplyArrive(d) ==
    /\ rp[d] > 0
    /\ rp' = [rp EXCEPT ![d] = @ - 1]
    /\ LET live == IF AfterPost THEN hash.on ELSE bl.on
       IN /\ out' = IF live THEN out \cup {[d |-> d, k |-> "reply", t |-> clock]} ELSE out
          /\ bl' = IF live /\ DeletedOnReplyIn(Profile) /\ ~AfterPost THEN [bl EXCEPT !.on = FALSE] ELSE bl
          /\ hash' = IF live /\ DeletedOnReplyIn(Profile) /\ AfterPost THEN [hash EXCEPT !.on = FALSE] ELSE hash
          /\ last' = [a |-> "ReplyArrive", d |-> d, routed |-> live]
    /\ UNCHANGED <<clock, local, fwd, rq, w, ex, posts, liveUntil, budget, todo, got, skew>>

\* A crash of the sender's daemon: the workers' memory is lost (a job popped from Redis is gone),
\* Redis keeps its keys and lists; a request already on the wire may still arrive.
Crash ==
    /\ ~Spent("crash") /\ Use("crash")
    /\ w' = [d \in Dst |-> 0]
    /\ ex' = [d \in Dst |-> IF ex[d] \in OnWire THEN ex[d] ELSE "idle"]
    /\ last' = [a |-> "Crash"]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, rq, out, posts, liveUntil, Remote, skew>>

\* ---- the destinations and the network ----
\* d's remote endpoint gets the request: refused when expired where the profile checks
\* (RMB-REMOTE-007), else queued for d's handler (RMB-REMOTE-005) and accepted.
Arrive(d) ==
    /\ ex[d] \in OnWire
    /\ IF RefuseExpired /\ clock + skew > Deadline
       THEN /\ ex' = [ex EXCEPT ![d] = "refused"]
            /\ UNCHANGED <<got, todo, skew>>
       ELSE /\ ex' = [ex EXCEPT ![d] = "accepted"]
            /\ got' = got \cup {[d |-> d, t |-> clock]}
            /\ todo' = [todo EXCEPT ![d] = @ + 1]
    /\ last' = [a |-> "Arrive", d |-> d]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, rq, w, rp, out, posts, liveUntil, budget, skew>>

Fail(d) ==
    /\ ex[d] \in OnWire /\ ~Spent("fail") /\ Use("fail")
    /\ ex' = [ex EXCEPT ![d] = "failed"]
    /\ last' = [a |-> "Fail", d |-> d]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, rq, w, out, posts, liveUntil, Remote, skew>>

\* The request, or the answer to it, is lost: the sender sees a connection error.
Lose(d) ==
    /\ ex[d] \in OnWire \cup {"accepted", "refused", "failed"} /\ ~Spent("loss") /\ Use("loss")
    /\ ex' = [ex EXCEPT ![d] = "lost"]
    /\ last' = [a |-> "Lose", d |-> d, was |-> ex[d]]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, rq, w, out, posts, liveUntil, Remote, skew>>

\* d's handler answers (pushing to msgbus.system.reply); d's daemon POSTs the reply back.
HandlerReply(d) ==
    /\ todo[d] > 0
    /\ todo' = [todo EXCEPT ![d] = @ - 1]
    /\ rp' = [rp EXCEPT ![d] = @ + 1]
    /\ last' = [a |-> "HandlerReply", d |-> d]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, rq, w, ex, out, posts, liveUntil, budget, got, skew>>

ReplyLose(d) ==
    /\ rp[d] > 0 /\ ~Spent("rloss") /\ Use("rloss")
    /\ rp' = [rp EXCEPT ![d] = @ - 1]
    /\ last' = [a |-> "ReplyLose", d |-> d]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, rq, w, ex, out, posts, liveUntil, todo, got, skew>>

ReplyDup(d) ==
    /\ rp[d] > 0 /\ ~Spent("dup") /\ Use("dup")
    /\ rp' = [rp EXCEPT ![d] = @ + 1]
    /\ last' = [a |-> "ReplyDup", d |-> d]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, rq, w, ex, out, posts, liveUntil, todo, got, skew>>

\* The sender's Redis restarts. With no persistence every key and list is gone: the request waiting
\* in msgbus.system.local, the backlog (rmb-go: the pending copy and the backlog hash), the forward
\* and retry queues; with an append-only file written on every command nothing is lost. The
\* daemon's workers keep what they hold in memory.
RedisCrash ==
    /\ ~Spent("redis") /\ Use("redis")
    /\ IF Persistence = "none"
       THEN /\ local' = FALSE /\ bl' = [bl EXCEPT !.on = FALSE] /\ hash' = [hash EXCEPT !.on = FALSE]
            /\ fwd' = <<>> /\ rq' = [d \in Dst |-> 0]
       ELSE UNCHANGED <<local, bl, hash, fwd, rq>>
    /\ last' = [a |-> "RedisCrash"]
    /\ UNCHANGED <<clock, w, ex, out, posts, liveUntil, skew, Remote>>

\* d's daemon crashes and restarts: a request on the wire to it gets no answer (the sender sees a
\* connection error), replies it was posting back are gone; the handler's queue (msgbus.$cmd, in
\* d's Redis) stays.
RemoteCrash(d) ==
    /\ ~Spent("rcrash") /\ Use("rcrash")
    /\ ex' = [ex EXCEPT ![d] = IF @ \in OnWire THEN "lost" ELSE @]
    /\ rp' = [rp EXCEPT ![d] = 0]
    /\ last' = [a |-> "RemoteCrash", d |-> d]
    /\ UNCHANGED <<clock, local, bl, hash, fwd, rq, w, out, posts, liveUntil, skew, todo, got>>

\* ---- time ----
Quiet == ~local /\ fwd = <<>> /\ \A d \in Dst : w[d] = 0 /\ ex[d] = "idle" /\ rq[d] = 0 /\ todo[d] = 0 /\ rp[d] = 0

\* A second passes: freely when nothing is pending, else as an adversary's delay; a request on the
\* wire may cross it (it arrives in the next second), not two. Redis drops a
\* key whose TTL ran out; rmb-go's scrubber (once a second) removes the backlog entry past
\* epoch + exp and pushes a "request timeout" error to $ret (RMB-BACKLOG-003).
Tick ==
    /\ clock < MaxTime
    /\ \A d \in Dst : ex[d] # "late"
    /\ IF Quiet THEN UNCHANGED budget ELSE ~Spent("delay") /\ Use("delay")
    /\ clock' = clock + 1
    /\ ex' = [d \in Dst |-> IF ex[d] = "sent" THEN "late" ELSE ex[d]]
    /\ bl' = IF bl.on /\ clock' > bl.until THEN [bl EXCEPT !.on = FALSE] ELSE bl
    /\ LET scrub == Scrubber /\ hash.on /\ hash.epoch + Exp < clock'
       IN /\ hash' = IF scrub THEN [hash EXCEPT !.on = FALSE] ELSE hash
          /\ out' = IF scrub THEN out \cup {[d |-> hash.d, k |-> "timeout", t |-> clock']} ELSE out
    /\ last' = [a |-> "Tick"]
    /\ UNCHANGED <<local, fwd, rq, w, posts, liveUntil, Remote, skew>>

Next ==
    \/ Dispatch \/ Take \/ Crash \/ Tick \/ RedisCrash
    \/ \E d \in Dst : \/ RetryTake(d) \/ Post(d) \/ GiveUpExpired(d) \/ React(d) \/ Orphan(d)
                      \/ ReplyArrive(d) \/ Arrive(d) \/ Fail(d) \/ Lose(d)
                      \/ HandlerReply(d) \/ ReplyLose(d) \/ ReplyDup(d) \/ RemoteCrash(d)

Spec == Init /\ [][Next]_vars

\* The daemons' own steps and the clock are weakly fair (each, while it stays enabled, is eventually
\* taken); the adversary's moves are not, and each is bounded.
FairSpec == Spec /\ WF_vars(Dispatch) /\ WF_vars(Take) /\ WF_vars(Tick)
    /\ \A d \in Dst : /\ WF_vars(RetryTake(d)) /\ WF_vars(Post(d)) /\ WF_vars(GiveUpExpired(d)) /\ WF_vars(React(d))
                     /\ WF_vars(Orphan(d)) /\ WF_vars(ReplyArrive(d)) /\ WF_vars(Arrive(d)) /\ WF_vars(HandlerReply(d))

\* ---- properties ----
\* RMB-REMOTE-007 / RMB-BACKLOG-002: no destination's handler gets the request after its deadline.
NoDeliveryAfterExpiry == \A g \in got : g.t <= Deadline

\* RMB-RETRY-001: at most try attempts (clamped) per destination, across crashes.
AtMostTryAttempts == \A d \in Dst : posts[d] <= TryEff

\* RMB-REPLY-004/005: a reply reaches $ret only while the request is live: no later than exp
\* seconds after its entry was written (the backlog at dispatch; rmb-go: its hash entry after the
\* POST, scrubbed once past epoch + exp).
RepliesOnlyWhileLive == \A o \in out : o.k = "reply" => o.t <= liveUntil

\* RMB-RETRY-002 / RMB-BACKLOG-003: a client that waits on $ret until the deadline has, by then, a
\* reply or an error from every destination, and nothing for the request reaches $ret later.
AnsweredByDeadline ==
    /\ \A o \in out : o.t <= Deadline
    /\ clock > Deadline => \A d \in Dst : \E o \in out : o.d = d

\* RMB-RETRY-002 (liveness): under FairSpec, every destination's reply or error eventually reaches
\* $ret (the client that waits is eventually answered by each destination).
EventuallyAnswered == <>(\A d \in Dst : \E o \in out : o.d = d)
=============================================================================
