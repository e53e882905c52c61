#!/usr/bin/env python3
"""Refresh crates/dandori-forge/openapi/*-subset.json from the official descriptions.

GitHub: downloads descriptions/api.github.com/api.github.com.json from
github/rest-api-description and, for every operation already in the subset,
replaces its request and response schemas with the official ones, resolved
($ref) and pruned to the properties the subset lists (the fields dandori reads
or writes). `required` keeps the official entries among those properties.

GitLab: downloads doc/api/openapi/openapi_v2.yaml from the GitLab repository
and does the same for the operations it describes; operations it does not
describe keep their documented shapes (reported on stderr).

Usage: scripts/refresh-forge-openapi.py [--github-file F] [--gitlab-file F]
(the files instead of downloading, for an offline copy). Needs PyYAML for GitLab.
"""
import argparse
import json
import pathlib
import sys
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent / "crates/dandori-forge/openapi"
GITHUB_URL = "https://raw.githubusercontent.com/github/rest-api-description/main/descriptions/api.github.com/api.github.com.json"
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


def refresh(name, url, path):
    file = ROOT / f"{name}-subset.json"
    subset = json.loads(file.read_text())
    doc = load(url, path)
    missing = []
    for p, ops in subset["paths"].items():
        for method, op in ops.items():
            official = doc.get("paths", {}).get(p, {}).get(method)
            if official is None:
                missing.append(f"{method.upper()} {p}")
                continue
            official = resolve(doc, official)
            body = official.get("requestBody", {}).get("content", {}).get("application/json", {})
            if "requestBody" in op and "schema" in body:
                ours = op["requestBody"]["content"]["application/json"]["schema"]
                op["requestBody"]["content"]["application/json"]["schema"] = prune(body["schema"], ours)
            for code, resp in op.get("responses", {}).items():
                off = official.get("responses", {}).get(code, {}).get("content", {}).get("application/json", {})
                if "schema" in off and "content" in resp:
                    ours = resp["content"]["application/json"]["schema"]
                    resp["content"]["application/json"]["schema"] = prune(off["schema"], ours)
    file.write_text(json.dumps(subset, indent=2) + "\n")
    for m in missing:
        print(f"{name}: {m} is not in the official description; kept as documented", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--github-file")
    ap.add_argument("--gitlab-file")
    a = ap.parse_args()
    refresh("github", GITHUB_URL, a.github_file)
    refresh("gitlab", GITLAB_URL, a.gitlab_file)


if __name__ == "__main__":
    main()
