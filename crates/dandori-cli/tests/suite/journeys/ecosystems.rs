//! The journeys' repositories: one small package per ecosystem (a module with
//! `add`, its tests with the ecosystem's usual runner), the request every user
//! writes first (add `mul` next to `add`, three acceptance criteria), and the
//! edits an honest agent makes for it at its first step (function, export and
//! tests), as data its script applies.

use serde_json::{Value, json};

pub struct Ecosystem {
    pub name: &'static str,
    /// The repository as committed: path and text.
    pub files: Vec<(&'static str, String)>,
    /// The repository's own test command, as its README says to run it.
    pub test: &'static [&'static str],
    /// The whole feature: `{path, old, new, test}` (`old` empty: append).
    pub edits: Value,
    /// A test of the feature, as the test command's output names it.
    pub feature_test: &'static str,
    /// A file of the run's branch and what it must then hold.
    pub landed: (&'static str, &'static str),
}

fn request(module: &str, import: &str) -> String {
    format!(
        "# Multiplication\n\nAdd `mul(a, b)` to `{module}`: it returns the product of `a` and `b`. \
         Export it from the\npackage next to `add`.\n\n## Acceptance criteria\n\
         - Given 2 and 3, when `mul(2, 3)` is called, then it returns `6`.\n\
         - Given 4 and 0, when `mul(4, 0)` is called, then it returns `0`.\n\
         - Given the package, when `{import}` runs, then it succeeds.\n"
    )
}

const PY_INIT: &str =
    "\"\"\"Small arithmetic helpers.\"\"\"\nfrom .core import add\n\n__all__ = [\"add\"]\n";
const PY_CORE: &str = "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    return a + b\n";
const PY_TEST: &str = "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    \
    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";
const PY_MUL_TESTS: &str = "\n\nclass MulTest(unittest.TestCase):\n    def test_product(self):\n        \
    from calc import mul\n        self.assertEqual(mul(2, 3), 6)\n\n    def test_zero(self):\n        \
    from calc import mul\n        self.assertEqual(mul(4, 0), 0)\n";

const SETUPTOOLS_PYPROJECT: &str = "[project]\nname = \"calc\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\n\n\
    [build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
    [tool.setuptools]\npackages = [\"calc\"]\n";

/// `src/` layout: the package under `src/`, installed editable from there (the
/// environment's `.pth` names the user's checkout); the step's tests must
/// import the step's worktree, not the checkout.
const SRC_PYPROJECT: &str = "[project]\nname = \"calc\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\n\n\
    [build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
    [tool.setuptools.packages.find]\nwhere = [\"src\"]\n";

fn python(name: &'static str, manifest: &[(&'static str, &str)]) -> Ecosystem {
    python_in(name, "", manifest)
}

/// The Python package with its `calc/` under `prefix` (`""` or `"src/"`).
fn python_in(name: &'static str, prefix: &str, manifest: &[(&'static str, &str)]) -> Ecosystem {
    let at = |path: &str| -> &'static str { Box::leak(format!("{prefix}{path}").into_boxed_str()) };
    let mut files = vec![
        (
            "README.md",
            "# calc\n\nSmall arithmetic helpers. Run the tests with `python -m unittest discover`.\n"
                .to_string(),
        ),
        (".gitignore", "__pycache__/\n*.egg-info/\n".to_string()),
        (at("calc/__init__.py"), PY_INIT.to_string()),
        (at("calc/core.py"), PY_CORE.to_string()),
        ("tests/__init__.py", String::new()),
        ("tests/test_core.py", PY_TEST.to_string()),
        (
            "requests/mul.md",
            request(at("calc/core.py"), "from calc import mul"),
        ),
    ];
    files.extend(manifest.iter().map(|(p, t)| (*p, t.to_string())));
    let main = "\n\nif __name__ == \"__main__\":";
    Ecosystem {
        name,
        files,
        test: &["python", "-m", "unittest", "discover", "-v"],
        edits: json!([
            {"path": at("calc/core.py"), "old": "", "test": false,
             "new": "\n\ndef mul(a, b):\n    \"\"\"The product of a and b.\"\"\"\n    return a * b\n"},
            {"path": at("calc/__init__.py"), "old": "from .core import add\n", "new": "from .core import add, mul\n", "test": false},
            {"path": at("calc/__init__.py"), "old": "__all__ = [\"add\"]", "new": "__all__ = [\"add\", \"mul\"]", "test": false},
            {"path": "tests/test_core.py", "old": main, "new": format!("{PY_MUL_TESTS}{main}"), "test": true},
        ]),
        feature_test: "test_product",
        landed: (at("calc/core.py"), "def mul(a, b)"),
    }
}

