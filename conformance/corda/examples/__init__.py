"""Nodes for the Corda crash-point harness written from spec/corda/node.md alone: a small correct one
(:mod:`.minimal_node`) and its faulty variant (``--memory-dedup``), which the harness must catch."""
