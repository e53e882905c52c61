//! Environment fidelity (issue 22): the lock's versions are what gets installed
//! (`uv sync --frozen`; poetry.lock and pdm.lock as constraints), a pin the
//! registry does not serve blocks the setup, manifests are read right. Real uv
//! and npm against a package index served from 127.0.0.1 with real wheels built
//! here: no internet.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use dandori_config::AnalysisConfig;
use dandori_env::analyzer::DependencyKind;
use dandori_env::lockfile;
use dandori_env::records::{ENV_PACKAGE_UNAVAILABLE, OverallStatus};
use dandori_env::setup::{self, SetupOptions};
use dandori_env::{Toolchain, analyze, select_environment_with};

use super::{git_init, require_tool, system_env};

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (p, text) in files {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// A static file server on 127.0.0.1 (a directory's `index.html` for its
/// path, 404 for anything missing): the network edge of a package index.
struct FileServer {
    port: u16,
}

impl FileServer {
    fn start(root: PathBuf) -> FileServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let root = root.clone();
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).to_string();
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let path = path.split(['?', '#']).next().unwrap_or("/").to_string();
                    let path = path.replace("%2f", "/").replace("%2F", "/");
                    let mut file = root.join(path.trim_start_matches('/'));
                    if file.is_dir() {
                        // A PEP 691 page (with PEP 700 upload times), a PEP
                        // 503 one, or an npm packument.
                        file = if file.join("index.v1.json").is_file() {
                            file.join("index.v1.json")
                        } else if file.join("index.json").is_file() {
                            file.join("index.json")
                        } else {
                            file.join("index.html")
                        };
                    }
                    let (status, body, kind) = match std::fs::read(&file) {
                        Ok(b) => (
                            "200 OK",
                            b,
                            if file.ends_with("index.v1.json") {
                                "application/vnd.pypi.simple.v1+json"
                            } else if file.extension().is_some_and(|e| e == "html") {
                                "text/html"
                            } else if file.extension().is_some_and(|e| e == "json") {
                                "application/json"
                            } else {
                                "application/octet-stream"
                            },
                        ),
                        Err(_) => ("404 Not Found", b"Not Found".to_vec(), "text/plain"),
                    };
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(&body);
                });
            }
        });
        FileServer { port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }
}

/// A PEP 503 index in `root` (`simple/<name>/`, `files/`) with real wheels.
pub(super) struct Index {
    root: PathBuf,
    server: FileServer,
}

const WHEEL_PY: &str = r#"
import base64, hashlib, os, sys, zipfile
out, name, version = sys.argv[1:4]
mod = name.replace("-", "_")
info = f"{mod}-{version}.dist-info"
files = {
    f"{mod}/__init__.py": f"VERSION = {version!r}\n",
    f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: dandori-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
lines = []
for p, t in files.items():
    d = base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b"=").decode()
    lines.append(f"{p},sha256={d},{len(t.encode())}")
lines.append(f"{info}/RECORD,,")
files[f"{info}/RECORD"] = "\n".join(lines) + "\n"
whl = f"{mod}-{version}-py3-none-any.whl"
with zipfile.ZipFile(os.path.join(out, whl), "w") as z:
    for p, t in files.items():
        z.writestr(p, t)
print(whl)
"#;

impl Index {
    pub(super) fn new(root: &Path) -> Index {
        std::fs::create_dir_all(root.join("files")).unwrap();
        Index {
            root: root.to_path_buf(),
            server: FileServer::start(root.to_path_buf()),
        }
    }

    /// Builds `name`-`version` as a wheel and lists it in the index.
    pub(super) fn publish(&self, name: &str, version: &str) {
        let out = std::process::Command::new("python3")
            .args(["-c", WHEEL_PY])
            .arg(self.root.join("files"))
            .args([name, version])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let dir = self.root.join("simple").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut links = String::new();
        for e in std::fs::read_dir(self.root.join("files")).unwrap() {
            let f = e.unwrap().file_name().to_string_lossy().to_string();
            if f.starts_with(&format!("{}-", name.replace('-', "_"))) {
                links.push_str(&format!("<a href=\"../../files/{f}\">{f}</a>\n"));
            }
        }
        std::fs::write(
            dir.join("index.html"),
            format!("<!DOCTYPE html><html><body>\n{links}</body></html>\n"),
        )
        .unwrap();
    }

