---------------------------- MODULE MCREMPBudget ----------------------------
(* MCREMP with a budget of faulty steps, for the configurations that bound  *)
(* the adversary's activity instead of the length of behaviours. A faulty   *)
(* step is one that reaches an honest validator or the shard chain: a       *)
(* record told to an honest validator (ByzTell) or a candidate block       *)
(* proposed (ByzPropose). A faulty validator taking a copy from the full    *)
(* node (ByzReceive) reaches nobody and is not counted.                     *)
(*                                                                         *)
(* What MaxFaultySteps leaves out: every step after the                   *)
(* (MaxFaultySteps + 1)-th faulty step. TLC still checks the invariants in  *)
(* the state that step reaches (a constraint stops exploration, not         *)
(* checking), so an attack of MaxFaultySteps + 1 steps whose last step     *)
(* breaks an invariant is found. Every kind of faulty step stays in, at     *)
(* every point of a behaviour: only their number is bounded.                *)
(*                                                                         *)
(* The count is part of the view: two states that differ only in it are    *)
(* told apart, since the one with budget left has more behaviours ahead.    *)
(*                                                                         *)
(* Crashes of honest validators (Restart in REMP.tla) are bounded the same *)
(* way, by a count of their own: a configuration that lets them happen     *)
(* replaces RestartPossible <- MCRestartPossible; at most MaxRestarts.     *)
EXTENDS MCREMP

CONSTANTS MaxFaultySteps, MaxRestarts
VARIABLES faulty,   \* faulty steps taken so far
          crashes   \* honest restarts so far

FaultySteps == {"ByzTell", "ByzPropose"}

BudgetInit == Init /\ faulty = 0 /\ crashes = 0
BudgetNext == /\ Next
              /\ faulty' = IF last'.a \in FaultySteps THEN faulty + 1 ELSE faulty
              /\ crashes' = IF last'.a = "Restart" THEN crashes + 1 ELSE crashes
BudgetSpec == BudgetInit /\ [][BudgetNext]_<<vars, faulty, crashes>>
budgetView == <<view, faulty, crashes>>
BudgetBounds == Bounds /\ faulty <= MaxFaultySteps
MCRestartPossible(w) == crashes < MaxRestarts

\* A witness (tla/manifest.json): after a restart, a copy of a message in the chain reaches an honest
\* validator whose cache holds it as accepted (the replay the persisted cache answers). A restart
\* of a validator with nothing but final statuses loses nothing and is not a step, so with one
\* message the restart comes before the acceptance and the copy after it.
NoAcceptedCopyAfterRestart ==
    ~(crashes > 0 /\ \E c \in net : c[1] \in ChainMsgs /\ c[2] \in Honest /\ st[c[2]][c[1]] = "accepted")
=============================================================================
