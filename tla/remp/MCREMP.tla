------------------------------- MODULE MCREMP -------------------------------
(* Model values and bounds for checking REMP with TLC; the configurations   *)
(* MCREMP.cfg (small, exhaustive in CI) and MCREMP_deep.cfg (scheduled)     *)
(* say what each bound means.                                               *)
EXTENDS REMP

CONSTANTS v1, v2, v3, v4, v5, m1, m2

\* Sessions 0..MaxSession with the same two validators (N = 2).
MCMembersTwo == [s \in 0..MaxSession |-> {v1, v2}]
\* One validator per session, a different one after each switch (N = 1): every pending message
\* must be handed over.
MCMembersAlternating == [s \in 0..MaxSession |-> IF s % 2 = 0 THEN {v1} ELSE {v2}]
\* Sessions 0..MaxSession with the same four validators (N = 4, FaultyMax(4) = 1).
MCMembersSame == [s \in 0..MaxSession |-> {v1, v2, v3, v4}]
\* The set changes at each switch: four of five validators serve in each session.
MCMembersRotating == [s \in 0..MaxSession |-> IF s % 2 = 0 THEN {v1, v2, v3, v4} ELSE {v2, v3, v4, v5}]

CONSTANT MaxBlocks
\* State constraint: at most MaxBlocks candidates are made (each ignore or reject can make the
\* collator try again; without a bound the state space is infinite).
BlocksBound == Len(blocks) <= MaxBlocks

MCSymmetry == Permutations(Honest)
=============================================================================
