"""The REMP rules as DataFrame operations, taken from the compiled spec (``model_for(profile)``).

Shape of the job: every receipt row is shuffled ONCE, by message id, and sorted ONCE, by message
id and log position; every window function uses that one spec (:func:`in_order`), with row
frames over it (before, up to, after the row, or all of the message's rows), so that the
three window operators need no further sort. What the streaming checker keeps per message:

* a message id's *lives*: a new life starts at a SentToValidators/PutIntoQueue more than the
  profile's expiry bound after the life's first timed receipt (two boundaries are followed, i.e.
  up to three lives per id), found in the list of the message's start receipts; ``life`` is a
  column that the other windows filter on rather than partition by;
* redelivered receipts (same text within a life) are dropped: the row's (life, text hash) is in
  the list of the rows before it;
* per source, its position before each receipt is the ``to`` of its previous receipt in the
  life that had a transition (the transition table of ``spec/remp/transitions.yaml`` as a SQL
  map), the last entry of the earlier transitions filtered to the life and source; this gives
  REMP-SEQ-001 / SRC-001 / SRC-002;
* the first Finalized, the first inclusion of each block and the first PutIntoQueue time before
  a receipt in its life, from the same kind of lists, give the replay, FIN and EXPIRY rules;
* one aggregation per life on the same partitioning gives the outcome (the ordered rules of
  ``outcomes.yaml`` as a SQL CASE), REMP-OUTCOME-*, FIN-002, FN-001, LIVE-001; what is per source
  (its last position, whether it queued the message) is read off its last transition row.

Only what is global to the log is computed before the shuffle, as small aggregates over the
parsed rows: the role each source first showed (kinds a single role issues), and the log's final
clock. No Python function runs per row; messages have about 20 receipts, so the lists a row
looks through are short.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from graphlib import TopologicalSorter

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from rmkit.conformance.remp.checker import RELEASE_KINDS
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


HEX_RUNS = re.compile(r"\^(?:(\[0-9a-f(?:A-F)?\]\{\d+\})|\(((?:\[0-9a-f(?:A-F)?\]\{\d+\}\|)+\[0-9a-f(?:A-F)?\]\{\d+\})\))\$")
HEX_RUN = re.compile(r"\[0-9a-f(A-F)?\]\{(\d+)\}")


def matches(v: Column, pattern: str) -> Column:
    """Whether ``v`` fully matches a spec pattern. A run of hex digits of fixed lengths (the ids',
    hashes' and signatures' formats) is checked by length and ``unhex``, several times cheaper
    than a regular expression per row; any other pattern by Java's regex engine."""
    m = HEX_RUNS.fullmatch(pattern)
    runs = HEX_RUN.findall(m.group(1) or m.group(2)) if m else []
    if not runs or len({upper for upper, _ in runs}) > 1:
        return v.rlike(java_pattern(pattern))
    ok = F.length(v).isin(*sorted({int(n) for _, n in runs})) & F.unhex(v).isNotNull()
    return ok if runs[0][0] else ok & (F.lower(v) == v)


def _lit_map(d: dict) -> Column:
    args = []
    for k, v in d.items():
        args += [F.lit(k), v if isinstance(v, Column) else F.lit(v)]
    return F.create_map(*args) if args else F.create_map()


def _arr(values) -> Column:
    return F.array(*[F.lit(v) for v in values]) if values else F.array().cast("array<string>")


def pos() -> Column:
    return F.struct(*[F.col(c) for c in POS])


# The frames used over the one window spec (a message's rows in log order): rows before the
# current one, up to it, after it, all of them.
BEFORE = (Window.unboundedPreceding, -1)
UPTO = (Window.unboundedPreceding, Window.currentRow)
AFTER = (1, Window.unboundedFollowing)
ALL = (Window.unboundedPreceding, Window.unboundedFollowing)


def in_order(frame: tuple[int, int] | None = None) -> WindowSpec:
    """THE window spec of the job: a message id's rows in log order (every window function uses
    it, so the rows are sorted once, right after the shuffle), with a row frame."""
    spec = Window.partitionBy("lg", "mid").orderBy(*POS)
    return spec.rowsBetween(*frame) if frame else spec


def in_life(entry: Column) -> Column:
    """Whether a collected entry (a struct with ``life``) belongs to the current row's life."""
    return entry.life == F.col("life")


