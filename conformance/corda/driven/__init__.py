"""Driven conformance for Corda P2P (``rmkit conform --protocol corda``): a receiving-node
implementation is driven through generated scenarios of deliveries, redeliveries, duplicates,
crashes and broker restarts, and judged against what the protocol ALLOWS, not against one
implementation's choices:

- :mod:`.adapters`: the adapter protocol (JSON objects in, JSON objects out), the reference
  adapter built on the reference machines, and the process / in-process wrappers;
- :mod:`.judge`: the oracle: predicates over the implementation's outputs, whose state follows
  the implementation's own legal choices (which copy it commits when, when it acknowledges);
- :mod:`.suite`: scenario generation (Hypothesis), the lock-step runner, shrinking, reports;
- :mod:`.examples`: faulty implementations that must fail and legal variants that must pass.
"""
