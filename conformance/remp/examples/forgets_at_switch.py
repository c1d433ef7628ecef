"""A validator that loses its replay memory at a session switch: which messages were accepted in
which block is dropped, so a block of the next session replaying one is accepted (REMP-VALID-001;
001: the message "will not be collated for some time period")."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.reference_impl.remp.validator import Validator


class ForgetfulValidator(Validator):
    def _on_switch(self, ev):
        out = super()._on_switch(ev)
        for m in self.msgs.values():  # the bug: acceptances forgotten with the old session
            m.acc = None
        self.acc_only.clear()
        return out


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: replay memory lost at a session switch"
    variant = ForgetfulValidator


def factory(role):
    return Adapter(role)
