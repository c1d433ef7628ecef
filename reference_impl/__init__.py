"""Deterministic reference state machines: one sub-package per protocol."""
