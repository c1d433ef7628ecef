"""Conformance checkers: one sub-package per protocol."""