    /// The project's page as PyPI's JSON API serves it (PEP 691), each wheel
    /// with its upload time (PEP 700): what `--exclude-newer` reads.
    pub(super) fn publish_dated(&self, name: &str, versions: &[(&str, &str)]) {
        let mut files = Vec::new();
        for (version, uploaded) in versions {
            self.publish(name, version);
            let f = format!("{}-{version}-py3-none-any.whl", name.replace('-', "_"));
            let bytes = std::fs::read(self.root.join("files").join(&f)).unwrap();
            let out = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],'rb').read()).hexdigest())",
                ])
                .arg(self.root.join("files").join(&f))
                .output()
                .unwrap();
            assert!(out.status.success() && !bytes.is_empty());
            files.push(serde_json::json!({
                "filename": f,
                "url": self.server.url(&format!("files/{f}")),
                "hashes": {"sha256": String::from_utf8_lossy(&out.stdout).trim()},
                "upload-time": uploaded,
            }));
        }
        let page = serde_json::json!({
            "meta": {"api-version": "1.1"},
            "name": name,
            "files": files,
            "versions": versions.iter().map(|(v, _)| *v).collect::<Vec<_>>(),
        });
        std::fs::write(
            self.root.join("simple").join(name).join("index.v1.json"),
            page.to_string(),
        )
        .unwrap();
    }

    fn simple(&self) -> String {
        self.server.url("simple/")
    }
}

/// The system PATH plus uv, the index as the only registry, the package caches
/// in `tmp` (nothing of the user's is touched).
pub(super) fn index_env(index: &Index, tmp: &Path) -> BTreeMap<String, String> {
    require_tool("uv");
    let path = std::env::var("PATH").unwrap_or_default();
    let uv = dandori_exec::run::find_program("uv", &path, Path::new("/")).unwrap();
    let mut env = system_env();
    let sys_path = env["PATH"].clone();
    env.insert(
        "PATH".into(),
        format!("{}:{sys_path}", uv.parent().unwrap().display()),
    );
    env.insert("UV_INDEX_URL".into(), index.simple());
    env.insert("UV_DEFAULT_INDEX".into(), index.simple());
    env.insert(
        "UV_CACHE_DIR".into(),
        tmp.join("uv-cache").display().to_string(),
    );
    env.insert("UV_PYTHON_DOWNLOADS".into(), "never".into());
    env.insert("UV_NO_CONFIG".into(), "1".into());
    env.insert("npm_config_registry".into(), index.server.url(""));
    env.insert(
        "npm_config_cache".into(),
        tmp.join("npm-cache").display().to_string(),
    );
    env
}

fn run(repo: &Path, env: &BTreeMap<String, String>, argv: &[&str]) {
    let spec =
        dandori_exec::CommandSpec::program(argv[0], argv[1..].iter().map(|a| a.to_string()), repo)
            .env(env.clone());
    let o = dandori_exec::run_command(&spec).unwrap();
    assert!(o.success(), "{argv:?}: {}{}", o.stdout_tail, o.stderr_tail);
}

pub(super) fn setup_in(
    repo: &Path,
    env: &BTreeMap<String, String>,
    tools: &[&str],
) -> (
    dandori_plan::SelectedEnvironment,
    dandori_env::setup::SetupOutcome,
) {
    let a = analyze(repo, &AnalysisConfig::default());
    let sel = select_environment_with(&a, None, &Toolchain::with(tools));
    let mut opts = SetupOptions::new(repo);
    opts.base_env = env.clone();
    opts.backoff_base = std::time::Duration::from_millis(10);
    let out = setup::run(&sel, &opts).unwrap();
    (sel, out)
}

