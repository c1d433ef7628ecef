"""The audit's output folder (summary, violation and quarantine tables, operator's report).

Not built yet: the Spark audit is work in progress. Asking for ``--out`` fails loudly rather than
pretend that something was written.
"""

from rmkit.errors import UsageError


def write_outputs(res, out, profile):
    raise UsageError(f"--out {out}: the audit's output folder (tables, operator's report, charts) is not built yet; "
                     "run without --out for the console summary")
