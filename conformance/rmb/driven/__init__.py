"""Black-box conformance of an RMB v1 daemon at its real wire (``rmkit conform --protocol rmb``)."""