#[test]
fn uv_lock_is_installed_frozen_with_the_test_group() {
    let tmp = tempfile::tempdir().unwrap();
    let index = Index::new(&tmp.path().join("index"));
    index.publish("demo-lib", "1.0");
    index.publish("demo-tool", "1.0");
    let env = index_env(&index, tmp.path());
    let repo = tmp.path().join("repo");
    write(
        &repo,
        &[(
            "pyproject.toml",
            "[project]\nname = \"locked-app\"\nversion = \"0.1.0\"\nrequires-python = \">=3.8\"\n\
             dependencies = [\"demo-lib>=1.0\"]\n\n[dependency-groups]\ntest = [\"demo-tool\"]\n\n\
             [tool.uv]\npackage = false\n",
        )],
    );
    run(&repo, &env, &["uv", "lock"]);
    git_init(&repo);
    // A newer release appears after the lock was written: a fresh resolution
    // would take it, the lock says 1.0.
    index.publish("demo-lib", "2.0");
    let (sel, out) = setup_in(&repo, &env, &["uv", "python3"]);
    assert_eq!(sel.setup_commands, vec!["uv sync --frozen --group test"]);
    assert_eq!(
        out.overall_status,
        OverallStatus::Success,
        "{:#?}",
        out.setup_result
    );
    let installed = lockfile::installed_in_venv(&repo.join(".venv"));
    assert_eq!(installed.get("demo-lib").map(String::as_str), Some("1.0"));
    assert_eq!(installed.get("demo-tool").map(String::as_str), Some("1.0"));
    let pins = lockfile::parse(
        "uv.lock",
        &std::fs::read_to_string(repo.join("uv.lock")).unwrap(),
    )
    .unwrap();
    // The project itself (`source = { virtual = "." }`) is not a pin.
    assert!(pins.iter().all(|p| p.name != "locked-app"), "{pins:?}");
    assert!(lockfile::mismatches(&pins, &installed).is_empty());
}

const POETRY_LOCK: &str = r#"# This file is automatically @generated by Poetry 2.1.1 and should not be changed by hand.

[[package]]
name = "demo-lib"
version = "1.0"
description = ""
optional = false
python-versions = "*"
groups = ["main"]
files = [
    {file = "demo_lib-1.0-py3-none-any.whl", hash = "sha256:00"},
]

[[package]]
name = "demo-tool"
version = "1.0"
description = ""
optional = false
python-versions = "*"
groups = ["test"]
files = []

[[package]]
name = "pywin32"
version = "306"
description = "Python for Window Extensions"
optional = false
python-versions = "*"
groups = ["main"]
markers = "sys_platform == \"win32\""
files = []

[metadata]
lock-version = "2.1"
python-versions = "^3.8"
content-hash = "0000"
"#;

const PDM_LOCK: &str = r#"# This file is @generated by PDM.
# It is not intended for manual editing.

[metadata]
groups = ["default", "test"]
strategy = ["inherit_metadata"]
lock_version = "4.5.0"
content_hash = "sha256:00"

[[metadata.targets]]
requires_python = ">=3.8"

[[package]]
name = "demo-lib"
version = "1.0"
requires_python = ">=3.8"
summary = ""
groups = ["default"]
files = []

[[package]]
name = "demo-tool"
version = "1.0"
summary = ""
groups = ["test"]
files = []
"#;

/// poetry.lock and pdm.lock without poetry or pdm: the lock's versions as
/// constraints of the pip install (a Windows-only package of the lock is not
/// installed, and needs not exist in the index).
#[test]
fn poetry_and_pdm_locks_constrain_the_install_without_their_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let index = Index::new(&tmp.path().join("index"));
    for v in ["1.0", "2.0"] {
        index.publish("demo-lib", v);
        index.publish("demo-tool", v);
    }
    let env = index_env(&index, tmp.path());
    let cases = [
        (
            "poetry.lock",
            POETRY_LOCK,
            "[tool.poetry]\nname = \"poetry-app\"\nversion = \"0.1.0\"\ndescription = \"\"\nauthors = []\n\n\
             [tool.poetry.dependencies]\npython = \"^3.8\"\ndemo-lib = \">=1.0\"\n\n\
             [tool.poetry.group.test.dependencies]\ndemo-tool = \"*\"\n",
        ),
        (
            "pdm.lock",
            PDM_LOCK,
            "[project]\nname = \"pdm-app\"\nversion = \"0.1.0\"\nrequires-python = \">=3.8\"\n\
             dependencies = [\"demo-lib>=1.0\"]\n\n[tool.pdm.dev-dependencies]\ntest = [\"demo-tool\"]\n",
        ),
    ];
    for (lock, lock_text, pyproject) in cases {
        let repo = tmp.path().join(lock.replace('.', "-"));
        write(
            &repo,
            &[
                ("pyproject.toml", pyproject),
                (lock, lock_text),
                ("app.py", ""),
            ],
        );
        git_init(&repo);
        let (sel, out) = setup_in(&repo, &env, &["uv", "python3"]);
        assert!(
            sel.setup_commands
                .iter()
                .any(|c| c.contains("-c .venv/dandori-lock-constraints.txt")),
            "{lock}: {:#?}",
            sel.setup_commands
        );
        assert_eq!(
            out.overall_status,
            OverallStatus::Success,
            "{lock}: {:#?}",
            out.setup_result
        );
        let installed = lockfile::installed_in_venv(&repo.join(".venv"));
        assert_eq!(
            installed.get("demo-lib").map(String::as_str),
            Some("1.0"),
            "{lock}: {installed:?}"
        );
        assert_eq!(
            installed.get("demo-tool").map(String::as_str),
            Some("1.0"),
            "{lock}: {installed:?}"
        );
        assert!(!installed.contains_key("pywin32"), "{lock}");
        let constraints =
            std::fs::read_to_string(repo.join(".venv/dandori-lock-constraints.txt")).unwrap();
        assert!(constraints.contains("demo-lib==1.0\n"), "{constraints}");
    }
}

