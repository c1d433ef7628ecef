"""RMB v1: compiled spec, log records, signing and the twin directory."""
