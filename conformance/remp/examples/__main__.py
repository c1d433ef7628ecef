"""``python -m rmkit.conformance.remp.examples NAME ROLE``: a faulty example as an adapter process."""

import importlib
import sys

from rmkit.conformance.remp.examples import EXAMPLES, LEGAL
from rmkit.reference_impl.remp.adapter import ROLES, serve


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in {**EXAMPLES, **LEGAL} or argv[1] not in ROLES:
        print(f"usage: python -m rmkit.conformance.remp.examples {{{'|'.join({**EXAMPLES, **LEGAL})}}} {{{'|'.join(ROLES)}}}", file=sys.stderr)
        return 2
    return serve(importlib.import_module(f"rmkit.conformance.remp.examples.{argv[0]}").factory(argv[1]))


if __name__ == "__main__":
    sys.exit(main())