/// The setup is blocked with `ENV_PACKAGE_UNAVAILABLE`, its reason naming `what`.
fn assert_blocked_on(out: &setup::SetupOutcome, what: &str) {
    assert_eq!(
        out.overall_status,
        OverallStatus::Blocked,
        "{:#?}",
        out.setup_result
    );
    let blocked = out.setup_result.blocked.clone().unwrap();
    assert_eq!(blocked.code, ENV_PACKAGE_UNAVAILABLE);
    assert!(blocked.reason.contains(what), "{}", blocked.reason);
}

#[test]
fn a_pin_the_index_lacks_blocks_the_setup_naming_package_and_version() {
    let tmp = tempfile::tempdir().unwrap();
    let index = Index::new(&tmp.path().join("index"));
    index.publish("demo-lib", "1.0");
    let env = index_env(&index, tmp.path());
    let repo = tmp.path().join("repo");
    write(
        &repo,
        &[("requirements.txt", "demo-lib==9.9.9\n"), ("app.py", "")],
    );
    git_init(&repo);
    let (_, out) = setup_in(&repo, &env, &["uv", "python3"]);
    assert_blocked_on(&out, "`demo-lib` 9.9.9");
    // Not retried, not regenerated: one attempt as of the commit's date (the
    // pin may be newer than the commit), one against today's index.
    let attempts = out
        .setup_result
        .commands_executed
        .iter()
        .filter(|c| c.command.contains("requirements.txt"))
        .count();
    assert_eq!(attempts, 2, "{:#?}", out.setup_result.commands_executed);
    assert_eq!(out.setup_result.resolved_as_of, None);
}

/// `npm ci` with a lock whose pinned tarball the registry answers with 404 (what
/// cookie met with `top-sites@1.1.225`).
#[test]
fn npm_ci_of_a_tarball_the_registry_lacks_is_blocked() {
    require_tool("npm");
    let tmp = tempfile::tempdir().unwrap();
    let index = Index::new(&tmp.path().join("index"));
    let env = index_env(&index, tmp.path());
    let repo = tmp.path().join("repo");
    let tarball = index.server.url("top-sites/-/top-sites-1.1.225.tgz");
    let lock = serde_json::json!({
        "name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
        "packages": {
            "": {"name": "app", "version": "1.0.0", "dependencies": {"top-sites": "1.1.225"}},
            "node_modules/top-sites": {
                "version": "1.1.225",
                "resolved": tarball,
                "integrity": "sha512-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
            }
        }
    });
    write(
        &repo,
        &[
            (
                "package.json",
                "{\"name\": \"app\", \"version\": \"1.0.0\", \"dependencies\": {\"top-sites\": \"1.1.225\"}}\n",
            ),
            ("package-lock.json", &lock.to_string()),
        ],
    );
    git_init(&repo);
    let mut env = env;
    let path = std::env::var("PATH").unwrap_or_default();
    env.insert("PATH".into(), path);
    let (sel, out) = setup_in(&repo, &env, &["npm", "node"]);
    assert_eq!(sel.setup_commands[0], "npm ci --no-audit --no-fund");
    assert_blocked_on(&out, "`top-sites` 1.1.225");
}

