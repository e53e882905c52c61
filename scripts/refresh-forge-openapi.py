#!/usr/bin/env python3
"""Refresh crates/dandori-forge/openapi/gitlab-subset.json from GitLab's official description.

GitHub needs no subset: dandori-forge's OpenAPI test reads GitHub's official
descriptions from npm @octokit/openapi, which scripts/test.sh installs.

GitLab's official description is doc/api/openapi/openapi_v2.yaml in the GitLab
repository (Swagger 2.0, paths under /api/v4, schemas under #/definitions). It
is on no package registry, so the subset is committed. For every operation of
the subset that the official file describes, its request and response schemas
are replaced with the official ones, resolved ($ref) and pruned to the
properties the subset lists (the fields dandori reads or writes); `required`
keeps the official entries among those properties. Operations it does not
describe keep their documented shapes (reported on stderr).

Usage: scripts/refresh-forge-openapi.py [--gitlab-file F]
(an offline copy instead of downloading). Needs PyYAML.
"""
import argparse
import json
import pathlib
import sys
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent / "crates/dandori-forge/openapi"
GITLAB_URL = "https://gitlab.com/gitlab-org/gitlab/-/raw/master/doc/api/openapi/openapi_v2.yaml"


def load(url, path):
    if path:
        text = pathlib.Path(path).read_text()
    else:
        with urllib.request.urlopen(url, timeout=120) as r:
            text = r.read().decode()
    if url.endswith(".yaml"):
        import yaml  # noqa: PLC0415

        return yaml.safe_load(text)
    return json.loads(text)


def resolve(doc, node, depth=0):
    if depth > 40:
        return {}
    if isinstance(node, dict):
        if "$ref" in node:
            target = doc
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            return resolve(doc, target, depth + 1)
        return {k: resolve(doc, v, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve(doc, v, depth + 1) for v in node]
    return node


def prune(official, ours):
    """The official schema cut down to the shape of ours."""
    if not isinstance(official, dict) or not isinstance(ours, dict):
        return ours
    for key in ("oneOf", "anyOf", "allOf"):
        if key in official and key not in ours:
            # Take the first official alternative that is an object when ours is.
            alts = [a for a in official[key] if a.get("type") == ours.get("type")]
            if alts:
                official = alts[0]
    out = {k: v for k, v in official.items() if k in ("type", "nullable", "format", "enum")}
    if "properties" in ours:
        props = official.get("properties", {})
        out["type"] = "object"
        out["properties"] = {
            name: prune(props.get(name, sub), sub) for name, sub in ours["properties"].items()
        }
        out["required"] = [r for r in official.get("required", []) if r in ours["properties"]]
    if "items" in ours:
        out["type"] = "array"
        out["items"] = prune(official.get("items", {}), ours["items"])
    if "oneOf" in ours:
        out["oneOf"] = ours["oneOf"]
    return out or ours


def official_operation(doc, template, method):
    """The official operation: OpenAPI 3 paths as they are, Swagger 2 under /api/v4."""
    paths = doc.get("paths", {})
    op = paths.get(template, {}).get(method) or paths.get("/api/v4" + template, {}).get(method)
    return resolve(doc, op) if op else None


def request_schema(op):
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
    if "schema" in body:
        return body["schema"]
    # Swagger 2: the body is a parameter.
    return next((p["schema"] for p in op.get("parameters", []) if p.get("in") == "body"), None)


def response_schema(resp):
    return resp.get("content", {}).get("application/json", {}).get("schema") or resp.get("schema")


def refresh(name, url, path):
    file = ROOT / f"{name}-subset.json"
    subset = json.loads(file.read_text())
    doc = load(url, path)
    missing = []
    for p, ops in subset["paths"].items():
        for method, op in ops.items():
            official = official_operation(doc, p, method)
            if official is None:
                missing.append(f"{method.upper()} {p}")
                continue
            body = request_schema(official)
            if "requestBody" in op and body:
                ours = op["requestBody"]["content"]["application/json"]["schema"]
                op["requestBody"]["content"]["application/json"]["schema"] = prune(body, ours)
            for code, resp in op.get("responses", {}).items():
                off = response_schema(official.get("responses", {}).get(code, {}))
                if off and "content" in resp:
                    ours = resp["content"]["application/json"]["schema"]
                    resp["content"]["application/json"]["schema"] = prune(off, ours)
    file.write_text(json.dumps(subset, indent=2) + "\n")
    for m in missing:
        print(f"{name}: {m} is not in the official description; kept as documented", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gitlab-file")
    a = ap.parse_args()
    refresh("gitlab", GITLAB_URL, a.gitlab_file)


if __name__ == "__main__":
    main()
