"""Corda P2P: compiled spec, record format and the node process contract."""
