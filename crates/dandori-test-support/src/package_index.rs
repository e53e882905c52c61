//! A package index on 127.0.0.1, so journeys install without internet: a PEP 503
//! simple index of wheel files (`/simple/<project>/`) and an npm registry of
//! package tarballs (`/npm/<name>`, tarballs under `/npm/<name>/-/`), both
//! static files in one directory behind a small HTTP/1.1 server.
//!
//! The wheels and tarballs are real releases that `scripts/test.sh` downloads
//! once (`target/test-tools/wheels`, `target/test-tools/npm-tarballs`); the
//! index lists them as PyPI and the npm registry would.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// A running index, served until the process ends (one thread per connection).
pub struct PackageIndex {
    root: PathBuf,
    port: u16,
}

impl PackageIndex {
    /// Serves `root` (created when missing) from a free port on 127.0.0.1.
    pub fn start(root: &Path) -> PackageIndex {
        std::fs::create_dir_all(root)
            .unwrap_or_else(|e| panic!("creating {}: {e}", root.display()));
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("binding the package index: {e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("package index address: {e}"))
            .port();
        let served = root.to_path_buf();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let root = served.clone();
                std::thread::spawn(move || answer(stream, &root));
            }
        });
        PackageIndex {
            root: root.to_path_buf(),
            port,
        }
    }

    /// `http://127.0.0.1:PORT/<path>`: a file or directory of the served root
    /// (a gem source under `gems/`, a Composer repository under `composer/`).
    pub fn url(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}/{}",
            self.port,
            path.trim_start_matches('/')
        )
    }

    /// The directory served.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `http://127.0.0.1:PORT/simple/`: for `PIP_INDEX_URL`, `UV_DEFAULT_INDEX`.
    pub fn simple_url(&self) -> String {
        format!("http://127.0.0.1:{}/simple/", self.port)
    }

    /// `http://127.0.0.1:PORT/npm/`: for `npm_config_registry`.
    pub fn npm_url(&self) -> String {
        format!("http://127.0.0.1:{}/npm/", self.port)
    }

    /// Lists every `*.whl` of `dir` under its normalized project name (PEP 503),
    /// linked with its sha256 as PyPI does.
    pub fn add_wheels(&self, dir: &Path) {
        assert!(
            dir.is_dir(),
            "{} is missing: run ./scripts/test.sh, which downloads the wheels",
            dir.display()
        );
        let script = r#"
import hashlib, os, re, shutil, sys
src, root = sys.argv[1:3]
by_project = {}
for f in sorted(os.listdir(src)):
    if f.endswith(".whl"):
        project = re.sub(r"[-_.]+", "-", f.split("-")[0]).lower()
        by_project.setdefault(project, []).append(f)
os.makedirs(os.path.join(root, "files"), exist_ok=True)
for project, files in by_project.items():
    d = os.path.join(root, "simple", project)
    os.makedirs(d, exist_ok=True)
    links = []
    for f in files:
        dest = os.path.join(root, "files", f)
        if not os.path.exists(dest):
            try:
                os.link(os.path.join(src, f), dest)
            except OSError:
                shutil.copyfile(os.path.join(src, f), dest)
        digest = hashlib.sha256(open(dest, "rb").read()).hexdigest()
        links.append(f'<a href="../../files/{f}#sha256={digest}">{f}</a><br/>')
    open(os.path.join(d, "index.html"), "w").write(
        "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")
projects = sorted(os.listdir(os.path.join(root, "simple")))
open(os.path.join(root, "simple", "index.html"), "w").write(
    "<!DOCTYPE html><html><body>\n"
    + "\n".join(f'<a href="{p}/">{p}</a><br/>' for p in projects) + "\n</body></html>\n")
print(len(by_project))
"#;
        let n = python(script, &[dir, &self.root]);
        assert_ne!(
            n.trim(),
            "0",
            "no wheels in {}: run ./scripts/test.sh, which downloads them",
            dir.display()
        );
    }

    /// Publishes every `*.tgz` of `dir` (npm package tarballs, as `npm pack`
    /// writes them): a packument per name with each version's own
    /// `package.json`, its `dist` (tarball URL, shasum, sha512 integrity) and
    /// the highest version as `latest`.
    pub fn add_npm_tarballs(&self, dir: &Path) {
        assert!(
            dir.is_dir(),
            "{} is missing: run ./scripts/test.sh, which downloads the npm tarballs",
            dir.display()
        );
        let script = r#"
import base64, hashlib, json, os, shutil, sys, tarfile
src, root, base = sys.argv[1:4]
n = 0
for f in sorted(os.listdir(src)):
    if not f.endswith(".tgz"):
        continue
    data = open(os.path.join(src, f), "rb").read()
    with tarfile.open(os.path.join(src, f)) as t:
        member = next(m for m in t.getmembers() if m.name.split("/", 1)[-1] == "package.json" and m.name.count("/") == 1)
        manifest = json.load(t.extractfile(member))
    name, version = manifest["name"], manifest["version"]
    d = os.path.join(root, "npm", name)
    os.makedirs(os.path.join(d, "-"), exist_ok=True)
    fname = f"{name.split('/')[-1]}-{version}.tgz"
    shutil.copyfile(os.path.join(src, f), os.path.join(d, "-", fname))
    meta = os.path.join(d, "index.json")
    doc = json.load(open(meta)) if os.path.exists(meta) else {"name": name, "versions": {}, "dist-tags": {}}
    manifest["dist"] = {
        "tarball": f"{base}{name}/-/{fname}",
        "shasum": hashlib.sha1(data).hexdigest(),
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
    }
    doc["versions"][version] = manifest
    key = lambda v: [int(x) if x.isdigit() else 0 for x in v.split("-")[0].split(".")]
    doc["dist-tags"]["latest"] = max(doc["versions"], key=key)
    json.dump(doc, open(meta, "w"))
    n += 1
print(n)
"#;
        let base = self.npm_url();
        let n = python(script, &[dir, &self.root, Path::new(&base)]);
        assert_ne!(
            n.trim(),
            "0",
            "no npm tarballs in {}: run ./scripts/test.sh, which downloads them",
            dir.display()
        );
    }
}

fn python(script: &str, args: &[&Path]) -> String {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running python3 for the package index: {e}"));
    assert!(
        out.status.success(),
        "building the package index: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One request: the file at its path (a directory's `index.json`, else its
/// `index.html`), 404 when missing. `HEAD` gets the headers alone.
fn answer(mut stream: std::net::TcpStream, root: &Path) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let mut words = head.split_whitespace();
    let method = words.next().unwrap_or("GET").to_string();
    let path = words.next().unwrap_or("/");
    let path = path.split(['?', '#']).next().unwrap_or("/");
    // Scoped npm names arrive as `@scope%2fname`.
    let path = path
        .replace("%2f", "/")
        .replace("%2F", "/")
        .replace("%40", "@");
    if path.split('/').any(|part| part == "..") {
        let _ = stream.write_all(
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    }
    let mut file = root.join(path.trim_start_matches('/'));
    if file.is_dir() {
        file = if file.join("index.json").is_file() {
            file.join("index.json")
        } else {
            file.join("index.html")
        };
    }
    let (status, body, kind) = match std::fs::read(&file) {
        Ok(b) => {
            let kind = match file.extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html",
                Some("json") => "application/json",
                _ => "application/octet-stream",
            };
            ("200 OK", b, kind)
        }
        Err(_) => ("404 Not Found", b"Not Found".to_vec(), "text/plain"),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        let _ = stream.write_all(&body);
    }
}
