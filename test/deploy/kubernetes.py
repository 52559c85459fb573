"""Renders and validates the Helm chart offline, for test/deploy/kubernetes.test.ts.

Reads a JSON command on stdin: {"chart": path, "sets": {name: values}, "kube_versions": [...],
"manifests": {name: yaml text}} and prints one JSON object: per value set the lint report, the
rendered objects and every schema violation (kubernetes-validate, strict) per Kubernetes version;
per given manifest text (e.g. `kubectl kustomize` output) the objects and violations.
Uses helm-python-sdk (Helm's Go SDK as a shared library: no helm binary, no cluster, no network).
"""
import json
import sys

import helm_python as helm
import jsonschema
import kubernetes_validate
import yaml


def validate_all(objects, versions, crd_schemas):
    problems = []
    for obj in objects:
        # Custom resources (the Prometheus Operator's) have no schema in kubernetes-validate: the test
        # passes the fields it knows (test/deploy/prometheus-operator.schema.json), checked with jsonschema.
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


def main():
    command = json.load(sys.stdin)
    versions = command["kube_versions"]
    crd_schemas = command.get("crd_schemas", {})
    chart = helm.Chart.load(command["chart"])
    out = {"sets": {}, "manifests": {}}
    for name, values in command["sets"].items():
        entry = {"lint": None, "objects": [], "problems": [], "render_error": None}
        try:
            chart.validate_schema(values)
            entry["lint"] = helm.lint(command["chart"], values, strict=True, kube_version="v" + versions[0])
            rendered = chart.render(values, name="tagger", namespace="tagger", is_install=True)
            for path, text in sorted(rendered.items()):
                if not path.endswith(".yaml"):
                    continue
                entry["objects"].extend(doc for doc in yaml.safe_load_all(text) if doc)
            entry["problems"] = validate_all(entry["objects"], versions, crd_schemas)
        except Exception as error:  # noqa: BLE001 - reported to the test, which decides
            entry["render_error"] = f"{type(error).__name__}: {error}"
        out["sets"][name] = entry
    for name, text in command.get("manifests", {}).items():
        objects = [doc for doc in yaml.safe_load_all(text) if doc]
        out["manifests"][name] = {"objects": objects, "problems": validate_all(objects, versions, crd_schemas)}
    json.dump(out, sys.stdout)


main()