#[test]
fn setup_py_install_requires_through_a_variable_is_its_list() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        &[(
            "setup.py",
            "from setuptools import setup\n\n\
             INSTALL_REQUIRES = [\n    \"requests[socks]>=2.0\",  # comment with ] bracket\n    'click',\n]\n\
             TESTS = (\"pytest\",)\n\n\
             setup(\n    name=\"demo\",\n    classifiers=[\n        \"Development Status :: 5 - Production/Stable\",\n    ],\n    \
             install_requires=INSTALL_REQUIRES,\n    tests_require=TESTS,\n)\n",
        )],
    );
    let a = analyze(tmp.path(), &AnalysisConfig::default());
    let e = a.ecosystem("python").unwrap();
    let prod: Vec<&str> = e
        .dependencies
        .iter()
        .filter(|d| d.kind == DependencyKind::Prod)
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(prod, vec!["requests", "click"]);
    let dev: Vec<&str> = e
        .dependencies
        .iter()
        .filter(|d| d.kind == DependencyKind::Dev)
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(dev, vec!["pytest"]);
    assert!(
        !e.dependencies
            .iter()
            .any(|d| d.name.contains("Development")),
        "{:#?}",
        e.dependencies
    );
}

#[test]
fn a_broken_pyproject_fails_the_setup_with_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"demo\"\ndependencies = [\"requests\"\n\n[tool.pytest]\n",
            ),
            ("demo/__init__.py", ""),
        ],
    );
    git_init(tmp.path());
    let (_, out) = setup_in(tmp.path(), &system_env(), &["uv", "python3"]);
    assert_eq!(
        out.overall_status,
        OverallStatus::Failed,
        "{:#?}",
        out.errors
    );
    assert!(out.setup_result.commands_executed.is_empty());
    assert!(
        out.errors
            .iter()
            .any(|e| e.contains("ConfigSyntaxError") && e.contains("pyproject.toml:5:")),
        "{:#?}",
        out.errors
    );
    assert!(!tmp.path().join(".venv").exists());
}

#[test]
fn a_readme_only_directory_gets_no_virtual_environment() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), &[("README.md", "# notes\n")]);
    git_init(tmp.path());
    let (sel, out) = setup_in(tmp.path(), &system_env(), &["uv", "python3"]);
    assert!(sel.setup_commands.is_empty(), "{:#?}", sel.setup_commands);
    assert_eq!(
        out.overall_status,
        OverallStatus::Success,
        "{:#?}",
        out.errors
    );
    assert!(!tmp.path().join(".venv").exists());
}

#[test]
fn lock_files_parse_to_pins_and_a_broken_lock_names_its_line() {
    let pins = lockfile::parse("poetry.lock", POETRY_LOCK).unwrap();
    let names: Vec<(&str, &str)> = pins
        .iter()
        .map(|p| (p.name.as_str(), p.version.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("demo-lib", "1.0"),
            ("demo-tool", "1.0"),
            ("pywin32", "306")
        ]
    );
    let uv = "version = 1\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\nsource = { editable = \".\" }\n\n\
              [[package]]\nname = \"Foo_Bar\"\nversion = \"1.2\"\nsource = { registry = \"https://pypi.org/simple\" }\n\n\
              [[package]]\nname = \"numpy\"\nversion = \"1.26.4\"\nsource = { registry = \"https://pypi.org/simple\" }\n\n\
              [[package]]\nname = \"numpy\"\nversion = \"2.1.0\"\nsource = { registry = \"https://pypi.org/simple\" }\n";
    let pins = lockfile::parse("uv.lock", uv).unwrap();
    assert_eq!(
        pins,
        vec![lockfile::Pin {
            name: "foo-bar".into(),
            version: "1.2".into()
        }]
    );
    let err = lockfile::parse("pdm.lock", "[[package]]\nname = \"x\"\nversion = \n").unwrap_err();
    assert!(err.starts_with("pdm.lock:3:"), "{err}");
}

const TARBALL_PY: &str = r#"
import base64, hashlib, io, json, os, sys, tarfile
root, base, name, version = sys.argv[1:5]
pkg = json.dumps({"name": name, "version": version, "main": "index.js"}).encode()
index = f"module.exports = {version!r};\n".encode()
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as t:
    for p, data in (("package/package.json", pkg), ("package/index.js", index)):
        info = tarfile.TarInfo(p)
        info.size = len(data)
        info.mode = 0o644
        t.addfile(info, io.BytesIO(data))
data = buf.getvalue()
d = os.path.join(root, name, "-")
os.makedirs(d, exist_ok=True)
fname = f"{name}-{version}.tgz"
open(os.path.join(d, fname), "wb").write(data)
meta = os.path.join(root, name, "index.json")
doc = json.load(open(meta)) if os.path.exists(meta) else {"name": name, "versions": {}, "dist-tags": {}}
doc["versions"][version] = {
    "name": name, "version": version, "main": "index.js",
    "dist": {
        "tarball": f"{base}{name}/-/{fname}",
        "shasum": hashlib.sha1(data).hexdigest(),
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
    },
}
doc["dist-tags"]["latest"] = version
json.dump(doc, open(meta, "w"))
"#;

