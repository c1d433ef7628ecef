"""Agreement between the TLA+ model of REMP (``tla/remp``) and the Python reference machines.

Both directions go through one harness (:mod:`.harness`) that drives the reference machines with
the model's steps and reads back their statuses:

- model -> reference (:mod:`.replay`): behaviours TLC generates are replayed step by step; every
  validator's and the full node's status must equal the model's after every step;
- reference -> model (:mod:`.tracecheck`): steps chosen at random against the reference machines
  (:mod:`.explore`), with the statuses they produced, are written as a TLA+ module and TLC checks
  that the model admits the whole trace.

Both run in each profile (the model takes the profile's tables and choices as constants), and
:mod:`.promises` links the step model to the adversarial one: REMP.tla's promises are evaluated on
the step model's behaviours through a refinement mapping.
"""
