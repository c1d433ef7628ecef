"""Variants of the reference RMB daemon for ``rmkit conform --protocol rmb``: faulty ones that
each break one promise of the documents (the suite must catch and shrink them) and legal ones
that choose differently where the documents leave a choice (they must pass).

Run one as a daemon: ``python -m rmkit.conformance.rmb.examples NAME serve --twin ... `` (the
options of ``rmkit rmb serve``). In ``variants``: ``FAULTY`` maps each faulty one to the profile it
is judged in and the rules that catch it; ``MUTANTS`` breaks one further rule each, to show that
the checks of that rule can fail; ``LEGAL`` choose differently where the documents allow it.
``mutants`` completes the set to one mutant per rule judged (``RULE_MUTANTS``), the evidence
behind the per-rule table (:mod:`rmkit.conformance.rmb.driven.coverage`).
"""
