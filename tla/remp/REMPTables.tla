---- MODULE REMPTables ----
\* GENERATED from spec/remp (profile 'spec') by `make tla-tables`; do not edit.
\* Receipt kinds, positions and transitions per source role (transitions.yaml), quorum
\* thresholds (protocol.yaml) and the documents' session rule (lifetimes.yaml).
EXTENDS Naturals, TLC

Profile == "spec"

VPositions == {"none", "queue", "collator", "shard", "duplicate", "finalized", "rejected", "timed_out"}
VFinal == {"finalized", "rejected", "timed_out"}
VKinds == {"PutIntoQueue", "IgnoredByQueue", "Duplicate", "Timeout", "IncludedIntoBlock", "IgnoredByCollator", "RejectedByCollator", "IncludedIntoAcceptedBlock", "IgnoredByShardchain", "RejectedByShardchain", "IgnoredByMasterchain"}
\* the position a validator is at after reporting each kind
VTo == "PutIntoQueue" :> "queue" @@ "IgnoredByQueue" :> "queue" @@ "Duplicate" :> "duplicate" @@ "Timeout" :> "timed_out" @@ "IncludedIntoBlock" :> "collator" @@ "IgnoredByCollator" :> "queue" @@ "RejectedByCollator" :> "rejected" @@ "IncludedIntoAcceptedBlock" :> "shard" @@ "IgnoredByShardchain" :> "queue" @@ "RejectedByShardchain" :> "rejected" @@ "IgnoredByMasterchain" :> "queue"
\* the positions from which the validator may report each kind
VFrom == "PutIntoQueue" :> {"collator", "duplicate", "none", "queue", "shard"} @@ "IgnoredByQueue" :> {"collator", "duplicate", "none", "queue", "shard"} @@ "Duplicate" :> {"collator", "duplicate", "queue", "shard"} @@ "Timeout" :> {"collator", "duplicate", "queue", "shard"} @@ "IncludedIntoBlock" :> {"duplicate", "queue"} @@ "IgnoredByCollator" :> {"collator", "duplicate", "queue"} @@ "RejectedByCollator" :> {"duplicate", "queue"} @@ "IncludedIntoAcceptedBlock" :> {"collator", "duplicate", "queue"} @@ "IgnoredByShardchain" :> {"collator", "duplicate"} @@ "RejectedByShardchain" :> {"collator", "duplicate"} @@ "IgnoredByMasterchain" :> {"duplicate", "shard"}

FnPositions == {"none", "sent", "rejected", "finalized"}
FnFinal == {"finalized", "rejected"}
FnKinds == {"SentToValidators", "RejectedByFullnode", "Finalized"}
\* the position a fullnode is at after reporting each kind
FnTo == "SentToValidators" :> "sent" @@ "RejectedByFullnode" :> "rejected" @@ "Finalized" :> "finalized"
\* the positions from which the fullnode may report each kind
FnFrom == "SentToValidators" :> {"none"} @@ "RejectedByFullnode" :> {"none"} @@ "Finalized" :> {"finalized", "sent"}

FanoutMin(N) == (N * 1) \div 3 + 1
StopCollationRejected(N) == (N * 2 + 2) \div 3
FaultyMax(N) == ((N - 1) * 1) \div 3

\* received while master catchain session N is in action: obsolete at session N+2
ObsoleteAfterSessions == 2

====
