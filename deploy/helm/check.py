"""Lints, renders and validates the Tagger Helm chart offline: `npm run chart:lint` / `npm run chart:render`.

Helm's own lint (strict) and render through helm-python-sdk (Helm's Go SDK as a library: no helm binary,
no cluster, no network), then every rendered object checked strictly against the Kubernetes API schemas
of 1.30 and 1.37 (kubernetes-validate). The same checks test/deploy/kubernetes.test.ts runs. Needs the
project's Python venv (`bash scripts/setup-python.sh`).

    python deploy/helm/check.py lint   [-f values.yaml]... [--set k=v]... [--set-string k=v]... [--kube-version 1.30.0]...
    python deploy/helm/check.py render [same options]      # the manifests, as `helm template` prints them
    python deploy/helm/check.py --json                      # for the tests: a JSON command on stdin

`lint` prints what it found and exits 1 on any lint error or warning, render error or schema violation.
With `--json` it reads {"chart": path, "sets": {name: values}, "kube_versions": [...], "manifests":
{name: yaml text}} and prints per value set the lint report, the rendered objects and every schema
violation, and per given manifest text (e.g. `kubectl kustomize` output) its objects and violations.
"""
import argparse
import json
import os
import sys

import helm_python as helm
import jsonschema
import kubernetes_validate
import yaml

CHART = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tagger")
KUBE_VERSIONS = ["1.30.0", "1.37.0"]
OPERATOR_SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prometheus-operator.schema.json")


