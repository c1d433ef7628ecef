"""REMPSteps against REMP.tla's promises: the two models linked by a refinement mapping.

Why: the agreement ties the reference machines to ``REMPSteps.tla``; the theorems about what users
are promised are ``REMP.tla``'s, checked there against a Byzantine adversary. This check closes the
link on the side both models share: TLC draws random behaviours of REMPSteps (the documents'
profile) and evaluates, in every state, REMP.tla's own definitions of the promises through an
``INSTANCE`` of REMP.tla whose shard chain, message origins, submitted set and full-node statuses
are REMPSteps' (the mapping below). The promises are not restated here: a change of their text in
REMP.tla is what gets checked.

The mapping: ``chain`` is the shard blocks the masterchain has not ignored, in the order the shard
chain accepted them (a candidate is accepted at the chain's height, so its ``h`` orders them; ties,
which only a mutated model makes, by creation);
``origin`` is the session in which the full node sent the message (``sub``); ``passed`` the
messages the full node sent (its status is ``sent`` or ``finalized``: the documents' table); the
full node's statuses are the same variable. REMP.tla's other variables (its validators' coarse
statuses, the adversary's knowledge, candidates and hand-overs) have no counterpart that its
promises of this check read, and are given their initial values.

Checked: ``NoReplay``, ``NoInclusionAfterObsolete``, ``FinalizedWasSubmittedAndAccepted`` (REMP.tla's
``ChainHoldsOnlySubmitted`` and ``FinalizedIsInChain``; the latter is ``Finalize``'s guard in REMP.tla,
so only here, on REMPSteps' own full node, is it a theorem). Not
checked, and why: ``FinalSticky`` and ``RejectsStopCollation`` read REMP.tla's per-validator
statuses, which coarsen receipts and have no masterchain fate (in REMPSteps a block the
masterchain ignores sends its messages back to the queue, an "accepted" that REMP.tla keeps);
``OneIdPerUid`` needs uids, which REMPSteps has not.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from rmkit.tlc import run_tlc
from rmkit.tlc.result import ERROR, VIOLATION

from . import modules, replay
from .harness import Scenario

PROMISES = ("NoReplay", "NoInclusionAfterObsolete", "FinalizedWasSubmittedAndAccepted")


def definitions() -> str:
    """The mapping of REMPSteps' variables onto REMP.tla's, and REMP.tla's promises through it
    (definitions for a module that EXTENDS REMPSteps)."""
    return f"""\\* REMP.tla's promises, evaluated on REMPSteps through a refinement mapping
InChain == {{b \\in 1..Len(blocks) : blocks[b].shard /\\ blocks[b].st # "mcignored"}}
Chain == [i \\in 1..Cardinality(InChain) |->
            LET Before(c, b) == blocks[c].h < blocks[b].h \\/ (blocks[c].h = blocks[b].h /\\ c < b)
                b == CHOOSE b \\in InChain : Cardinality({{c \\in InChain : Before(c, b)}}) = i - 1
            IN [msgs |-> blocks[b].msgs, ses |-> blocks[b].ses]]
Passed == {{m \\in Msgs : fn[m] \\in {{FnTo["SentToValidators"], FnTo["Finalized"]}}}}
R == INSTANCE REMP WITH chain <- Chain, origin <- sub, passed <- Passed, Fanout <- MinFanout,
       byz <- {{}}, st <- [w \\in Honest |-> [m \\in Msgs |-> "none"]], rej <- [w \\in Honest |-> [m \\in Msgs |-> {{}}]],
       arr <- [w \\in Honest |-> [m \\in Msgs |-> 0]], tip <- [w \\in Honest |-> 0], ses <- [w \\in Honest |-> 0],
       handed <- [w \\in Honest |-> {{}}], cands <- << >>, sigs <- [w \\in Honest |-> {{}}],
       ValidateAgainstCache <- TRUE, CacheOnReceive <- TRUE, Digests <- TRUE, Rebroadcast <- TRUE,
       SignedRecords <- TRUE, LifetimeFromMessage <- TRUE, BodiesSigned <- TRUE
{chr(10).join(f"{p} == R!{p}" for p in PROMISES)}
"""


def draw_checked(sc: Scenario, *, traces: int, depth: int, seed: int, timeout: float = 300) -> tuple[list, list]:
    """Random behaviours of REMPSteps (the documents' profile) with REMP.tla's promises checked in
    every state: ``(behaviours, broken)``, ``broken`` the counterexamples of a promise."""
    found = replay.draw(sc, traces=traces, depth=depth, seed=seed, timeout=timeout, extra=definitions(),
                        invariants=PROMISES)
    return [c.trace for c in found if c.name not in PROMISES], [c for c in found if c.name in PROMISES]


@dataclass
class Broken:
    """A promise a mutated REMPSteps broke: its name and the behaviour (TLC's states)."""

    name: str
    trace: list


def check_mutant(sc: Scenario, patch: dict, *, depth: int, seconds: float, seed: int) -> Broken | None:
    """REMPSteps with each text of ``patch`` replaced by its value (a mechanism removed): random
    behaviours for up to ``seconds``, stopping at the first broken promise. None: none broken."""
    text = (modules.model_dir() / "REMPSteps.tla").read_text()
    for old, new in patch.items():
        if text.count(old) != 1:
            raise ValueError(f"REMPSteps.tla: expected the text {old!r} once, found it {text.count(old)} times")
        text = text.replace(old, new)
    module = f"---- MODULE REMPPromises ----\nEXTENDS REMPSteps\nCONSTANTS {', '.join(sorted(modules.scenario_names(sc)))}\n" \
             f"PromiseMembers == {modules.members_value(sc)}\n{definitions()}====\n"
    cfg = (modules.constants(sc, "PromiseMembers", "spec") + "SPECIFICATION Spec\n"
           + "".join(f"INVARIANT {p}\n" for p in PROMISES))
    with tempfile.TemporaryDirectory(prefix="rmkit-promises-") as tmp:
        folder = Path(tmp)
        modules.write(folder, "REMPPromises", module, cfg)
        (folder / "REMPSteps.tla").write_text(text)
        r = run_tlc(folder, "REMPPromises", "REMPPromises.cfg", simulate_depth=depth, seed=seed,
                    deadlock_check=False, timeout=seconds)
    if r.verdict == ERROR:
        raise replay.SimulationFailed(r.error.message if r.error else "TLC error")
    return Broken(r.name, r.trace) if r.verdict == VIOLATION else None
