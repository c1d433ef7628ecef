"""The REMP rules as DataFrame operations, taken from the compiled spec (``model_for(profile)``).

Shape of the job: every receipt row is shuffled ONCE, by message id; inside a partition, window
functions ordered by log position replay what the streaming checker does per message:

* a message id's *lives*: a new life starts at a SentToValidators/PutIntoQueue more than the
  profile's expiry bound after the life's first timed receipt (two boundaries are followed, i.e.
  up to three lives per id);
* redelivered receipts (same text within a life) are dropped;
* per source, its position before each receipt is the ``to`` of its previous receipt that had a
  transition (the transition table of ``spec/remp/transitions.yaml`` as a SQL map), which gives
  REMP-SEQ-001 / SRC-001 / SRC-002;
* per life, running ``first``/``min`` aggregates give the first Finalized, the first inclusion of
  each block, the first PutIntoQueue time, which give the replay, FIN and EXPIRY rules;
* two aggregations on the same partitioning (per source, then per life) give the outcome (the
  ordered rules of ``outcomes.yaml`` as a SQL CASE), REMP-OUTCOME-*, FIN-002, FN-001, LIVE-001.

Only what is global to the log is computed before the shuffle, as small aggregates over the
parsed rows: the role each source first showed (kinds a single role issues), and the log's final
clock. No Python function runs per row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rmkit.conformance.remp.model import FULLNODE, VALIDATOR, RempModel
from rmkit.rules import OFF

INCLUSION_KINDS = ("IncludedIntoBlock", "IncludedIntoAcceptedBlock")
START_KINDS = ("SentToValidators", "PutIntoQueue")
REJECT_POSITIONS = ("rejected", "timed_out")
POS = ("fidx", "blk", "rid")


@dataclass
class Limits:
    """The time bounds of a run, in ms, as ``rmkit check`` derives them."""

    lifetime_s: float
    horizon_s: float
    expiry_ms: int
    horizon_ms: int
    clock_jump_ms: int

    @classmethod
    def of(cls, model: RempModel, lifetime_s: float | None, horizon_s: float | None) -> "Limits":
        lt = lifetime_s if lifetime_s is not None else model.default_lifetime_s
        hz = horizon_s if horizon_s is not None else model.default_horizon_s(lt)
        return cls(lt, hz, model.expiry_bound_ms(lt), int(hz * 1000), int(hz * 1000))


def java_pattern(p: str) -> str:
    """A spec pattern for Java's regex engine with Python's fullmatch meaning ($ at the very end)."""
    return p[:-1] + r"\z" if p.endswith("$") and not p.endswith(r"\$") else p


def _lit_map(d: dict) -> Column:
    args = []
    for k, v in d.items():
        args += [F.lit(k), v if isinstance(v, Column) else F.lit(v)]
    return F.create_map(*args) if args else F.create_map()


def _arr(values) -> Column:
    return F.array(*[F.lit(v) for v in values]) if values else F.array().cast("array<string>")


def pos() -> Column:
    return F.struct(*[F.col(c) for c in POS])


def ev(p: Column, kind: Column, src: Column) -> Column:
    """One evidence entry: a receipt's position, kind and source."""
    return F.struct(p.fidx.alias("fidx"), p.blk.alias("blk"), p.rid.alias("rid"), kind.cast("string").alias("kind"),
                    src.cast("string").alias("source_id"))


def no_ev() -> Column:
    return F.array().cast("array<struct<fidx:int,blk:bigint,rid:bigint,kind:string,source_id:string>>")


