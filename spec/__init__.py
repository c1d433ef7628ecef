"""Spec files (YAML + JSON Schema): the single source of truth, shipped as package data."""
