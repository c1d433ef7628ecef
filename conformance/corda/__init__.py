"""Corda P2P messaging as an rmkit protocol: the compiled spec (:mod:`rmkit.protocols.corda.model`), the generated docs
(:mod:`.docs`), the plug-in (:mod:`.protocol`), model <-> reference agreement (:mod:`.agreement`)
and driven conformance (:mod:`.driven`)."""