class RempRules:
    """Column expressions for one profile; everything protocol-specific comes from the model."""

    def __init__(self, model: RempModel, limits: Limits):
        self.m = m = model
        self.lim = limits
        self.profile = m.profile
        self.modes = {r.id: r.mode(m.profile) for r in m.rules}
        fmts = m.spec["formats"]["formats"]
        common = m.spec["kinds"]["common_fields"]
        self.hash_re = java_pattern(fmts[common["message_id"]["format"]][m.profile]["pattern"])
        self.sig_re = java_pattern(fmts[common["signature"]["format"]][m.profile]["pattern"])
        self.fold = m.ids_fold_case

    def on(self, rule: str) -> bool:
        return self.modes[rule] != OFF

    # -- per-kind facts as SQL maps ---------------------------------------------------------
    def kind_bit(self, kind: Column) -> Column:
        return _lit_map({k: ki.bit for k, ki in self.m.kinds.items()})[kind]

    def single_issuer(self, kind: Column) -> Column:
        return _lit_map({k: next(iter(ki.issuers)) for k, ki in self.m.kinds.items() if len(ki.issuers) == 1})[kind]

    def issuers(self, kind: Column) -> Column:
        return _lit_map({k: _arr(sorted(ki.issuers)) for k, ki in self.m.kinds.items()})[kind]

    def in_table(self, kind: Column) -> Column:
        return _lit_map({k: ki.in_table for k, ki in self.m.kinds.items()})[kind]

    def transition(self, kind: Column, role: Column) -> Column:
        """struct(to, allowed positions) of the spec's transition table, or null."""
        entries = {}
        for k, ki in self.m.kinds.items():
            for role_name, (to, allowed) in ki.transitions.items():
                entries[f"{k}|{role_name}"] = F.struct(F.lit(to).alias("to"), _arr(sorted(allowed)).alias("allowed"))
        return _lit_map(entries)[F.concat_ws("|", kind, role)]

    def final_positions(self, role: Column) -> Column:
        return _lit_map({r: _arr(sorted(mach.final)) for r, mach in self.m.roles.items()})[role]

    def field_problems(self) -> Column:
        """The spec's per-kind field checks (required, integer type and minimum, pattern) as an
        array of messages, the wording of ``rmkit check``."""
        branches = None
        for name, ki in self.m.kinds.items():
            probs = []
            for fc in ki.fields:
                v = F.col(fc.name)
                fmt = fc.fmt or {}
                wrong = f"{fc.name}: expected {fc.expected}, found "
                if fmt.get("type") == "integer":
                    bad = F.col(fc.name + "_bad")
                    lo = fmt.get("minimum")
                    cond_bad = bad | ((v < F.lit(int(lo))) if lo is not None else F.lit(False))
                    probs.append(F.when(v.isNull() & ~bad, F.lit(f"{fc.name}: required for {name}, missing") if fc.required else None)
                                 .when(cond_bad, F.concat(F.lit(wrong), F.coalesce(v.cast("string"), F.lit("a value of another type")))))
                else:
                    pat = fmt.get("pattern")
                    fail = ~v.rlike(java_pattern(pat)) if pat else F.lit(False)
                    probs.append(F.when(v.isNull(), F.lit(f"{fc.name}: required for {name}, missing") if fc.required else None)
                                 .when(fail, F.concat(F.lit(wrong), F.lit("'"), v, F.lit("'"))))
            arr = F.array_compact(F.array(*probs)) if probs else F.array().cast("array<string>")
            branches = (F.when(F.col("kind") == name, arr) if branches is None else branches.when(F.col("kind") == name, arr))
        return branches.otherwise(F.array().cast("array<string>"))

    # -- stage 1: per-row columns that need no other row --------------------------------------
    def prepare(self, receipts: DataFrame) -> DataFrame:
        low = F.lower if self.fold else (lambda c: c)
        df = receipts
        ts = F.col("timestamp")
        ts_ok = ts.isNotNull() & ~F.col("timestamp_bad") & (ts >= 0)
        df = df.withColumn("ts_ok", ts_ok)
        df = df.withColumn("t", F.when(ts_ok & (ts != 0), ts).otherwise(F.col("kts")))
        src_bad = F.when(F.col("source_id").isNull(), F.lit(f"source_id: expected {self.m.hash_expected}, found nothing")) \
            .when(~F.col("source_id").rlike(self.hash_re), F.concat(F.lit(f"source_id: expected {self.m.hash_expected}, found '"), F.col("source_id"), F.lit("'")))
        ts_bad = F.when(~ts_ok, F.concat(F.lit("timestamp: expected an integer >= 0 (unix ms), found "),
                                          F.coalesce(ts.cast("string"), F.when(F.col("timestamp_bad"), F.lit("a value of another type")), F.lit("nothing"))))
        df = df.withColumn("bad", F.array_compact(F.array(src_bad, ts_bad)))
        df = df.withColumn("bad", F.when(self.kind_bit(F.col("kind")).isNotNull(), F.concat(F.col("bad"), self.field_problems())).otherwise(F.col("bad")))
        df = df.withColumn("mid", low(F.col("message_id"))).withColumn("src", low(F.col("source_id")))
        df = df.withColumn("block", low(F.col("block_id")))
        df = df.withColumn("kbit", self.kind_bit(F.col("kind")))
        df = df.withColumn("single_role", self.single_issuer(F.col("kind")))
        df = df.withColumn("key", F.coalesce(F.col("src"), F.col("message_id")))
        return df

    # -- global facts (small aggregates before the shuffle) --------------------------------------
    def first_roles(self, prepared: DataFrame) -> DataFrame:
        """src -> (role, position) of the first receipt of a kind only one role issues: the role
        the streaming checker infers for the source from then on."""
        r = prepared.where(F.col("mid").isNotNull() & F.col("src").isNotNull() & F.col("single_role").isNotNull())
        first = F.min(F.struct(pos().alias("p"), F.col("single_role").alias("role"), F.col("kind").alias("k"), F.col("mid").alias("m")))
        return r.groupBy("src").agg(first.alias("fr")).select(
            "src", F.col("fr.role").alias("known_role"), F.col("fr.p").alias("known_pos"))

    # -- stage 2: per message, in log order ------------------------------------------------------
    def per_life(self, prepared: DataFrame, roles: DataFrame, partitions: int | None, hwm_end: int | None) -> DataFrame:
        m, lim = self.m, self.lim
        E = lim.expiry_ms
        df = prepared.where(F.col("mid").isNotNull()).join(F.broadcast(roles), "src", "left")
        df = df.repartition(partitions, "mid") if partitions else df.repartition("mid")
        P = pos()
        df = df.withColumn("P", P)
        wm = Window.partitionBy("mid").orderBy(*POS)
        wall = Window.partitionBy("mid")
        start = F.col("kind").isin(*START_KINDS) & F.col("t").isNotNull()
        # lives: a start kind beyond the expiry bound after the life's first timed receipt
        df = df.withColumn("ft0", F.first("t", ignorenulls=True).over(wm.rowsBetween(Window.unboundedPreceding, -1)))
        df = df.withColumn("b1", F.min(F.when(start & (F.col("t") - F.col("ft0") > E), F.struct(F.col("P").alias("p"), F.col("t").alias("t")))).over(wall))
        c2 = start & (F.col("P") > F.col("b1.p")) & (F.col("t") - F.col("b1.t") > E)
        df = df.withColumn("b2", F.min(F.when(c2, F.col("P"))).over(wall))
        df = df.withColumn("life", (F.coalesce(F.col("P") >= F.col("b1.p"), F.lit(False)).cast("int")
                                    + F.coalesce(F.col("P") >= F.col("b2"), F.lit(False)).cast("int")))
        wl = Window.partitionBy("mid", "life").orderBy(*POS)
        before = wl.rowsBetween(Window.unboundedPreceding, -1)
        upto = wl.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        df = df.withColumn("dup", F.row_number().over(Window.partitionBy("mid", "life", "h").orderBy(*POS)) > 1)
        df = df.withColumn("life_first", F.row_number().over(wl) == 1)
        df = df.withColumn("first_t", F.first("t", ignorenulls=True).over(upto))
        df = df.withColumn("known", F.col("kbit").isNotNull())
        df = df.withColumn("kr", ~F.col("dup") & F.col("known"))
        issuers = self.issuers(F.col("kind"))
        known_before = F.col("known_pos").isNotNull() & (F.col("known_pos") < F.col("P"))
        df = df.withColumn("role_conflict", F.col("kr") & F.col("src").isNotNull() & known_before
                           & ~F.array_contains(issuers, F.col("known_role")))
        role = (F.when(F.col("src").isNull(), F.lit(None))
                .when(known_before, F.when(F.array_contains(issuers, F.col("known_role")), F.col("known_role")))
                .when(F.col("single_role").isNotNull(), F.col("single_role"))
                .otherwise(F.lit(VALIDATOR)))
        df = df.withColumn("role", F.when(F.col("kr"), role))
        df = df.withColumn("tr_", self.transition(F.col("kind"), F.col("role")))
        df = df.withColumn("tr", F.col("kr") & F.col("src").isNotNull() & F.col("tr_").isNotNull())
        ws = Window.partitionBy("mid", "life", "src").orderBy(*POS).rowsBetween(Window.unboundedPreceding, -1)
        df = df.withColumn("prev", F.last(F.when(F.col("tr"), F.struct(F.col("tr_.to").alias("to"), F.col("P").alias("p"), F.col("kind").alias("k"))),
                                          ignorenulls=True).over(ws))
        df = df.withColumn("pos_before", F.coalesce(F.col("prev.to"), F.lit("none")))
        finr = F.col("kr") & (F.col("kind") == "Finalized") & F.col("block").isNotNull()
        incl = F.col("kr") & F.col("kind").isin(*INCLUSION_KINDS) & F.col("block").isNotNull()
        df = df.withColumn("finr", finr).withColumn("incl", incl)
        df = df.withColumn("fin_before", F.first(F.when(F.col("finr"), F.struct(F.col("block").alias("b"), F.col("P").alias("p"), F.col("t").alias("t"), F.col("src").alias("s"))),
                                                 ignorenulls=True).over(before))
        df = df.withColumn("put_before", F.first(F.when(F.col("kr") & (F.col("kind") == "PutIntoQueue") & (F.col("t") != 0), F.col("t")), ignorenulls=True).over(before))
        df = df.withColumn("incl_first", F.col("incl") & (F.row_number().over(Window.partitionBy("mid", "life", "incl", "block").orderBy(*POS)) == 1))
        df = df.withColumn("viols", self.row_violations())
        return self.lives(df, hwm_end)

    def row_violations(self) -> Column:
        """Every violation a receipt row causes, as an array of (rule, explanation, evidence)."""
        m, lim, on = self.m, self.lim, self.on
        me = ev(F.col("P"), F.col("kind"), F.col("src"))
        out = []

        def add(rule, cond, text, evid):
            if on(rule):
                out.append(F.when(cond, F.struct(F.lit(rule).alias("rule"), text.alias("explanation"), evid.alias("evidence"))))

        eff = ~F.col("dup")
        kind_txt = F.coalesce(F.col("kind"), F.lit("receipt"))
        mid_bad = F.col("life_first") & ~F.col("message_id").rlike(self.hash_re)
        bad = F.when(mid_bad, F.concat(F.col("bad"), F.array(F.concat(F.lit(f"message_id: expected {m.hash_expected}, found '"), F.col("message_id"), F.lit("'"))))).otherwise(F.col("bad"))
        add("REMP-SCHEMA-001", eff & (F.size(bad) > 0), F.concat(kind_txt, F.lit(": "), F.array_join(bad, "; ")), F.array(me))
        add("REMP-KIND-001", eff & ~F.col("known"), F.concat(F.lit("unknown kind "), F.coalesce(F.col("kind"), F.lit("(none)"))), F.array(me))
        kr = F.col("kr")
        add("REMP-KIND-002", kr & ~self.in_table(F.col("kind")), F.concat(F.col("kind"), F.lit(f" is not in the {self.profile} profile's status table")), F.array(me))
        add("REMP-ROLE-001", F.col("role_conflict"),
            F.concat(F.col("kind"), F.lit(" may be issued by "), F.array_join(self.issuers(F.col("kind")), " or "), F.lit(", but "), F.col("src"),
                     F.lit(" acted as a "), F.col("known_role"), F.lit(" before")),
            F.array(ev(F.col("known_pos"), F.lit(None), F.col("src")), me))
        issuers = self.issuers(F.col("kind"))
        has_src = kr & F.col("src").isNotNull()
        zero = _arr(sorted(m.zero_time_roles))
        zero_ok = F.when(F.col("role").isNotNull(), F.array_contains(zero, F.col("role"))).otherwise(F.arrays_overlap(issuers, zero))
        add("REMP-TIME-001", has_src & F.col("ts_ok") & (F.col("timestamp") == 0) & ~zero_ok,
            F.concat(F.col("kind"), F.lit(" from "), F.coalesce(F.col("role"), F.lit("None")), F.lit(" "), F.col("src"), F.lit(" has timestamp 0")), F.array(me))
        unsigned = _arr(sorted(m.unsigned_roles))
        unsigned_ok = F.when(F.col("role").isNotNull(), F.array_contains(unsigned, F.col("role"))).otherwise(F.arrays_overlap(issuers, unsigned))
        sig = F.col("signature")
        no_sig = sig.isNull() | (sig == "")
        add("REMP-SIG-001", has_src & ((no_sig & F.lit(bool(m.signature_required)) & ~unsigned_ok) | (~no_sig & ~sig.rlike(self.sig_re))),
            F.when(no_sig, F.concat(F.col("kind"), F.lit(" from "), F.col("src"), F.lit(" carries no signature")))
            .otherwise(F.concat(F.lit(f"signature: expected {m.signature_expected}, found '"), F.substring(sig, 1, 40), F.lit("'"))), F.array(me))
        # per-source transitions
        tr = F.col("tr")
        allowed = F.array_contains(F.col("tr_.allowed"), F.col("pos_before"))
        final = F.array_contains(self.final_positions(F.col("role")), F.col("pos_before"))
        prev_ev = ev(F.col("prev.p"), F.col("prev.k"), F.col("src"))
        after = F.concat(F.col("kind"), F.lit(" from "), F.col("role"), F.lit(" "), F.col("src"))
        add("REMP-SRC-001", tr & ~allowed & final & (F.col("role") == VALIDATOR), F.concat(after, F.lit(" after its final "), F.col("prev.k")), F.array(prev_ev, me))
        add("REMP-SRC-002", tr & ~allowed & final & (F.col("role") == FULLNODE), F.concat(after, F.lit(" after its final "), F.col("prev.k")), F.array(prev_ev, me))
        add("REMP-SEQ-001", tr & ~allowed & ~final,
            F.concat(after, F.when(F.col("pos_before") == "none", F.lit(" as its first receipt")).otherwise(F.concat(F.lit(" after "), F.col("prev.k"))),
                     F.lit(f"; the {self.profile} profile allows it only in positions: "), F.array_join(F.col("tr_.allowed"), ", ")),
            F.when(F.col("pos_before") == "none", F.array(me)).otherwise(F.array(prev_ev, me)))
        # fan-out
        n, total = F.col("sent_to"), F.col("total_validators")
        sent = kr & (F.col("kind") == "SentToValidators") & n.isNotNull() & total.isNotNull() & (total > 0)
        frac, plus, minus_one, rounding = m.thresholds["fanout_min"]
        base = (total - 1 if minus_one else total) * F.lit(frac.numerator)
        need = (F.ceil(base / F.lit(frac.denominator)) if rounding == "ceil" else F.floor(base / F.lit(frac.denominator))).cast("long") + F.lit(plus)
        add("REMP-FANOUT-001", sent & (n > total), F.format_string("sent_to %d > total_validators %d", n, total), F.array(me))
        add("REMP-FANOUT-002", sent & (n <= total) & (n < need), F.format_string("sent to %d of %d validators; at least %d are needed", n, total, need), F.array(me))
        # replay, finality and expiry
        fb = F.col("fin_before")
        fin_ev = ev(fb.p, F.lit("Finalized"), fb.s)
        later = fb.t.isNull() | F.col("t").isNull() | (F.col("t") > fb.t)
        other = F.col("incl") & fb.isNotNull() & (F.col("block") != fb.b) & later
        add("REMP-REPLAY-001", other & (F.col("kind") == "IncludedIntoAcceptedBlock"),
            F.concat(F.col("kind"), F.lit(" into block "), F.substring(F.col("block"), 1, 16), F.lit("… after it was finalized in block "), F.substring(fb.b, 1, 16), F.lit("…")), F.array(fin_ev, me))
        add("REMP-REPLAY-003", other & (F.col("kind") == "IncludedIntoBlock"),
            F.concat(F.col("kind"), F.lit(" into block "), F.substring(F.col("block"), 1, 16), F.lit("… after it was finalized in block "), F.substring(fb.b, 1, 16), F.lit("…")), F.array(fin_ev, me))
        again = F.col("finr") & fb.isNotNull()
        add("REMP-REPLAY-002", again & (F.col("block") != fb.b),
            F.concat(F.lit("finalized in block "), F.substring(fb.b, 1, 16), F.lit("… and again in block "), F.substring(F.col("block"), 1, 16), F.lit("…")), F.array(fin_ev, me))
        add("REMP-FIN-001", again & (F.col("block") == fb.b), F.lit("Finalized reported again in the same block"), F.array(fin_ev, me))
        base_t = F.coalesce(F.col("put_before"), F.col("first_t"))
        add("REMP-EXPIRY-001", F.col("incl_first") & F.col("t").isNotNull() & base_t.isNotNull() & (F.col("t") - base_t > F.lit(self.lim.expiry_ms)),
            F.format_string(f"first included into block %s… %.1f s after a validator first received it; the {self.profile} profile keeps a message at most {self.lim.expiry_ms / 1000:.0f} s",
                            F.substring(F.col("block"), 1, 16), (F.col("t") - base_t) / 1000.0), F.array(me))
        return F.filter(F.array(*out), lambda x: x.isNotNull()) if out else F.array().cast(
            "array<struct<rule:string,explanation:string,evidence:array<struct<fidx:int,blk:bigint,rid:bigint,kind:string,source_id:string>>>>")

    # -- stage 3: per source, then per life (same partitioning: no further shuffle) ---------------
    def lives(self, df: DataFrame, hwm_end: int | None) -> DataFrame:
        m, lim = self.m, self.lim
        kinds = list(m.kinds)
        P = F.col("P")
        agg = [
            F.max(F.col("tr")).alias("has_st"),
            F.max(F.when(F.col("tr"), F.struct(P.alias("p"), F.col("tr_.to").alias("to"), F.col("kind").alias("k"), F.col("role").alias("role")))).alias("last"),
            F.max(F.col("tr") & ((F.col("kbit").bitwiseAND(F.lit(m.queued_mask))) != 0)).alias("queued"),
            F.bit_or(F.when(F.col("kr"), F.col("kbit"))).alias("kmask"),
            F.min(F.when(F.col("finr"), F.struct(P.alias("p"), F.col("block").alias("b"), F.col("t").alias("t"), F.col("src").alias("s")))).alias("fin"),
            F.min(F.when(F.col("kr") & (F.col("kind") == "RejectedByFullnode"), F.struct(P.alias("p"), F.col("src").alias("s")))).alias("fn_rej"),
            F.collect_set(F.when(F.col("kr") & (F.col("kind") == "IncludedIntoAcceptedBlock"), F.col("block"))).alias("acc"),
            F.min(F.when(F.col("kr") & (F.col("kind") == "SentToValidators") & F.col("t").isNotNull(), F.struct(P.alias("p"), F.col("t").alias("t")))).alias("sent"),
            F.min(F.when(F.col("kr") & (F.col("kind") == "PutIntoQueue") & (F.col("t") != 0), F.struct(P.alias("p"), F.col("t").alias("t")))).alias("put"),
            F.min(F.when(F.col("t").isNotNull(), F.struct(P.alias("p"), F.col("t").alias("t")))).alias("ft"),
            F.min(P).alias("first_p"),
            F.sum(F.col("dup").cast("int")).alias("dups"),
            F.flatten(F.collect_list(F.col("viols"))).alias("viols"),
            F.first("known_role", ignorenulls=True).alias("known_role"),
        ] + [F.sum((F.col("kr") & (F.col("kind") == k)).cast("int")).alias("n_" + k) for k in kinds]
        per_src = df.groupBy("mid", "life", "src").agg(*agg)
        role_of = F.coalesce(F.col("known_role"), F.col("last.role"))
        per_src = per_src.withColumn("role_of", F.when(F.col("src").isNotNull(), role_of))
        is_q = F.col("src").isNotNull() & F.col("queued") & (F.col("role_of") == VALIDATOR)
        last_ev = ev(F.col("last.p"), F.col("last.k"), F.col("src"))
        pos_sets = {}
        for _, _, when in m.outcomes:
            for key in ("queued_all_in", "queued_fraction_in"):
                if key in when:
                    ps = tuple(sorted(when[key] if key == "queued_all_in" else when[key]["positions"]))
                    pos_sets.setdefault(ps, f"nq_{len(pos_sets)}")
        rej = tuple(sorted(REJECT_POSITIONS))
        if rej not in pos_sets:
            pos_sets[rej] = f"nq_{len(pos_sets)}"
        lagg = [
            F.sum(is_q.cast("int")).alias("nq"),
            *[F.sum((is_q & F.col("last.to").isin(*ps)).cast("int")).alias(name) for ps, name in pos_sets.items()],
            F.sum((F.col("src").isNotNull() & F.col("has_st") & (F.col("role_of") == VALIDATOR)).cast("int")).alias("nvals"),
            F.slice(F.array_sort(F.collect_list(F.when(is_q, last_ev))), 1, 20).alias("q_ev"),
            F.slice(F.array_sort(F.collect_list(F.when(F.col("src").isNotNull() & F.col("has_st") & (F.col("role_of") == VALIDATOR), last_ev))), 1, 5).alias("val_ev"),
            F.slice(F.array_sort(F.collect_list(F.when(F.col("has_st") & F.col("src").isNotNull(), last_ev))), 1, 6).alias("last_ev"),
            F.bit_or("kmask").alias("kmask"), F.min("fin").alias("fin"), F.min("fn_rej").alias("fn_rej"),
            F.array_distinct(F.flatten(F.collect_list("acc"))).alias("acc"),
            F.min("sent").alias("sent"), F.min("put").alias("put"), F.min("ft").alias("ft"), F.min("first_p").alias("first_p"),
            F.sum("dups").alias("dups"), F.flatten(F.collect_list("viols")).alias("viols"),
        ] + [F.sum("n_" + k).alias("n_" + k) for k in kinds]
        life = per_src.groupBy("mid", "life").agg(*lagg)
        life = life.withColumn("is_last", F.col("life") == F.max("life").over(Window.partitionBy("mid")))
        # the outcome: the spec's ordered rules, first that holds
        outcome, final = None, None
        for name, fin_flag, when in m.outcomes:
            conds = []
            if "any_kind" in when:
                conds.append((F.coalesce(F.col("kmask"), F.lit(0)).bitwiseAND(F.lit(when["any_mask"]))) != 0)
            if "queued_all_in" in when:
                col = pos_sets[tuple(sorted(when["queued_all_in"]))]
                conds.append((F.col("nq") > 0) & (F.col(col) == F.col("nq")))
            if "queued_fraction_in" in when:
                q = when["queued_fraction_in"]
                col = pos_sets[tuple(sorted(q["positions"]))]
                frac = q["at_least"]
                conds.append((F.col("nq") > 0) & (F.col(col) * F.lit(frac.denominator) >= F.col("nq") * F.lit(frac.numerator)))
            cond = F.lit(True)
            for c in conds:
                cond = cond & c
            outcome = F.when(cond, F.lit(name)) if outcome is None else outcome.when(cond, F.lit(name))
            final = F.when(cond, F.lit(fin_flag)) if final is None else final.when(cond, F.lit(fin_flag))
        life = life.withColumn("outcome", outcome.otherwise(F.lit("pending"))).withColumn("final", final.otherwise(F.lit(False)))
        first_t = F.col("ft.t")
        hwm = F.lit(hwm_end).cast("long")
        not_judged = ~F.col("final") & (first_t.isNull() | hwm.isNull() | (F.col("is_last") & (hwm - first_t < F.lit(lim.horizon_ms))))
        life = life.withColumn("not_judged", not_judged).withColumn("lost", ~F.col("final") & ~not_judged)
        life = life.withColumn("viols", F.concat(F.col("viols"), self.life_violations()))
        life = life.withColumn("queue_ack_ms", F.col("put.t") - F.col("sent.t"))
        life = life.withColumn("finalized_ms", F.when(F.col("fin").isNotNull(), F.col("fin.t") - F.col("sent.t")))
        return life

    def life_violations(self) -> Column:
        on = self.on
        out = []

        def add(rule, cond, text, evid):
            if on(rule):
                out.append(F.when(cond, F.struct(F.lit(rule).alias("rule"), text.alias("explanation"), evid.alias("evidence"))))

        fin = F.col("fin")
        fin_ev = ev(fin.p, F.lit("Finalized"), fin.s)
        rej_col = None
        has_fin = fin.isNotNull()
        rej = tuple(sorted(REJECT_POSITIONS))
        # the column counting queued validators in a reject/timeout position
        for c in self._rej_cols():
            rej_col = c
        add("REMP-OUTCOME-001", has_fin & (F.col("nq") > 0) & (F.col(rej_col) == F.col("nq")),
            F.format_string("finalized, yet all %d validators that queued it ended in a reject or timeout", F.col("nq")),
            F.concat(F.array(fin_ev), F.col("q_ev")))
        fn = F.col("fn_rej")
        fn_ev = ev(fn.p, F.lit("RejectedByFullnode"), fn.s)
        add("REMP-OUTCOME-002", has_fin & fn.isNotNull(), F.lit("finalized after the full node rejected it"), F.array(fn_ev, fin_ev))
        add("REMP-FIN-002", has_fin & ~F.array_contains(F.col("acc"), fin.b),
            F.concat(F.lit("Finalized names shard block "), F.substring(fin.b, 1, 16), F.lit("…, which no validator reported as IncludedIntoAcceptedBlock")), F.array(fin_ev))
        add("REMP-FN-001", fn.isNotNull() & (F.col("nvals") > 0),
            F.format_string("rejected by the full node, yet %d validator(s) reported on it", F.col("nvals")), F.concat(F.array(fn_ev), F.col("val_ev")))
        first_ev = ev(F.col("first_p"), F.lit(None), F.lit(None))
        add("REMP-LIVE-001", F.col("lost"),
            F.concat(F.lit(f"no final outcome {self.lim.horizon_s:.0f} s after its first receipt (last known: "), F.col("outcome"), F.lit(")")),
            F.concat(F.array(first_ev), F.col("last_ev")))
        return F.filter(F.array(*out), lambda x: x.isNotNull()) if out else F.array().cast(
            "array<struct<rule:string,explanation:string,evidence:array<struct<fidx:int,blk:bigint,rid:bigint,kind:string,source_id:string>>>>")

    def _rej_cols(self):
        names = {}
        for _, _, when in self.m.outcomes:
            for key in ("queued_all_in", "queued_fraction_in"):
                if key in when:
                    ps = tuple(sorted(when[key] if key == "queued_all_in" else when[key]["positions"]))
                    names.setdefault(ps, f"nq_{len(names)}")
        rej = tuple(sorted(REJECT_POSITIONS))
        names.setdefault(rej, f"nq_{len(names)}")
        return [names[rej]]

    def unnamed_violations(self, prepared: DataFrame) -> DataFrame:
        """Receipts that name no readable message (REMP-SCHEMA-001 without a message id)."""
        if not self.on("REMP-SCHEMA-001"):
            return prepared.limit(0).select(F.lit(None).cast("string").alias("mid"), F.lit(None).cast("string").alias("rule"),
                                            F.lit(None).cast("string").alias("explanation"), no_ev().alias("evidence"))
        r = prepared.where(F.col("mid").isNull())
        bad = F.concat(F.col("bad"), F.array(F.lit(f"message_id: expected {self.m.hash_expected}, found nothing")))
        return r.select(F.lit(None).cast("string").alias("mid"), F.lit("REMP-SCHEMA-001").alias("rule"),
                        F.concat(F.lit("receipt names no readable message: "), F.array_join(bad, "; ")).alias("explanation"),
                        F.array(ev(pos(), F.col("kind"), F.col("src"))).alias("evidence"))
