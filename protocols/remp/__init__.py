"""REMP: compiled spec, receipt formats, TL form and signing, the adapter wire."""