impl Index {
    /// Publishes `name@version` to the npm side of the server (a packument at
    /// `/<name>`, the tarball at `/<name>/-/<name>-<version>.tgz`), as `latest`.
    fn publish_npm(&self, name: &str, version: &str) {
        let out = std::process::Command::new("python3")
            .args(["-c", TARBALL_PY])
            .arg(self.root.join("npm"))
            .arg(self.server.url("npm/"))
            .args([name, version])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
}

/// npm, pnpm and yarn 1 install what their lock says: the lock was written
/// when `demo-lib` 1.0.0 was the latest release; 2.0.0 is published after, and
/// the manifest's range (`>=1.0.0`) would take it.
#[test]
fn node_locks_are_installed_exactly() {
    for tool in ["npm", "pnpm", "yarn"] {
        require_tool(tool);
    }
    let tmp = tempfile::tempdir().unwrap();
    let index = Index::new(&tmp.path().join("index"));
    index.publish_npm("demo-lib", "1.0.0");
    let mut env = index_env(&index, tmp.path());
    env.insert("PATH".into(), std::env::var("PATH").unwrap_or_default());
    env.insert("npm_config_registry".into(), index.server.url("npm/"));
    env.insert(
        "npm_config_store_dir".into(),
        tmp.path().join("pnpm-store").display().to_string(),
    );
    env.insert(
        "YARN_CACHE_FOLDER".into(),
        tmp.path().join("yarn-cache").display().to_string(),
    );
    // The package manager is told by its lock file alone.
    let manifest = "{\"name\": \"app\", \"version\": \"1.0.0\", \"dependencies\": {\"demo-lib\": \">=1.0.0\"}}\n";
    let mut repos = Vec::new();
    for (pm, lock_cmd, lock) in [
        (
            "npm",
            vec!["npm", "install", "--package-lock-only"],
            "package-lock.json",
        ),
        (
            "pnpm",
            vec!["pnpm", "install", "--lockfile-only"],
            "pnpm-lock.yaml",
        ),
        (
            "yarn",
            vec!["yarn", "install", "--ignore-scripts"],
            "yarn.lock",
        ),
    ] {
        let repo = tmp.path().join(pm);
        write(&repo, &[("package.json", manifest)]);
        run(&repo, &env, &lock_cmd);
        assert!(repo.join(lock).is_file(), "{pm}: no {lock}");
        let _ = std::fs::remove_dir_all(repo.join("node_modules"));
        git_init(&repo);
        repos.push((pm, repo));
    }
    index.publish_npm("demo-lib", "2.0.0");
    for (pm, repo) in repos {
        let (sel, out) = setup_in(&repo, &env, &["node", "npm", "pnpm", "yarn"]);
        let want = match pm {
            "npm" => "npm ci --no-audit --no-fund",
            "pnpm" => "pnpm install --frozen-lockfile",
            _ => "yarn install --frozen-lockfile",
        };
        assert_eq!(sel.setup_commands, vec![want], "{pm}");
        assert_ne!(
            out.overall_status,
            OverallStatus::Failed,
            "{pm}: {:#?}",
            out.setup_result
        );
        let installed: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(repo.join("node_modules/demo-lib/package.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(installed["version"], "1.0.0", "{pm}");
    }
}

/// The optional "first dependency present" check names a dependency the install
/// installs: not one of a nested `package.json` that is no workspace member
/// (node-lru-cache's `scripts/`, reselect's `website/`).
#[test]
fn the_node_dependency_check_skips_nested_manifests_outside_workspaces() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        &[
            (
                "package.json",
                "{\"name\": \"lib\", \"devDependencies\": {\"tap\": \"^21\"}}\n",
            ),
            (
                "package-lock.json",
                "{\"lockfileVersion\": 3, \"packages\": {}}\n",
            ),
            (
                "scripts/package.json",
                "{\"name\": \"scripts\", \"dependencies\": {\"heapdump\": \"^0.3\"}}\n",
            ),
        ],
    );
    let a = analyze(tmp.path(), &AnalysisConfig::default());
    let sel = select_environment_with(&a, None, &Toolchain::with(&["node", "npm"]));
    assert!(
        !sel.verification_commands
            .iter()
            .any(|c| c.contains("heapdump")),
        "{:#?}",
        sel.verification_commands
    );
}
