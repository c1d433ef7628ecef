"""REMP's side of the pytest plugin: the saved regressions (a test each, under its file), the
catalogue of ``spec/remp/conformance.yaml`` (a test per named scenario, ``ROLE::CAT-...``) and
each role's generated search (``ROLE::generated-ROLE``), run as ``rmkit conform`` runs them."""

from __future__ import annotations

from rmkit.cli_options import implementation_regressions
from rmkit.conformance.pytest_support import Entry, NotDriven, PytestSupport, RunOptions, Saved, ScenarioFailed, Skipped, Source

ROLES = ("validator", "fullnode", "consumer")


def _hello_error(res) -> str:
    """What a failed hello says, once: the failure, what came back, the implementation's last stderr lines."""
    f = res.failure
    lines = [f.summary]
    if f.received:
        lines.append(f"received: {f.received[:300]}")
    if f.stderr.strip():
        lines.append("the implementation's stderr (last lines):")
        lines += [f"  {t}" for t in f.stderr.strip().splitlines()[-8:]]
    return "\n".join(lines)


class Support(PytestSupport):
    roles = ROLES
    saved_glob = "*.jsonl"

    def check(self, opts: RunOptions) -> None:
        from rmkit.conformance.remp.driven.adapters import open_implementation

        open_implementation(opts, opts.roles[0]).close()  # --impl loaded, --impl-cmd split (its process starts later)

    def read_saved(self, path) -> Saved:
        from rmkit.conformance.remp.driven.scenario import read_scenario

        sc = read_scenario(path)
        return Saved(sc.role, sc.profile, sc.id, sc)

    def sources(self, opts: RunOptions) -> list:
        from rmkit.conformance.remp.driven.catalogue import catalogue
        from rmkit.specload import spec_root

        entries = [Entry(sc.role, sc.id, (sc, None)) for sc in catalogue(opts.profile, opts.roles)]
        entries += [Entry(role, f"generated-{role}", None) for role in opts.roles]
        return self.saved_sources(opts) + [Source(spec_root() / "remp" / "conformance.yaml", entries)]

    def probe(self, opts: RunOptions, role: str) -> None:
        from rmkit.conformance.remp.driven.adapters import open_implementation
        from rmkit.conformance.remp.driven.names import default_params
        from rmkit.conformance.remp.driven.runner import run_scenario
        from rmkit.conformance.remp.driven.scenario import Scenario

        hello = Scenario(id="hello", role=role, profile=opts.profile, params=default_params(role, opts.profile), events=[])
        impl = open_implementation(opts, role)
        try:
            res = run_scenario(hello, impl)
        finally:
            impl.close()
        if res.failure is not None:
            raise NotDriven(_hello_error(res))

    def run(self, opts: RunOptions, entry: Entry, properties: list) -> None:
        from rmkit.conformance.remp.driven.adapters import open_implementation

        impl = open_implementation(opts, entry.role)
        try:
            if entry.payload is None:
                self._generated(opts, entry.role, impl)
            else:
                self._named(opts, *entry.payload, impl, properties)
        finally:
            impl.close()

    def _named(self, opts: RunOptions, sc, path, impl, properties: list) -> None:
        from rmkit.conformance.remp.driven.coverage import NO_RULE, rules_measured_by
        from rmkit.conformance.remp.driven.report import unreached
        from rmkit.conformance.remp.driven.runner import FAIL, explain_failure, run_scenario

        # the rules the scenario is measured to catch (evidence, not the catalogue's intent): a
        # property of the test (JUnit <properties>), found when it runs, not at collection
        properties.append(("rmkit-rules", ",".join(rules_measured_by(sc, opts.profile)) or NO_RULE))
        res = run_scenario(sc, impl)
        if unreached(res):
            raise NotDriven(_hello_error(res))
        if res.verdict == FAIL:
            raise ScenarioFailed(f"{explain_failure(res)}\nreproduce: "
                                 f"{self.reproduce(opts, path, '--role', sc.role, '--catalogue-only')}")

    def _generated(self, opts: RunOptions, role: str, impl) -> None:
        from rmkit.conformance.remp.driven.generate import run_generated
        from rmkit.conformance.remp.driven.names import default_params
        from rmkit.conformance.remp.driven.runner import explain_failure, run_scenario
        from rmkit.conformance.remp.driven.scenario import write_scenario

        if opts.max_examples == 0:
            raise Skipped("--rmkit-max-examples 0: no generated scenarios")
        g = run_generated(role, opts.profile, default_params(role, opts.profile), impl, max_examples=opts.max_examples,
                          derandomize=opts.derandomize)
        if g.kit_error:
            raise ScenarioFailed(f"kit error in the generator (please report):\n{g.kit_error}")
        if g.failing is not None:
            res = run_scenario(g.failing, impl)
            if not g.failing.events:  # a hello alone: nothing to save, nothing judged
                raise NotDriven(_hello_error(res) if res.failure else g.message)
            path = write_scenario(implementation_regressions(opts) / f"{role}-{opts.profile}-{g.failing.digest()}.jsonl",
                                  g.failing, res.expected, res.failure.as_dict() if res.failure else None)
            raise self.saved_failure(opts, [explain_failure(res) if res.failure else g.message], path)
        if g.examples == 0:
            raise ScenarioFailed("no generated scenario ran: nothing was checked")
