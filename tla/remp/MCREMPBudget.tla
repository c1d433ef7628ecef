---------------------------- MODULE MCREMPBudget ----------------------------
(* MCREMP with a budget of faulty steps, for the configurations that bound  *)
(* the adversary's activity instead of the length of behaviours. A faulty   *)
(* step is one that reaches an honest validator or the shard chain: a       *)
(* record told to an honest validator (ByzTell) or a block proposed and     *)
(* accepted (ByzPropose). A faulty validator taking a copy from the full    *)
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
EXTENDS MCREMP

CONSTANT MaxFaultySteps
VARIABLE faulty   \* faulty steps taken so far

FaultySteps == {"ByzTell", "ByzPropose"}

BudgetInit == Init /\ faulty = 0
BudgetNext == Next /\ faulty' = IF last'.a \in FaultySteps THEN faulty + 1 ELSE faulty
BudgetSpec == BudgetInit /\ [][BudgetNext]_<<vars, faulty>>
budgetView == <<view, faulty>>
BudgetBounds == Bounds /\ faulty <= MaxFaultySteps
=============================================================================
