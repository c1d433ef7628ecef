"""rmkit: formal spec and conformance test kit for reliable messaging protocols.

The public API is what this module and its documented submodules export; anything under
``rmkit._internal`` may change without notice.
"""

from rmkit._version import __version__

__all__ = ["__version__"]