const NODE_INDEX: &str =
    "\"use strict\";\n\nfunction add(a, b) {\n  return a + b;\n}\n\nmodule.exports = { add };\n";
const NODE_TEST: &str = "\"use strict\";\n\nconst test = require(\"node:test\");\n\
    const assert = require(\"node:assert/strict\");\nconst { add } = require(\"..\");\n\n\
    test(\"add\", () => {\n  assert.equal(add(2, 3), 5);\n});\n";
const NODE_MANIFEST: &str = "{\n  \"name\": \"calc\",\n  \"version\": \"0.1.0\",\n  \
    \"description\": \"Small arithmetic helpers\",\n  \"main\": \"index.js\",\n  \
    \"scripts\": {\n    \"test\": \"node --test\"\n  },\n  \"license\": \"MIT\"\n}\n";
const NPM_LOCK: &str = "{\n  \"name\": \"calc\",\n  \"version\": \"0.1.0\",\n  \"lockfileVersion\": 3,\n  \
    \"requires\": true,\n  \"packages\": {\n    \"\": {\n      \"name\": \"calc\",\n      \
    \"version\": \"0.1.0\",\n      \"license\": \"MIT\"\n    }\n  }\n}\n";
const PNPM_LOCK: &str = "lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n  \
    excludeLinksFromLockfile: false\n\nimporters:\n\n  .: {}\n";
const YARN_LOCK: &str =
    "# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.\n# yarn lockfile v1\n\n\n";

fn node(
    name: &'static str,
    lock: (&'static str, &str),
    test: &'static [&'static str],
) -> Ecosystem {
    let exports = "module.exports = { add };";
    Ecosystem {
        name,
        files: vec![
            (
                "README.md",
                format!(
                    "# calc\n\nSmall arithmetic helpers. Run the tests with `{}`.\n",
                    test.join(" ")
                ),
            ),
            (".gitignore", "node_modules/\n".to_string()),
            ("package.json", NODE_MANIFEST.to_string()),
            ("index.js", NODE_INDEX.to_string()),
            ("test/calc.test.js", NODE_TEST.to_string()),
            (lock.0, lock.1.to_string()),
            (
                "requests/mul.md",
                request("index.js", "const { mul } = require(\"calc\")"),
            ),
        ],
        test,
        edits: json!([
            {"path": "index.js", "old": exports, "test": false,
             "new": "function mul(a, b) {\n  return a * b;\n}\n\nmodule.exports = { add, mul };"},
            {"path": "test/calc.test.js", "old": "", "test": true,
             "new": "\ntest(\"mul\", () => {\n  const { mul } = require(\"..\");\n  assert.equal(mul(2, 3), 6);\n  assert.equal(mul(4, 0), 0);\n});\n"},
        ]),
        feature_test: "mul",
        landed: ("index.js", "function mul(a, b)"),
    }
}

const CARGO_TOML: &str =
    "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n";
const CARGO_LOCK: &str = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\n\
    version = 4\n\n[[package]]\nname = \"calc\"\nversion = \"0.1.0\"\n";
const LIB_RS: &str = "//! Small arithmetic helpers.\n\n/// The sum of `a` and `b`.\npub fn add(a: i64, b: i64) -> i64 {\n    \
    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn adds() {\n        \
    assert_eq!(add(2, 3), 5);\n    }\n}\n";

fn cargo() -> Ecosystem {
    let tests = "\n#[cfg(test)]";
    Ecosystem {
        name: "cargo",
        files: vec![
            (
                "README.md",
                "# calc\n\nSmall arithmetic helpers. Run the tests with `cargo test`.\n"
                    .to_string(),
            ),
            (".gitignore", "/target\n".to_string()),
            ("Cargo.toml", CARGO_TOML.to_string()),
            ("Cargo.lock", CARGO_LOCK.to_string()),
            ("src/lib.rs", LIB_RS.to_string()),
            ("requests/mul.md", request("src/lib.rs", "use calc::mul;")),
        ],
        test: &["cargo", "test"],
        edits: json!([
            {"path": "src/lib.rs", "old": tests, "test": false,
             "new": format!("\n/// The product of `a` and `b`.\npub fn mul(a: i64, b: i64) -> i64 {{\n    a * b\n}}\n{tests}")},
            {"path": "tests/mul.rs", "old": "", "test": true,
             "new": "use calc::mul;\n\n#[test]\nfn product() {\n    assert_eq!(mul(2, 3), 6);\n}\n\n#[test]\nfn zero() {\n    assert_eq!(mul(4, 0), 0);\n}\n"},
        ]),
        feature_test: "product",
        landed: ("src/lib.rs", "pub fn mul(a: i64, b: i64)"),
    }
}