def operator_schemas():
    """The Prometheus Operator's PrometheusRule and ServiceMonitor, as the chart writes them: custom
    resources kubernetes-validate has no schema for (prometheus-operator.schema.json, from the
    operator's API reference), keyed by apiVersion/kind."""
    with open(OPERATOR_SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    return {
        f"monitoring.coreos.com/v1/{kind}": {**schema, "$ref": f"#/{kind}"}
        for kind in ("PrometheusRule", "ServiceMonitor")
    }


def validate_all(objects, versions, crd_schemas):
    problems = []
    for obj in objects:
        schema = crd_schemas.get(f"{obj.get('apiVersion')}/{obj.get('kind')}")
        if schema is not None:
            for error in jsonschema.Draft7Validator(schema).iter_errors(obj):
                problems.append(f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}: {error.message} at {list(error.path)}")
            continue
        for version in versions:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                problems.append(f"{version} {obj.get('kind')}/{obj.get('metadata', {}).get('name')}: {error.message} at {list(error.path)}")
            except kubernetes_validate.SchemaNotFoundError as error:
                problems.append(f"{version} {obj.get('kind')}: no schema ({error})")
    return problems


def check_set(chart_path, values, versions, crd_schemas, name="tagger", namespace="tagger"):
    """Lint, render and validate one set of values: the report the test and `lint` read."""
    chart = helm.Chart.load(chart_path)
    entry = {"lint": None, "objects": [], "rendered": {}, "problems": [], "render_error": None}
    try:
        chart.validate_schema(values)
        entry["lint"] = helm.lint(chart_path, values, strict=True, kube_version="v" + versions[0])
        rendered = chart.render(values, name=name, namespace=namespace, is_install=True)
        for path, text in sorted(rendered.items()):
            if not path.endswith(".yaml") or not text.strip():
                continue
            entry["rendered"][path] = text
            entry["objects"].extend(doc for doc in yaml.safe_load_all(text) if doc)
        entry["problems"] = validate_all(entry["objects"], versions, crd_schemas)
    except Exception as error:  # noqa: BLE001 - reported to the caller, which decides
        entry["render_error"] = f"{type(error).__name__}: {error}"
    return entry


def run_json():
    command = json.load(sys.stdin)
    versions = command["kube_versions"]
    crd_schemas = command.get("crd_schemas") or operator_schemas()
    out = {"sets": {}, "manifests": {}}
    for name, values in command["sets"].items():
        out["sets"][name] = check_set(command["chart"], values, versions, crd_schemas)
    for name, text in command.get("manifests", {}).items():
        objects = [doc for doc in yaml.safe_load_all(text) if doc]
        out["manifests"][name] = {"objects": objects, "problems": validate_all(objects, versions, crd_schemas)}
    json.dump(out, sys.stdout)
    return 0


def merge(base, extra):
    """Helm's rule for -f and --set: maps merge key by key, anything else is replaced."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


class Ordered(argparse.Action):
    """Keeps -f, --set and --set-string in the order given, as Helm applies them."""

    def __call__(self, parser, namespace, value, option_string=None):
        namespace.sources = [*getattr(namespace, "sources", []), (self.dest, value)]


def values_from(sources):
    values = {}
    for kind, value in sources:
        if kind == "values":
            with open(value, encoding="utf-8") as handle:
                merge(values, helm.values_from_yaml(handle.read()) or {})
        elif kind == "set":
            merge(values, helm.parse_set_string(value))
        else:
            merge(values, helm.parse_set_string_values(value))
    return values


def main():
    if sys.argv[1:] == ["--json"]:
        return run_json()
    helm.disable_logging()  # its warnings repeat the errors printed below
    parser = argparse.ArgumentParser(
        prog="npm run chart:lint / chart:render --",
        description="Lint, render and validate deploy/helm/tagger offline (Helm's SDK and the Kubernetes schemas).",
    )
    parser.add_argument("command", choices=["lint", "render"])
    parser.add_argument("-f", "--values", dest="values", action=Ordered, metavar="FILE", help="a values file (several: applied in order)")
    parser.add_argument("--set", dest="set", action=Ordered, metavar="KEY=VALUE", help="a value, typed as Helm types it (several allowed)")
    parser.add_argument("--set-string", dest="set_string", action=Ordered, metavar="KEY=VALUE", help="a value kept as a string")
    parser.add_argument("--kube-version", action="append", metavar="X.Y.Z", help=f"Kubernetes versions to validate against (default {', '.join(KUBE_VERSIONS)})")
    parser.add_argument("--name", default="tagger", help="release name (default tagger)")
    parser.add_argument("--namespace", default="tagger", help="namespace (default tagger)")
    args = parser.parse_args()
    try:
        values = values_from(getattr(args, "sources", []))
    except (OSError, helm.HelmError) as error:
        print(f"chart: {error}", file=sys.stderr)
        return 2
    versions = args.kube_version or KUBE_VERSIONS
    entry = check_set(CHART, values, versions, operator_schemas(), args.name, args.namespace)

    if args.command == "render":
        if entry["render_error"]:
            print(f"chart: cannot render: {entry['render_error']}", file=sys.stderr)
            return 1
        for path, text in entry["rendered"].items():
            sys.stdout.write(f"---\n# Source: {path}\n{text.strip()}\n")
        for problem in entry["problems"]:
            print(f"chart: schema violation: {problem}", file=sys.stderr)
        return 1 if entry["problems"] else 0

    failed = False
    if entry["render_error"]:
        print(f"render: {entry['render_error']}")
        return 1
    lint = entry["lint"]
    for message in lint["messages"]:
        level = {1: "info", 2: "WARNING", 3: "ERROR"}.get(message["severity"], "unknown")
        print(f"lint [{level}] {message['path']}: {message['error']}")
        failed = failed or message["severity"] >= 2
    for error in lint["errors"]:
        print(f"lint [ERROR] {error}")
        failed = True
    kinds = sorted({f"{o['kind']}/{o['metadata']['name']}" for o in entry["objects"]})
    print(f"render: {len(entry['objects'])} objects ({', '.join(kinds)})")
    for problem in entry["problems"]:
        print(f"schema: {problem}")
        failed = True
    verdict = "problems found" if failed else "ok"
    print(f"chart deploy/helm/tagger, Kubernetes {', '.join(versions)}: {verdict}")
    return 1 if failed else 0


sys.exit(main())
