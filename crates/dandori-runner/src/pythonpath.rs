//! A Python project installed editable into the prepared environment imports
//! from the directory it was installed from: the run's environment tree
//! (`__editable__.flask-2.3.pth` holds `<repo>/.git/dandori/environment/tree/src`;
//! the user's checkout for an environment set up there by hand). Steps, their
//! agents and the baseline run in worktrees of their own, so without more a
//! step's tests would import the base commit's code, not the step's change
//! (Flask's `src/` layout: a fix the tests never saw). The import roots the
//! environment points into its checkout are found once; every command run in
//! a worktree gets the worktree's counterparts first on `PYTHONPATH`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::evidence::runner_hooks::PYTHONPATH;

/// The directories under `main` (relative to it: the checkout the environment
/// was prepared in) that the virtual environment of `env` (`VIRTUAL_ENV`) imports from: plain path lines of its `*.pth`
/// files, and the package directories setuptools' editable finders map
/// (`__editable___pkg_finder.py`), by their parent. In the order found.
pub fn import_roots(env: &BTreeMap<String, String>, main: &Path) -> Vec<PathBuf> {
    let Some(venv) = env.get("VIRTUAL_ENV") else {
        return Vec::new();
    };
    let main = dandori_fs::canonicalize(main).unwrap_or_else(|_| main.to_path_buf());
    let mut roots = Vec::new();
    let mut add = |p: &Path| {
        if let Ok(rel) = p.strip_prefix(&main)
            && !rel.starts_with(".dandori")
            && !roots.iter().any(|r: &PathBuf| r == rel)
        {
            roots.push(rel.to_path_buf());
        }
    };
    for site in site_packages(Path::new(venv)) {
        let Ok(entries) = std::fs::read_dir(&site) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let pth = name.ends_with(".pth");
            let finder = name.starts_with("__editable__") && name.ends_with("_finder.py");
            if !pth && !finder {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            if pth {
                for line in text.lines().map(str::trim) {
                    if line.starts_with('/') {
                        add(Path::new(line));
                    }
                }
            } else {
                for path in quoted_absolute_paths(&text) {
                    if let Some(parent) = Path::new(&path).parent() {
                        add(parent);
                    }
                }
            }
        }
    }
    roots
}

/// `<venv>/lib/python*/site-packages`.
fn site_packages(venv: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(venv.join("lib")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .filter(|p| p.is_dir())
        .collect()
}

/// The string literals of `text` that are absolute paths (`'/x/src/pkg'`).
fn quoted_absolute_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for quote in ['\'', '"'] {
        let mut parts = text.split(quote);
        parts.next();
        while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
            if inside.starts_with('/') && !inside.contains('\n') {
                out.push(inside.to_string());
            }
        }
    }
    out
}

/// `env` for a command run in `dir`, a worktree of `main`: the worktree's
/// counterparts of `roots` first on `PYTHONPATH`. Not checked for existence
/// here: an overlay workspace is mounted in the sandbox's namespace only, and
/// Python skips an entry that does not exist.
pub fn apply(env: &mut BTreeMap<String, String>, dir: &Path, roots: &[PathBuf]) {
    let paths: Vec<String> = roots
        .iter()
        .map(|r| dir.join(r).display().to_string())
        .collect();
    prepend(env, &paths);
}

/// `entries` first on `env`'s `PYTHONPATH`, before what it held.
pub fn prepend(env: &mut BTreeMap<String, String>, entries: &[String]) {
    if entries.is_empty() {
        return;
    }
    let mut paths = entries.to_vec();
    if let Some(existing) = env.get(PYTHONPATH).filter(|p| !p.is_empty()) {
        paths.push(existing.clone());
    }
    env.insert(PYTHONPATH.to_string(), paths.join(":"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pth_lines_and_editable_finders_under_the_checkout_are_roots() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("repo");
        let site = main.join(".venv/lib/python3.12/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        std::fs::create_dir_all(main.join("src/flask")).unwrap();
        std::fs::create_dir_all(main.join("libs/util/util")).unwrap();
        let m = main.display();
        std::fs::write(
            site.join("__editable__.flask-2.3.pth"),
            format!("{m}/src\n"),
        )
        .unwrap();
        std::fs::write(
            site.join("distutils-precedence.pth"),
            "import os; var = 'X'\n/usr/lib/python3/dist-packages\n",
        )
        .unwrap();
        std::fs::write(
            site.join("__editable___util_1_0_finder.py"),
            format!("MAPPING = {{'util': '{m}/libs/util/util'}}\nNAMESPACES = {{}}\n"),
        )
        .unwrap();
        let env = BTreeMap::from([(
            "VIRTUAL_ENV".to_string(),
            main.join(".venv").display().to_string(),
        )]);
        let roots = import_roots(&env, &main);
        assert_eq!(
            roots,
            vec![PathBuf::from("src"), PathBuf::from("libs/util")]
        );

        let wt = tmp.path().join("wt");
        let mut env = BTreeMap::from([("PYTHONPATH".to_string(), "/mine".to_string())]);
        apply(&mut env, &wt, &roots);
        // The worktree's, then the user's own.
        let want = format!(
            "{}:{}:/mine",
            wt.join("src").display(),
            wt.join("libs/util").display()
        );
        assert_eq!(env["PYTHONPATH"], want);
    }
}