def ev(p: Column, kind: Column, src: Column) -> Column:
    """One evidence entry: a receipt's position, kind and source."""
    return F.struct(p.fidx.alias("fidx"), p.blk.alias("blk"), p.rid.alias("rid"), kind.cast("string").alias("kind"),
                    src.cast("string").alias("source_id"))


class Found:
    """The violations of a set of rules, collected as (condition, explanation, evidence) and
    turned into one array column of those that hold; rules off in the profile are left out."""

    TYPE = ("array<struct<rule:string,explanation:string,"
            "evidence:array<struct<fidx:int,blk:bigint,rid:bigint,kind:string,source_id:string>>>>")

    def __init__(self, on):
        self.on = on
        self.entries: list[Column] = []

    def add(self, rule: str, cond: Column, text: Column, evid: Column) -> None:
        if self.on(rule):
            self.entries.append(F.when(cond, F.struct(F.lit(rule).alias("rule"), text.alias("explanation"), evid.alias("evidence"))))

    def column(self) -> Column:
        if not self.entries:
            return F.array().cast(self.TYPE)
        return F.filter(F.array(*self.entries), lambda x: x.isNotNull())


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
        self.hash_re = fmts[common["message_id"]["format"]][m.profile]["pattern"]
        self.sig_re = fmts[common["signature"]["format"]][m.profile]["pattern"]
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

    def field_problems(self) -> list[Column]:
        """The spec's per-kind field checks (required, integer type and minimum, pattern): one
        message or null per check, the wording and order of ``rmkit check``. Each distinct check is one
        expression guarded by the kinds it applies to (a CASE over every kind would be too large
        for Spark's generated code, which then falls back to interpreting it row by row)."""
        checks: dict[tuple, dict] = {}
        order = TopologicalSorter()
        for name, ki in self.m.kinds.items():
            keys = [(fc.name, fc.expected, repr(sorted((fc.fmt or {}).items()))) for fc in ki.fields]
            for key, fc in zip(keys, ki.fields):
                c = checks.setdefault(key, {"fc": fc, "kinds": [], "required": []})
                c["kinds"].append(name)
                if fc.required:
                    c["required"].append(name)
            for before, after in zip(keys, keys[1:]):
                order.add(after, before)
            for key in keys:
                order.add(key)
        probs = [self._field_problem(**checks[key]) for key in order.static_order()]
        return probs

    @staticmethod
    def _field_problem(fc, kinds: list[str], required: list[str]) -> Column:
        """One field's problem for a receipt of one of ``kinds``, or null."""
        kind, v = F.col("kind"), F.col(fc.name)
        fmt = fc.fmt or {}
        missing = F.when(kind.isin(*required), F.concat(F.lit(f"{fc.name}: required for "), kind, F.lit(", missing")))
        wrong = f"{fc.name}: expected {fc.expected}, found "
        out = F.when(~kind.isin(*kinds), F.lit(None))
        if fmt.get("type") == "integer":
            bad = F.col(fc.name + "_bad")
            lo = fmt.get("minimum")
            cond_bad = bad | ((v < F.lit(int(lo))) if lo is not None else F.lit(False))
            return (out.when(v.isNull() & ~bad, missing)
                    .when(cond_bad, F.concat(F.lit(wrong), F.coalesce(v.cast("string"), F.lit("a value of another type")))))
        pat = fmt.get("pattern")
        fail = ~matches(v, pat) if pat else F.lit(False)
        return (out.when(F.col(fc.name + "_bad"), F.lit(wrong + "a value of another type")).when(v.isNull(), missing)
                .when(fail, F.concat(F.lit(wrong), F.lit("'"), v, F.lit("'"))))

    # -- stage 1: per-row columns that need no other row --------------------------------------
    def prepare(self, receipts: DataFrame) -> DataFrame:
        df = receipts
        ts = F.col("timestamp")
        ts_ok = ts.isNotNull() & ~F.col("timestamp_bad") & (ts >= 0)
        df = df.withColumn("ts_ok", ts_ok)
        df = df.withColumn("t", F.when(ts_ok & (ts != 0), ts).otherwise(F.col("kts")))
        src_bad = F.when(F.col("source_id_bad"), F.lit(f"source_id: expected {self.m.hash_expected}, found a value of another type")) \
            .when(F.col("source_id").isNull(), F.lit(f"source_id: expected {self.m.hash_expected}, found nothing")) \
            .when(~matches(F.col("source_id"), self.hash_re), F.concat(F.lit(f"source_id: expected {self.m.hash_expected}, found '"), F.col("source_id"), F.lit("'")))
        ts_bad = F.when(~ts_ok, F.concat(F.lit("timestamp: expected an integer >= 0 (unix ms), found "),
                                          F.coalesce(ts.cast("string"), F.when(F.col("timestamp_bad"), F.lit("a value of another type")), F.lit("nothing"))))
        # the problems joined (null: none); concat_ws skips the null ones
        df = df.withColumn("bad", F.nullif(F.concat_ws("; ", src_bad, ts_bad, *self.field_problems()), F.lit("")))
        df = df.withColumn("block", F.lower(F.col("block_id")) if self.fold else F.col("block_id"))
        df = df.withColumn("kbit", self.kind_bit(F.col("kind")))
        df = df.withColumn("single_role", self.single_issuer(F.col("kind")))
        sig = F.col("signature")
        no_sig = (sig.isNull() & ~F.col("signature_bad")) | (sig == "")
        df = df.withColumn("no_sig", no_sig)
        return df.withColumn("sig_shown", F.when(F.col("signature_bad"), F.lit("a value of another type"))
                             .when(~no_sig & ~matches(sig, self.sig_re), F.substring(sig, 1, 40)))

    def identities(self, prepared: DataFrame) -> DataFrame:
        """``mid``, ``src`` (the ids as compared, case-folded where the profile says so) and
        ``key`` (the clock's source: the source, else the message). Cheap to derive, so added
        after the kept table rather than doubling its strings."""
        low = F.lower if self.fold else (lambda c: c)
        df = prepared.withColumn("mid", low(F.col("message_id"))).withColumn("src", low(F.col("source_id")))
        return df.withColumn("key", F.coalesce(F.col("src"), F.col("message_id")))

    # -- global facts (small aggregates before the shuffle) --------------------------------------
    def first_roles(self, prepared: DataFrame) -> DataFrame:
        """src -> (role, position) of the first receipt of a kind only one role issues: the role
        the streaming checker infers for the source from then on."""
        r = prepared.where(F.col("mid").isNotNull() & F.col("src").isNotNull() & F.col("single_role").isNotNull())
        first = F.min(F.struct(pos().alias("p"), F.col("single_role").alias("role"), F.col("kind").alias("k"), F.col("mid").alias("m")))
        return r.groupBy("lg", "src").agg(first.alias("fr")).select(
            "lg", "src", F.col("fr.role").alias("known_role"), F.col("fr.p").alias("known_pos"))

    # -- stage 2: per message, in log order, on ONE window spec ------------------------------------
    def per_life(self, prepared: DataFrame, roles: DataFrame, partitions: int | None, hwm_end: dict) -> DataFrame:
        """One row per message life (``lg``: the log, when several independent logs are checked
        at once; ``hwm_end``: each log's final clock)."""
        df = prepared.where(F.col("mid").isNotNull()).join(F.broadcast(roles), ["lg", "src"], "left")
        # by message id alone: it clusters (lg, mid) too, and stays the one shuffle when lg is a constant
        df = df.repartition(partitions, "mid") if partitions else df.repartition("mid")
        df = self._lives_split(df.withColumn("P", pos()))
        df = self._replayed(df)
        df = self._roles(df)
        df = self._history(df)
        df = df.withColumn("viols", self.row_violations())
        return self.lives(df, hwm_end)

    def _lives_split(self, df: DataFrame) -> DataFrame:
        """``life``: 0, 1 or 2; a life starts at a start kind more than the expiry bound after the
        previous life's first timed receipt (that of the message, for the first boundary)."""
        E = self.lim.expiry_ms
        start = F.col("kind").isin(*START_KINDS) & F.col("t").isNotNull()
        df = df.select("*", F.collect_list(F.when(start, F.struct(F.col("P").alias("p"), F.col("t").alias("t")))).over(in_order(ALL)).alias("starts"),
                       F.first("t", ignorenulls=True).over(in_order(ALL)).alias("msg_first_t"),
                       F.first("t", ignorenulls=True).over(in_order(UPTO)).alias("first_t_upto"))
        # the starts come in log order: the first that qualifies is the boundary
        df = df.withColumn("b1", F.get(F.filter("starts", lambda x: x.t - F.col("msg_first_t") > E), 0))
        df = df.withColumn("b2", F.get(F.filter("starts", lambda x: (x.p > F.col("b1.p")) & (x.t - F.col("b1.t") > E)), 0))
        after_b1 = F.coalesce(F.col("P") >= F.col("b1.p"), F.lit(False))
        after_b2 = F.coalesce(F.col("P") >= F.col("b2.p"), F.lit(False))
        df = df.withColumn("life", after_b1.cast("int") + after_b2.cast("int"))
        df = df.withColumn("is_last_life", F.col("life") == F.when(F.col("b2").isNotNull(), 2).when(F.col("b1").isNotNull(), 1).otherwise(0))
        # a later life begins with its boundary receipt, which has a time
        df = df.withColumn("first_t", F.when(F.col("life") == 0, F.col("first_t_upto")).when(F.col("life") == 1, F.col("b1.t"))
                           .otherwise(F.col("b2.t")))
        # late: after rmkit check has judged and closed the life (its clock, here the receipt's own
        # time, more than the horizon + 60 s past the life's first time); only the replay rules apply
        close_after = self.lim.horizon_ms + 60_000
        df = df.withColumn("late", F.coalesce(F.col("t") - F.col("first_t") > F.lit(close_after), F.lit(False)))
        return df.drop("starts", "msg_first_t", "first_t_upto", "b1", "b2")

    def _replayed(self, df: DataFrame) -> DataFrame:
        """``dup``: the same text came earlier in the life (a redelivery); ``life_first``."""
        seen = F.collect_list(F.struct("life", "h")).over(in_order(BEFORE))
        df = df.select("*", F.array_contains(seen, F.struct("life", "h")).alias("dup"),
                       (~F.lag("life").over(in_order()).eqNullSafe(F.col("life"))).alias("life_first"))
        df = df.withColumn("known", F.col("kbit").isNotNull())
        return df.withColumn("kr", ~F.col("dup") & F.col("known") & ~F.col("late"))

    def _roles(self, df: DataFrame) -> DataFrame:
        """The source's role for each receipt and the spec's transition (``tr_``, ``tr``)."""
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
        finr = F.col("kr") & (F.col("kind") == "Finalized") & F.col("block").isNotNull()
        incl = F.col("kr") & F.col("kind").isin(*INCLUSION_KINDS) & F.col("block").isNotNull()
        late_block = F.col("late") & F.col("known") & F.col("block").isNotNull()
        df = df.withColumn("late_fin", late_block & (F.col("kind") == "Finalized"))
        df = df.withColumn("late_incl", late_block & F.col("kind").isin(*INCLUSION_KINDS))
        return df.withColumn("finr", finr).withColumn("incl", incl)

    def _history(self, df: DataFrame) -> DataFrame:
        """What came before (and after) a receipt in its life, from lists of the rows around it
        filtered to the life (and source, block): the source's previous transition, the first
        Finalized, the first PutIntoQueue time, whether the block's inclusion is its first, and
        for the per-life aggregation whether the row is its source's last transition and whether
        the source queued the message."""
        def rows(cond: Column, *fields, frame=BEFORE) -> Column:
            return F.collect_list(F.when(cond, F.struct("life", *fields))).over(in_order(frame))

        queued_kind = F.col("kbit").bitwiseAND(F.lit(self.m.queued_mask)) != 0
        put = F.col("kr") & (F.col("kind") == "PutIntoQueue") & (F.col("t") != 0)
        df = df.select(
            "*",
            rows(F.col("tr"), "src", F.col("tr_.to").alias("to"), F.col("P").alias("p"), F.col("kind").alias("k")).alias("trs_before"),
            rows(F.col("finr"), F.col("block").alias("b"), F.col("P").alias("p"), "t", F.col("src").alias("s")).alias("fins_before"),
            rows(put, "t").alias("puts_before"),
            rows(F.col("incl"), "block", F.col("kind").alias("k"), "src").alias("incl_before"),
            rows(F.col("tr"), "src", frame=AFTER).alias("trs_after"),
            rows(F.col("tr") & queued_kind, "src", frame=UPTO).alias("queued_upto"))
        same_src = lambda x: in_life(x) & (x.src == F.col("src"))  # noqa: E731
        prev = F.filter("trs_before", same_src)
        df = df.withColumn("prev", F.get(prev, F.size(prev) - 1))
        df = df.withColumn("pos_before", F.coalesce(F.col("prev.to"), F.lit("none")))
        df = df.withColumn("fin_before", F.get(F.filter("fins_before", in_life), 0))
        df = df.withColumn("put_before", F.get(F.filter("puts_before", in_life), 0).t)
        df = df.withColumn("incl_first", F.col("incl") & ~F.exists("incl_before", lambda x: in_life(x) & (x.block == F.col("block"))))
        # the source of the block's first IncludedIntoBlock (REMP-BLOCK-001)
        df = df.withColumn("collator_before", F.get(F.filter("incl_before", lambda x: in_life(x) & (x.block == F.col("block"))
                                                               & (x.k == "IncludedIntoBlock") & x.src.isNotNull()), 0).src)
        df = df.withColumn("src_last", F.col("tr") & ~F.exists("trs_after", same_src))
        df = df.withColumn("src_queued", F.col("src_last") & F.exists("queued_upto", same_src))
        return df.drop("trs_before", "fins_before", "puts_before", "incl_before", "trs_after", "queued_upto")

    def row_violations(self) -> Column:
        """Every violation a receipt row causes, as an array of (rule, explanation, evidence)."""
        m, on = self.m, self.on
        me = ev(F.col("P"), F.col("kind"), F.col("src"))
        found = Found(on)
        add = found.add

        eff = ~F.col("dup") & ~F.col("late")
        kind_txt = F.coalesce(F.col("kind"), F.lit("receipt"))
        mid_bad = F.col("life_first") & ~matches(F.col("message_id"), self.hash_re)
        bad = F.concat_ws("; ", F.col("bad"), F.when(mid_bad, F.concat(F.lit(f"message_id: expected {m.hash_expected}, found '"), F.col("message_id"), F.lit("'"))))
        add("REMP-SCHEMA-001", eff & (bad != ""), F.concat(kind_txt, F.lit(": "), bad), F.array(me))
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
        no_sig = F.col("no_sig")
        add("REMP-SIG-001", has_src & ((no_sig & F.lit(bool(m.signature_required)) & ~unsigned_ok) | F.col("sig_shown").isNotNull()),
            F.when(no_sig, F.concat(F.col("kind"), F.lit(" from "), F.col("src"), F.lit(" carries no signature")))
            .otherwise(F.concat(F.lit(f"signature: expected {m.signature_expected}, found '"), F.col("sig_shown"), F.lit("'"))), F.array(me))
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
        # in decimals: a total_validators near 2^63 must not overflow (Spark's ANSI mode would fail the job)
        base = (total - 1 if minus_one else total).cast("decimal(38,0)") * F.lit(frac.numerator)
        need = (F.ceil(base / F.lit(frac.denominator)) if rounding == "ceil" else F.floor(base / F.lit(frac.denominator))) + F.lit(plus)
        add("REMP-FANOUT-001", sent & (n > total), F.format_string("sent_to %d > total_validators %d", n, total), F.array(me))
        add("REMP-FANOUT-002", sent & (n <= total) & (n < need), F.format_string("sent to %d of %d validators; at least %s are needed", n, total, need.cast("string")), F.array(me))
        # replay, finality and expiry
        fb = F.col("fin_before")
        fin_ev = ev(fb.p, F.lit("Finalized"), fb.s)
        later = fb.t.isNull() | F.col("t").isNull() | (F.col("t") > fb.t)
        other = (F.col("incl") | F.col("late_incl")) & fb.isNotNull() & (F.col("block") != fb.b) & later
        add("REMP-REPLAY-001", other & (F.col("kind") == "IncludedIntoAcceptedBlock"),
            F.concat(F.col("kind"), F.lit(" into block "), F.substring(F.col("block"), 1, 16), F.lit("… after it was finalized in block "), F.substring(fb.b, 1, 16), F.lit("…")), F.array(fin_ev, me))
        add("REMP-REPLAY-003", other & (F.col("kind") == "IncludedIntoBlock"),
            F.concat(F.col("kind"), F.lit(" into block "), F.substring(F.col("block"), 1, 16), F.lit("… after it was finalized in block "), F.substring(fb.b, 1, 16), F.lit("…")), F.array(fin_ev, me))
        again = F.col("finr") & fb.isNotNull()
        add("REMP-REPLAY-002", (again | (F.col("late_fin") & fb.isNotNull())) & (F.col("block") != fb.b),
            F.concat(F.lit("finalized in block "), F.substring(fb.b, 1, 16), F.lit("… and again in block "), F.substring(F.col("block"), 1, 16), F.lit("…")), F.array(fin_ev, me))
        add("REMP-FIN-001", again & (F.col("block") == fb.b), F.lit("Finalized reported again in the same block"), F.array(fin_ev, me))
        base_t = F.coalesce(F.col("put_before"), F.col("first_t"))
        add("REMP-EXPIRY-001", F.col("incl_first") & F.col("t").isNotNull() & base_t.isNotNull() & (F.col("t") - base_t > F.lit(self.lim.expiry_ms)),
            F.format_string(f"first included into block %s… %.1f s after a validator first received it; the {self.profile} profile keeps a message at most {self.lim.expiry_ms / 1000:.0f} s",
                            F.substring(F.col("block"), 1, 16), (F.col("t") - base_t) / 1000.0), F.array(me))
        add("REMP-BLOCK-001", F.col("incl") & (F.col("kind") == "IncludedIntoBlock") & F.col("src").isNotNull()
            & F.col("collator_before").isNotNull() & (F.col("collator_before") != F.col("src")),
            F.concat(F.lit("IncludedIntoBlock for block "), F.substring(F.col("block"), 1, 16), F.lit("… from "), F.col("src"),
                     F.lit(", which "), F.col("collator_before"), F.lit(" reported collating")), F.array(me))
        life_ms = int(self.lim.lifetime_s * 1000)
        add("REMP-EXPIRY-002", kr & (F.col("kind") == "Timeout") & F.col("t").isNotNull() & base_t.isNotNull() & (F.col("t") - base_t < F.lit(life_ms)),
            F.format_string(f"Timeout from %s %.1f s after the message was first queued; a message is tracked at least one lifetime ({life_ms / 1000:.0f} s)",
                            F.col("src"), (F.col("t") - base_t) / 1000.0), F.array(me))
        return found.column()

    # -- stage 3: one aggregation per life (same partitioning: no further shuffle) ----------------
    def _queued_sets(self) -> dict[tuple, str]:
        """Position sets the outcome rules and REMP-OUTCOME-001 count queued validators in -> the
        column counting them."""
        names: dict[tuple, str] = {}
        for _, _, when in self.m.outcomes:
            for key in ("queued_all_in", "queued_fraction_in"):
                if key in when:
                    ps = tuple(sorted(when[key] if key == "queued_all_in" else when[key]["positions"]))
                    names.setdefault(ps, f"nq_{len(names)}")
        names.setdefault(tuple(sorted(REJECT_POSITIONS)), f"nq_{len(names)}")
        return names

    def lives(self, df: DataFrame, hwm_end: dict) -> DataFrame:
        """Aggregate the rows of each life. What is per source (its last position, whether it
        queued the message) is read off the row of its last transition (``src_last``)."""
        m, lim = self.m, self.lim
        kinds = list(m.kinds)
        P, kr = F.col("P"), F.col("kr")
        src_role = F.coalesce(F.col("known_role"), F.col("role"))
        validator = F.col("src_last") & (src_role == VALIDATOR)
        queued = validator & F.col("src_queued")
        last_ev = ev(P, F.col("kind"), F.col("src"))
        pos_sets = self._queued_sets()

        def first_evidence(cond: Column, n: int) -> Column:
            return F.slice(F.array_sort(F.collect_list(F.when(cond, last_ev))), 1, n)

        agg = [
            F.sum(queued.cast("int")).alias("nq"),
            *[F.sum((queued & F.col("tr_.to").isin(*ps)).cast("int")).alias(name) for ps, name in pos_sets.items()],
            F.sum(validator.cast("int")).alias("nvals"),
            first_evidence(queued, 20).alias("q_ev"),
            first_evidence(validator, 5).alias("val_ev"),
            first_evidence(F.col("src_last"), 6).alias("last_ev"),
            F.bit_or(F.when(kr, F.col("kbit"))).alias("kmask"),
            F.min(F.when(F.col("finr"), F.struct(P.alias("p"), F.col("block").alias("b"), F.col("t").alias("t"), F.col("src").alias("s")))).alias("fin"),
            F.min(F.when(kr & (F.col("kind") == "RejectedByFullnode"), F.struct(P.alias("p"), F.col("src").alias("s")))).alias("fn_rej"),
            F.collect_set(F.when(kr & (F.col("kind") == "IncludedIntoAcceptedBlock"), F.col("block"))).alias("acc"),
            # timed inclusions (block named) and masterchain releases (block optional) for REMP-REPLAY-004/005
            F.collect_list(F.when(kr & F.col("t").isNotNull() & ((F.col("kind").isin(*INCLUSION_KINDS) & F.col("block").isNotNull())
                                                                  | F.col("kind").isin(*RELEASE_KINDS, "RejectedByCollator")),
                                  F.struct(F.col("kind").alias("k"), F.col("block").alias("b"), F.col("t").alias("t"),
                                           F.col("src").alias("s")))).alias("blk"),
            # total_validators of the first SentToValidators (REMP-COLL-004)
            F.min(F.when(kr & (F.col("kind") == "SentToValidators") & F.col("sent_to").isNotNull() & (F.col("total_validators") > 0),
                         F.struct(P.alias("p"), F.col("total_validators").alias("n")))).alias("total"),
            F.min(F.when(kr & (F.col("kind") == "SentToValidators") & F.col("t").isNotNull(), F.struct(P.alias("p"), F.col("t").alias("t")))).alias("sent"),
            F.min(F.when(kr & (F.col("kind") == "PutIntoQueue") & (F.col("t") != 0), F.struct(P.alias("p"), F.col("t").alias("t")))).alias("put"),
            F.min(F.when(F.col("t").isNotNull(), F.struct(P.alias("p"), F.col("t").alias("t")))).alias("ft"),
            F.min(P).alias("first_p"),
            F.sum((F.col("dup") & ~F.col("late")).cast("int")).alias("dups"),
            F.sum(F.col("late").cast("int")).alias("late"),
            F.flatten(F.collect_list(F.col("viols"))).alias("viols"),
            F.max("is_last_life").alias("is_last"),
        ] + [F.sum((kr & (F.col("kind") == k)).cast("int")).alias("n_" + k) for k in kinds]
        life = df.groupBy("lg", "mid", "life").agg(*agg)
        life = life.withColumn("outcome", self.outcome(pos_sets, lambda o: o[0]).otherwise(F.lit("pending")))
        life = life.withColumn("final", self.outcome(pos_sets, lambda o: o[1]).otherwise(F.lit(False)))
        first_t = F.col("ft.t")
        hwm = _lit_map({k: v for k, v in hwm_end.items() if v is not None})[F.col("lg")].cast("long") if any(
            v is not None for v in hwm_end.values()) else F.lit(None).cast("long")
        not_judged = ~F.col("final") & (first_t.isNull() | hwm.isNull() | (F.col("is_last") & (hwm - first_t < F.lit(lim.horizon_ms))))
        life = life.withColumn("not_judged", not_judged).withColumn("lost", ~F.col("final") & ~not_judged)
        life = life.withColumn("viols", F.concat(F.col("viols"), self.life_violations(pos_sets)))
        life = life.withColumn("queue_ack_ms", F.col("put.t") - F.col("sent.t"))
        life = life.withColumn("finalized_ms", F.when(F.col("fin").isNotNull(), F.col("fin.t") - F.col("sent.t")))
        return life

    def outcome(self, pos_sets: dict[tuple, str], value) -> Column:
        """The spec's ordered outcome rules as a CASE, first that holds; ``value`` picks what a
        rule gives from (name, final)."""
        out = None
        for name, fin_flag, when in self.m.outcomes:
            cond = F.lit(True)
            if "any_kind" in when:
                cond = cond & ((F.coalesce(F.col("kmask"), F.lit(0)).bitwiseAND(F.lit(when["any_mask"]))) != 0)
            if "queued_all_in" in when:
                col = pos_sets[tuple(sorted(when["queued_all_in"]))]
                cond = cond & (F.col("nq") > 0) & (F.col(col) == F.col("nq"))
            if "queued_fraction_in" in when:
                q = when["queued_fraction_in"]
                col, frac = pos_sets[tuple(sorted(q["positions"]))], q["at_least"]
                cond = cond & (F.col("nq") > 0) & (F.col(col) * F.lit(frac.denominator) >= F.col("nq") * F.lit(frac.numerator))
            v = F.lit(value((name, fin_flag)))
            out = F.when(cond, v) if out is None else out.when(cond, v)
        return out

    def life_violations(self, pos_sets: dict[tuple, str]) -> Column:
        on = self.on
        found = Found(on)
        add = found.add

        fin = F.col("fin")
        fin_ev = ev(fin.p, F.lit("Finalized"), fin.s)
        has_fin = fin.isNotNull()
        rej_col = pos_sets[tuple(sorted(REJECT_POSITIONS))]  # queued validators in a reject/timeout position
        add("REMP-OUTCOME-001", has_fin & (F.col("nq") > 0) & (F.col(rej_col) == F.col("nq")),
            F.format_string("finalized, yet all %d validators that queued it ended in a reject or timeout", F.col("nq")),
            F.concat(F.array(fin_ev), F.col("q_ev")))
        fn = F.col("fn_rej")
        fn_ev = ev(fn.p, F.lit("RejectedByFullnode"), fn.s)
        add("REMP-OUTCOME-002", has_fin & fn.isNotNull(), F.lit("finalized after the full node rejected it"), F.array(fn_ev, fin_ev))
        add("REMP-FIN-002", has_fin & ~F.array_contains(F.col("acc"), fin.b),
            F.concat(F.lit("Finalized names shard block "), F.substring(fin.b, 1, 16), F.lit("…, which no validator reported as IncludedIntoAcceptedBlock")), F.array(fin_ev))
        blk, fin_t = F.col("blk"), fin.t

        def held(i):  # another block accepted before i and not released (by the masterchain) by i's time
            return F.exists(blk, lambda a: (a.k == "IncludedIntoAcceptedBlock") & (a.b != i.b) & (a.t < i.t) & ~F.exists(
                blk, lambda r: r.k.isin(*RELEASE_KINDS) & (r.b.isNull() | (r.b == a.b)) & (r.t <= i.t)))

        def offends(kind):  # an inclusion of this kind, before Finalized, while another block is held
            return lambda i: (i.k == kind) & (fin_t.isNull() | (i.t < fin_t)) & held(i)

        for rule, kind in (("REMP-REPLAY-004", "IncludedIntoAcceptedBlock"), ("REMP-REPLAY-005", "IncludedIntoBlock")):
            add(rule, F.exists(blk, offends(kind)),
                F.lit(f"{kind} into another block while an accepted block still held the message (not ignored or rejected by the masterchain)"),
                F.array(ev(F.col("first_p"), F.lit(None), F.lit(None))))
        frac, plus, minus_one, rounding = self.m.thresholds["stop_collation_rejected"]
        n = F.col("total.n")
        base = (n - 1 if minus_one else n).cast("decimal(38,0)") * F.lit(frac.numerator)
        need = (F.ceil(base / F.lit(frac.denominator)) if rounding == "ceil" else F.floor(base / F.lit(frac.denominator))) + F.lit(plus)

        def after_rejects(i):  # at least `need` validators had rejected before this inclusion
            return (i.k == "IncludedIntoBlock") & (F.size(F.array_distinct(F.transform(
                F.filter(blk, lambda r: (r.k == "RejectedByCollator") & r.s.isNotNull() & (r.t < i.t)), lambda r: r.s))) >= need)

        add("REMP-COLL-004", n.isNotNull() & (need >= 1) & F.exists(blk, after_rejects),
            F.format_string("IncludedIntoBlock after %s of %d validators had rejected the message", need.cast("string"), n),
            F.array(ev(F.col("first_p"), F.lit(None), F.lit(None))))
        add("REMP-FN-001", fn.isNotNull() & (F.col("nvals") > 0),
            F.format_string("rejected by the full node, yet %d validator(s) reported on it", F.col("nvals")), F.concat(F.array(fn_ev), F.col("val_ev")))
        first_ev = ev(F.col("first_p"), F.lit(None), F.lit(None))
        add("REMP-LIVE-001", F.col("lost"),
            F.concat(F.lit(f"no final outcome {self.lim.horizon_s:.0f} s after its first receipt (last known: "), F.col("outcome"), F.lit(")")),
            F.concat(F.array(first_ev), F.col("last_ev")))
        return found.column()

    def unnamed_violations(self, prepared: DataFrame) -> DataFrame:
        """Receipts that name no readable message (REMP-SCHEMA-001 without a message id)."""
        if not self.on("REMP-SCHEMA-001"):
            return prepared.limit(0).select("lg", F.lit(None).cast("string").alias("mid"), F.lit(None).cast("string").alias("rule"),
                                            F.lit(None).cast("string").alias("explanation"), no_ev().alias("evidence"))
        r = prepared.where(F.col("mid").isNull())
        bad = F.concat_ws("; ", F.col("bad"), F.lit(f"message_id: expected {self.m.hash_expected}, found nothing"))
        return r.select("lg", F.lit(None).cast("string").alias("mid"), F.lit("REMP-SCHEMA-001").alias("rule"),
                        F.concat(F.lit("receipt names no readable message: "), bad).alias("explanation"),
                        F.array(ev(pos(), F.col("kind"), F.col("src"))).alias("evidence"))
