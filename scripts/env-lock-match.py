#!/usr/bin/env python3
"""Whether the packages `dandori env setup` installed have the versions the
repository's lock file names (issue 22; used by scripts/env-bench.sh).

    scripts/env-lock-match.py REPO

Prints one line: `yes (N checked)`, `no (K of N differ: name lock→installed, …)`
or `- (reason)` when there is no lock or nothing installed to compare.

Python (uv.lock, poetry.lock, pdm.lock): every distribution installed in
`.venv` (its `*.dist-info/METADATA`) that the lock holds at one version.
Node: package-lock.json — every `node_modules/…` entry against the installed
`package.json`; pnpm-lock.yaml — the `node_modules/.pnpm/<name>@<version>`
directories pnpm made against the lock's packages; yarn.lock — the top-level
`node_modules/<name>/package.json` against the lock's resolutions of that name.
"""
import json
import os
import re
import sys
import tomllib


def norm(n):
    return re.sub(r"[-_.]+", "-", n).lower()


def same(a, b):
    t = lambda v: re.sub(r"(\.0)+$", "", v)
    return a == b or t(a) == t(b)


def report(pairs):
    """pairs: (name, locked, installed)"""
    if not pairs:
        return "- (nothing installed that the lock names)"
    bad = [p for p in pairs if not same(p[1], p[2])]
    if not bad:
        return f"yes ({len(pairs)} checked)"
    shown = ", ".join(f"{n} {l}→{i}" for n, l, i in bad[:5])
    return f"no ({len(bad)} of {len(pairs)} differ: {shown})"


def python(repo, lock):
    doc = tomllib.load(open(os.path.join(repo, lock), "rb"))
    versions = {}
    for p in doc.get("package", []):
        src = p.get("source")
        if isinstance(src, dict) and not ("registry" in src or src.get("type") in ("legacy", "pypi")):
            continue
        if "name" in p and "version" in p:
            versions.setdefault(norm(p["name"]), set()).add(p["version"])
    installed = {}
    lib = os.path.join(repo, ".venv", "lib")
    if not os.path.isdir(lib):
        return "- (no .venv)"
    for py in os.listdir(lib):
        sp = os.path.join(lib, py, "site-packages")
        if not os.path.isdir(sp):
            continue
        for d in os.listdir(sp):
            if not d.endswith(".dist-info"):
                continue
            try:
                meta = open(os.path.join(sp, d, "METADATA"), errors="replace").read()
            except OSError:
                continue
            head = meta.split("\n\n", 1)[0]
            n = re.search(r"^Name:\s*(.+)$", head, re.M)
            v = re.search(r"^Version:\s*(.+)$", head, re.M)
            if n and v:
                installed[norm(n.group(1).strip())] = v.group(1).strip()
    pairs = [(n, next(iter(vs)), installed[n]) for n, vs in versions.items()
             if len(vs) == 1 and n in installed]
    return report(pairs)


def npm(repo):
    lock = json.load(open(os.path.join(repo, "package-lock.json")))
    pairs = []
    for path, meta in lock.get("packages", {}).items():
        if not path.startswith("node_modules/") or "version" not in meta or meta.get("link"):
            continue
        pj = os.path.join(repo, path, "package.json")
        if os.path.isfile(pj):
            pairs.append((path[len("node_modules/"):], meta["version"], json.load(open(pj)).get("version", "")))
    return report(pairs)


def pnpm(repo):
    text = open(os.path.join(repo, "pnpm-lock.yaml")).read()
    m = re.search(r"^packages:\n(.*?)(?=^\S|\Z)", text, re.M | re.S)
    locked = set()
    for key in re.findall(r"^  '?/?(@?[^@\s']+)@([^(:'\s]+)", m.group(1) if m else "", re.M):
        locked.add(key)
    store = os.path.join(repo, "node_modules", ".pnpm")
    if not os.path.isdir(store):
        return "- (no node_modules/.pnpm)"
    pairs = []
    lock_names = {}
    for n, v in locked:
        lock_names.setdefault(n, set()).add(v)
    for d in os.listdir(store):
        if d in ("node_modules", "lock.yaml") or d.startswith("."):
            continue
        base = d.split("_")[0] if not d.startswith("@") else d
        base = re.sub(r"\(.*$", "", base)
        mm = re.match(r"^(@[^+]+\+[^@]+|[^@]+)@([^_(]+)", base)
        if not mm:
            continue
        name = mm.group(1).replace("+", "/", 1) if mm.group(1).startswith("@") else mm.group(1)
        ver = mm.group(2)
        if name in lock_names:
            pairs.append((name, ver if ver in lock_names[name] else sorted(lock_names[name])[0], ver))
    return report(pairs)


def yarn(repo):
    text = open(os.path.join(repo, "yarn.lock")).read()
    resolved = {}
    for block in re.split(r"\n\n+", text):
        lines = block.strip().splitlines()
        if not lines or lines[0].startswith("#") or not lines[0].endswith(":"):
            continue
        head = lines[0].rstrip(":")
        v = re.search(r'^\s+version:? "?([^"\s]+)"?', block, re.M)
        if not v:
            continue
        # Every descriptor of the entry (`a@npm:^1, a-alias@npm:a@^1`) resolves to it.
        for desc in head.split(","):
            name = re.match(r"^(@?[^@]+)@", desc.strip().strip('"'))
            if name:
                resolved.setdefault(name.group(1), set()).add(v.group(1))
    pairs = []
    nm = os.path.join(repo, "node_modules")
    if not os.path.isdir(nm):
        return "- (no node_modules: Plug'n'Play)"
    for n, vs in resolved.items():
        pj = os.path.join(nm, n, "package.json")
        if os.path.isfile(pj):
            got = json.load(open(pj)).get("version", "")
            pairs.append((n, got if got in vs else sorted(vs)[0], got))
    return report(pairs)


def main():
    repo = sys.argv[1]
    has = lambda f: os.path.isfile(os.path.join(repo, f))
    try:
        for lock in ("uv.lock", "poetry.lock", "pdm.lock"):
            if has(lock):
                print(python(repo, lock))
                return
        if has("package-lock.json"):
            print(npm(repo))
        elif has("pnpm-lock.yaml"):
            print(pnpm(repo))
        elif has("yarn.lock"):
            print(yarn(repo))
        else:
            print("- (no lock file)")
    except (OSError, ValueError, tomllib.TOMLDecodeError) as e:
        print(f"- (cannot compare: {e})")


main()
