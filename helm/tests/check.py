#!/usr/bin/env python3
"""Offline tests of the Helm chart helm/hermes-cloud: no cluster, no helm binary.

For each values set in helm/tests/values/ (and the chart's values-dev.yaml) it lints the chart
(strict), renders it, validates every object against the Kubernetes 1.30 schemas
(kubernetes-validate, strict; the CRDs ScaledObject, ServiceMonitor and PrometheusRule by hand),
and checks what the chart promises: pod security, probes, resources, drain and grace period,
PDBs, selectors, secrets by reference, the migration Job, RBAC held to the sandbox backend's
code, the sandbox namespace, autoscaling, the Ingress, the dashboard and alerting rules equal
to deploy/grafana's, the trace export's variables in every hermesd container, the console's
settings on the api role (secrets by reference). Then every file in values/bad/ must be refused
with the message its first line names (`# expect: ...`). Last, each check is run on a broken
copy of a good render, to show it can fail.

This file runs everything and prints the summary; the work is in its neighbours:
  rendering.py          paths, constants, values sets, Render, lint, schema validation
  checks_workloads.py   property checks on the Deployments and the Job: labels, pod security,
                        probes, Services, resources, drain, PDBs, spread, env, config, images
  checks_platform.py    property checks on the rest: migrations, service accounts, RBAC, the
                        sandbox namespace, docker backend, autoscaling, Ingress, ServiceMonitor, NOTES
  checks_observability.py  the dashboard ConfigMap, PrometheusRule and rule-file ConfigMap against
                        deploy/grafana/; the OTLP trace variables (telemetry.otlp)
  negative_checks.py    values the chart must refuse, and broken renders each check must catch
  deploy/dev/tally.py   runs and counts the named checks (deploy/grafana/check.py's too)

Deps: helm-python-sdk==0.2.2 (import helm_python), kubernetes-validate==1.37.0, pyyaml.
Usage: python3 helm/tests/check.py [-v]. Exit status 1 on any failure.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ next to the tests
sys.path.insert(1, str(Path(__file__).resolve().parents[2] / "deploy/dev"))  # tally.py, shared with deploy/grafana

import helm_python as helm  # noqa: E402

from checks_observability import check_observability, check_traces  # noqa: E402
from checks_platform import (check_autoscaling, check_docker_backend, check_egress_trusted_cas, check_ingress,  # noqa: E402
                             check_migrations, check_notes, check_rbac, check_sandbox_namespace, check_service_accounts,
                             check_service_monitor)
from checks_workloads import (check_admin, check_config_env, check_env, check_images, check_labels_and_selectors,  # noqa: E402
                              check_pdbs, check_pod_security, check_probes_and_ports, check_resources, check_services,
                              check_topology_spread, check_worker_drain)
from negative_checks import check_breakages, check_refusals  # noqa: E402
from rendering import K8S_VERSION, SCENARIOS, Render, check_schemas, lint_errors, load_values  # noqa: E402
from tally import Tally  # noqa: E402

CHECKS = [check_schemas, check_labels_and_selectors, check_pod_security, check_probes_and_ports, check_services,
          check_resources, check_worker_drain, check_pdbs, check_topology_spread, check_env, check_config_env, check_images,
          check_migrations, check_service_accounts, check_rbac, check_sandbox_namespace, check_docker_backend,
          check_egress_trusted_cas,
          check_autoscaling, check_ingress, check_service_monitor, check_observability, check_traces, check_notes,
          check_admin]


# --- driver -----------------------------------------------------------------------------------------

def main() -> int:
    tally = Tally(catch=Exception)  # a render or lint that raises is a finding too
    record = tally.record

    renders: dict[str, Render] = {}
    print(f"== helm-python-sdk {helm.helm_c_version()} (Helm {helm.helm_sdk_version()}), Kubernetes {K8S_VERSION} schemas")
    for name, files in SCENARIOS:
        values = load_values(*files)

        def lint_ok(values=values):
            errors = lint_errors(values)
            assert not errors, "lint: " + " | ".join(e.strip() for e in errors)
        record(f"{name}: lint --strict", lint_ok)

        def render(name=name, values=values):
            renders[name] = Render(name, values)
        record(f"{name}: render", render)
        if name not in renders:
            continue
        for check in CHECKS:
            record(f"{name}: {check.__name__[6:]}", lambda check=check, r=renders[name]: check(r))

    # Wrong values must be refused, by lint and by render, with the message the file names.
    check_refusals(record)

    # Each check must catch a broken copy of a render it passed.
    check_breakages(record, renders)

    return tally.summary("helm chart")


if __name__ == "__main__":
    sys.exit(main())
