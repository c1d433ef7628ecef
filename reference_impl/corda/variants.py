"""The reference node's variants (``--variant``): the reference and the faulty ones that the
crash-point harness must catch (:mod:`.node` says what each does wrong), and the commands that run
the reference node and bridge under the harness. Those are ordinary ``--node-cmd`` and
``--bridge-cmd`` templates (spec/corda/node.md): the harness starts the project's processes the
way it starts anyone's. Kept apart from the node so that every rmkit command, which lists the
variants in its parser, need not import the node's broker, database and STOMP modules."""

import shlex
import sys

VARIANTS = ("reference", "ack_before_commit", "memory_dedup", "fastpath_no_db")

_NODE_ARGS = ("--name NODE --host BROKER_HOST --port BROKER_PORT --inbound INBOUND --plan FLOWS --messages MESSAGES --db DB "
              "--events RECORDS --policy POLICY --heartbeat-ms HEARTBEAT_MS --credit CREDIT --arm ARM --paused PAUSED "
              "--ready READY")
_BRIDGE_ARGS = ("--name BRIDGE --local-host LOCAL_HOST --local-port LOCAL_PORT --outbound OUTBOUND --remote-host REMOTE_HOST "
                "--remote-port REMOTE_PORT --inbound INBOUND --in-order IN_ORDER --heartbeat-ms HEARTBEAT_MS --arm ARM "
                "--paused PAUSED --ready READY")


def _python(module: str) -> str:
    return f"{shlex.quote(sys.executable)} -m {module}"


def node_cmd(variant: str = "reference") -> str:
    """The ``--node-cmd`` that runs the reference node, or one of its faulty variants."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
    extra = "" if variant == "reference" else f" --variant {variant}"
    return f"{_python('rmkit.reference_impl.corda.node')} {_NODE_ARGS}{extra}"


def bridge_cmd() -> str:
    """The ``--bridge-cmd`` that runs the reference bridge."""
    return f"{_python('rmkit.reference_impl.corda.bridge_node')} {_BRIDGE_ARGS}"