/// uv.lock as `uv lock` writes it for the setuptools package (no dependencies).
const UV_LOCK: &str = "version = 1\nrevision = 5\nrequires-python = \">=3.9\"\n\n[[package]]\nname = \"calc\"\n\
    version = \"0.1.0\"\nsource = { editable = \".\" }\n";
const POETRY_PYPROJECT: &str = "[tool.poetry]\nname = \"calc\"\nversion = \"0.1.0\"\n\
    description = \"Small arithmetic helpers\"\nauthors = [\"Journey <journey@example.invalid>\"]\n\
    packages = [{ include = \"calc\" }]\n\n[tool.poetry.dependencies]\npython = \"^3.9\"\n\n\
    [build-system]\nrequires = [\"poetry-core>=1.0.0\"]\nbuild-backend = \"poetry.core.masonry.api\"\n";
const POETRY_LOCK: &str = "# This file is automatically @generated by Poetry 2.1.1 and should not be changed by hand.\n\
    package = []\n\n[metadata]\nlock-version = \"2.1\"\npython-versions = \"^3.9\"\n\
    content-hash = \"8b5f4a4b1e1c9d1f0c4e3b9f3a7d2e6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e\"\n";
const SETUP_PY: &str = "from setuptools import setup\n\nsetup(\n    name=\"calc\",\n    version=\"0.1.0\",\n    \
    description=\"Small arithmetic helpers\",\n    packages=[\"calc\"],\n    python_requires=\">=3.9\",\n)\n";

/// The eight ecosystems of the matrix, in the order of the table.
pub fn all() -> Vec<Ecosystem> {
    vec![
        python(
            "pip (pyproject + setuptools)",
            &[("pyproject.toml", SETUPTOOLS_PYPROJECT)],
        ),
        python("setup.py", &[("setup.py", SETUP_PY)]),
        python_in(
            "src layout (pyproject + setuptools)",
            "src/",
            &[("pyproject.toml", SRC_PYPROJECT)],
        ),
        python(
            "uv.lock",
            &[
                ("pyproject.toml", SETUPTOOLS_PYPROJECT),
                ("uv.lock", UV_LOCK),
            ],
        ),
        python(
            "poetry.lock",
            &[
                ("pyproject.toml", POETRY_PYPROJECT),
                ("poetry.lock", POETRY_LOCK),
            ],
        ),
        node("npm", ("package-lock.json", NPM_LOCK), &["npm", "test"]),
        node("pnpm", ("pnpm-lock.yaml", PNPM_LOCK), &["pnpm", "test"]),
        node("yarn 1", ("yarn.lock", YARN_LOCK), &["yarn", "test"]),
        cargo(),
    ]
}

/// The honest agent of an ecosystem: a Python script (python3 is in every image
/// here) that applies the whole feature at its first step and finds nothing
/// left at later ones; at a step whose targets are all tests it writes the
/// tests only. Like ../shared/journeys/agent.py, with the edits as data.
pub fn agent_script(eco: &Ecosystem) -> String {
    format!(
        r#"#!/usr/bin/env python3
import json, os, re, sys

EDITS = json.loads(r'''{edits}''')
prompt = " ".join(sys.argv[1:])
t = re.search(r"change only:\s*([^\n]+)", prompt)
targets = [x.strip() for x in t.group(1).split(",")] if t else []
tests_only = bool(targets) and all(x.startswith("test") for x in targets)
for e in EDITS:
    if tests_only and not e["test"]:
        continue
    path = e["path"]
    text = open(path).read() if os.path.exists(path) else ""
    if e["new"] in text:
        continue
    text = text.replace(e["old"], e["new"], 1) if e["old"] else text + e["new"]
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").write(text)
print("ok")
"#,
        edits = serde_json::to_string(&eco.edits).unwrap()
    )
}
