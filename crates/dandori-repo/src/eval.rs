//! File-level localisation on SWE-bench-format instances: the scan and retrieval
//! the planner uses, measured as hit@1/5/10 and the recall of the patched files in
//! the plan's `target_paths` ([`crate::target_paths_for`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::RepoError;
use crate::retrieval::history::{HISTORY_COMMITS, History};
use crate::retrieval::{Bm25Baseline, Hit, Index, target_paths_for};
use crate::scan::{ScanOptions, scan};

/// One evaluation instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instance {
    pub instance_id: String,
    pub repo: String,
    pub base_commit: String,
    pub problem_statement: String,
    /// Files changed by the reference patch.
    pub patched_files: Vec<String>,
}

/// Reads a dataset: a JSON array of instances or JSON lines. The reference
/// patch comes from `patch`, `golden_patch` or a `patch_files` list.
pub fn load_dataset(path: &Path) -> Result<Vec<Instance>, RepoError> {
    let text = dandori_fs::read_to_string(path)?;
    let err = |location: String, message: String| RepoError::Dataset {
        path: path.to_path_buf(),
        location,
        message,
    };
    let trimmed = text.trim_start();
    let values: Vec<(String, serde_json::Value)> = if trimmed.starts_with('[') {
        let v: Vec<serde_json::Value> = serde_json::from_str(&text)
            .map_err(|e| err(format!("line {}", e.line()), e.to_string()))?;
        v.into_iter()
            .enumerate()
            .map(|(i, v)| (format!("[{i}]"), v))
            .collect()
    } else {
        let mut out = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(line)
                .map_err(|e| err(format!("line {}", n + 1), e.to_string()))?;
            out.push((format!("line {}", n + 1), v));
        }
        out
    };
    values
        .into_iter()
        .map(|(loc, v)| instance_from_value(&v).map_err(|m| err(loc, m)))
        .collect()
}

fn instance_from_value(v: &serde_json::Value) -> Result<Instance, String> {
    let field = |name: &str| -> Result<String, String> {
        match v.get(name) {
            Some(serde_json::Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("`{name}` is not a string")),
            None => Err(format!("`{name}` is missing")),
        }
    };
    let instance_id = field("instance_id")?;
    let repo = field("repo")?;
    let base_commit = field("base_commit")?;
    let problem_statement = field("problem_statement")?;
    let patched_files = if let Some(files) = v.get("patch_files") {
        let arr = files
            .as_array()
            .ok_or_else(|| "`patch_files` is not an array".to_string())?;
        arr.iter()
            .map(|f| {
                f.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| "`patch_files` has a non-string entry".to_string())
            })
            .collect::<Result<Vec<_>, _>>()?
    } else {
        let patch = field("patch")
            .or_else(|_| field("golden_patch"))
            .map_err(|_| "none of `patch`, `golden_patch`, `patch_files` is given".to_string())?;
        patched_files(&patch)
    };
    if patched_files.is_empty() {
        return Err("the reference patch changes no file".into());
    }
    Ok(Instance {
        instance_id,
        repo,
        base_commit,
        problem_statement,
        patched_files,
    })
}

/// Files a unified diff changes, from `diff --git` headers (or `+++`/`---`
/// lines), in order of appearance.
pub fn patched_files(diff: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let push = |p: &str, out: &mut Vec<String>| {
        let p = p.trim();
        if !p.is_empty() && p != "/dev/null" && !out.iter().any(|x| x == p) {
            out.push(p.to_string());
        }
    };
    let mut minus: Option<String> = None;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            // `a/x b/x`; paths with spaces are rare in these datasets.
            if let Some((_, b)) = rest.split_once(" b/") {
                push(b, &mut out);
            }
        } else if let Some(rest) = line.strip_prefix("--- ") {
            minus = rest
                .split('\t')
                .next()
                .map(|s| s.strip_prefix("a/").unwrap_or(s).to_string());
        } else if let Some(rest) = line.strip_prefix("+++ ") {
            let plus = rest.split('\t').next().unwrap_or("");
            if plus == "/dev/null" {
                if let Some(m) = minus.take() {
                    push(&m, &mut out);
                }
            } else {
                push(plus.strip_prefix("b/").unwrap_or(plus), &mut out);
            }
        }
    }
    out
}

/// What [`run`] evaluates.
#[derive(Debug, Clone)]
pub struct LocalizeOptions {
    pub dataset: PathBuf,
    /// `<dir>/<instance_id>/`, `<dir>/<owner>__<name>/` or `<dir>/<owner>/<name>/`.
    pub repos: PathBuf,
    /// Also rank with [`Bm25Baseline`].
    pub baseline: bool,
    pub limit: Option<usize>,
    pub scan: ScanOptions,
    /// Which half of the dataset to evaluate (before `limit`).
    pub split: Split,
}

/// The halves of a dataset file: weights are tuned on the instances at even
/// positions (0, 2, …) and reported on those at odd positions, never seen while
/// tuning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Split {
    #[default]
    All,
    /// Even positions of the dataset file.
    Tune,
    /// Odd positions of the dataset file.
    HeldOut,
}

impl Split {
    /// Keeps the instances of this half, in order.
    pub fn select<T>(self, items: Vec<T>) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter(|(i, _)| match self {
                Split::All => true,
                Split::Tune => i % 2 == 0,
                Split::HeldOut => i % 2 == 1,
            })
            .map(|(_, x)| x)
            .collect()
    }
}

/// Ranks computed for one method on one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    /// The top 10 files.
    pub ranked: Vec<String>,
    /// 1-based rank of the first patched file, if in the top 10.
    pub first_hit: Option<usize>,
    pub target_paths: Vec<String>,
    /// Patched files found in `target_paths` / patched files.
    pub target_recall: f64,
    /// The score of each `ranked` file.
    #[serde(default)]
    pub scores: Vec<f32>,
    /// Why each `ranked` file ranks (`mentions a/b.py`, `defines X`, …).
    #[serde(default)]
    pub reasons: Vec<Vec<String>>,
}

/// One repository's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepoMetrics {
    pub dandori: Metrics,
    pub baseline: Option<Metrics>,
}

/// One instance's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceResult {
    pub instance_id: String,
    pub repo: String,
    pub patched_files: Vec<String>,
    pub dandori: Option<Ranking>,
    pub baseline: Option<Ranking>,
    /// Why the instance was skipped (no checkout, checkout failed).
    pub skipped: Option<String>,
    /// Milliseconds spent on this instance (absent when skipped).
    #[serde(default)]
    pub timing: Option<Timing>,
}

/// Where an instance's time went, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Checking out the base commit (0 for an existing tree).
    pub checkout_ms: f64,
    pub scan_ms: f64,
    pub index_ms: f64,
    /// Analysing the problem statement and ranking (what a request costs once
    /// the index exists).
    pub query_ms: f64,
}

/// Percentiles of the per-instance timings, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Latency {
    pub query_p50_ms: f64,
    pub query_p95_ms: f64,
    /// Scan + index + query: a request against a repository not indexed yet.
    pub request_p50_ms: f64,
    pub request_p95_ms: f64,
}

/// The `p`-th percentile (0–100, nearest rank) of `values`; 0 when empty.
fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

fn latency<'a>(timings: impl Iterator<Item = &'a Timing>) -> Latency {
    let (mut query, mut request): (Vec<f64>, Vec<f64>) = timings
        .map(|t| (t.query_ms, t.scan_ms + t.index_ms + t.query_ms))
        .unzip();
    Latency {
        query_p50_ms: percentile(&mut query, 50.0),
        query_p95_ms: percentile(&mut query, 95.0),
        request_p50_ms: percentile(&mut request, 50.0),
        request_p95_ms: percentile(&mut request, 95.0),
    }
}

/// Aggregates over the evaluated instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub instances: usize,
    pub hit_at_1: f64,
    pub hit_at_5: f64,
    pub hit_at_10: f64,
    pub target_recall: f64,
    pub mean_target_paths: f64,
}

/// The evaluation result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalizeReport {
    pub dataset: String,
    pub evaluated: usize,
    pub skipped: usize,
    pub dandori: Metrics,
    pub baseline: Option<Metrics>,
    /// Evaluated instances per repository.
    pub by_repo: BTreeMap<String, usize>,
    /// The metrics per repository.
    #[serde(default)]
    pub per_repo: BTreeMap<String, RepoMetrics>,
    /// Per-request time of the ranking the planner uses (the baseline excluded).
    #[serde(default)]
    pub latency: Latency,
    pub instances: Vec<InstanceResult>,
}

/// Progress of [`run`], for a display.
#[derive(Debug, Clone)]
pub enum Progress<'a> {
    Instance {
        index: usize,
        total: usize,
        instance_id: &'a str,
    },
    Skipped {
        instance_id: &'a str,
        reason: &'a str,
    },
}

/// Evaluates the dataset.
pub fn run(
    options: &LocalizeOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<LocalizeReport, RepoError> {
    let mut instances = options.split.select(load_dataset(&options.dataset)?);
    if let Some(limit) = options.limit {
        instances.truncate(limit);
    }
    if !options.repos.is_dir() {
        return Err(RepoError::RepoNotFound {
            path: options.repos.clone(),
        });
    }
    let total = instances.len();
    let mut results = Vec::with_capacity(total);
    for (index, inst) in instances.iter().enumerate() {
        progress(Progress::Instance {
            index,
            total,
            instance_id: &inst.instance_id,
        });
        let result = match evaluate_instance(inst, options) {
            Ok(r) => r,
            Err(e) => {
                let reason = e.to_string();
                progress(Progress::Skipped {
                    instance_id: &inst.instance_id,
                    reason: &reason,
                });
                InstanceResult {
                    instance_id: inst.instance_id.clone(),
                    repo: inst.repo.clone(),
                    patched_files: inst.patched_files.clone(),
                    dandori: None,
                    baseline: None,
                    skipped: Some(reason),
                    timing: None,
                }
            }
        };
        results.push(result);
    }
    let evaluated: Vec<&InstanceResult> = results.iter().filter(|r| r.skipped.is_none()).collect();
    let mut by_repo = BTreeMap::new();
    for r in &evaluated {
        *by_repo.entry(r.repo.clone()).or_insert(0) += 1;
    }
    let dandori = metrics(evaluated.iter().filter_map(|r| r.dandori.as_ref()));
    let baseline = options
        .baseline
        .then(|| metrics(evaluated.iter().filter_map(|r| r.baseline.as_ref())));
    let per_repo = by_repo
        .keys()
        .map(|repo| {
            let of_repo = || evaluated.iter().filter(move |r| &r.repo == repo);
            let m = RepoMetrics {
                dandori: metrics(of_repo().filter_map(|r| r.dandori.as_ref())),
                baseline: options
                    .baseline
                    .then(|| metrics(of_repo().filter_map(|r| r.baseline.as_ref()))),
            };
            (repo.clone(), m)
        })
        .collect();
    Ok(LocalizeReport {
        latency: latency(evaluated.iter().filter_map(|r| r.timing.as_ref())),
        per_repo,
        dataset: options.dataset.display().to_string(),
        evaluated: evaluated.len(),
        skipped: results.len() - evaluated.len(),
        dandori,
        baseline,
        by_repo,
        instances: results,
    })
}

fn metrics<'a>(rankings: impl Iterator<Item = &'a Ranking>) -> Metrics {
    let mut n = 0usize;
    let (mut h1, mut h5, mut h10, mut recall, mut targets) = (0usize, 0usize, 0usize, 0f64, 0usize);
    for r in rankings {
        n += 1;
        match r.first_hit {
            Some(k) if k <= 1 => {
                h1 += 1;
                h5 += 1;
                h10 += 1;
            }
            Some(k) if k <= 5 => {
                h5 += 1;
                h10 += 1;
            }
            Some(k) if k <= 10 => h10 += 1,
            Some(_) | None => {}
        }
        recall += r.target_recall;
        targets += r.target_paths.len();
    }
    let d = n.max(1) as f64;
    Metrics {
        instances: n,
        hit_at_1: h1 as f64 / d,
        hit_at_5: h5 as f64 / d,
        hit_at_10: h10 as f64 / d,
        target_recall: recall / d,
        mean_target_paths: targets as f64 / d,
    }
}

/// Ranks `hits` against the patched files.
pub fn ranking(hits: &[Hit], patched: &[String]) -> Ranking {
    let ranked: Vec<String> = hits.iter().take(10).map(|h| h.path.clone()).collect();
    let first_hit = ranked
        .iter()
        .position(|p| patched.iter().any(|x| x == p))
        .map(|i| i + 1);
    let target_paths = target_paths_for(hits);
    let found = patched
        .iter()
        .filter(|p| target_paths.iter().any(|t| t == *p))
        .count();
    Ranking {
        ranked,
        first_hit,
        target_paths,
        target_recall: found as f64 / patched.len().max(1) as f64,
        scores: hits.iter().take(10).map(|h| h.score).collect(),
        reasons: hits.iter().take(10).map(|h| h.reasons.clone()).collect(),
    }
}

fn evaluate_instance(
    inst: &Instance,
    options: &LocalizeOptions,
) -> Result<InstanceResult, RepoError> {
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    let checkout = Checkout::prepare(&options.repos, inst)?;
    let checkout_ms = ms(t);
    let t = Instant::now();
    let repo_scan = scan(checkout.path(), &options.scan)?;
    let scan_ms = ms(t);
    let t = Instant::now();
    let index = Index::build(&repo_scan);
    let index_ms = ms(t);
    let t = Instant::now();
    let hits = index.search(&inst.problem_statement, 10);
    let query_ms = ms(t);
    let dandori = ranking(&hits, &inst.patched_files);
    let baseline = options.baseline.then(|| {
        let b = Bm25Baseline::build(&repo_scan);
        ranking(&b.search(&inst.problem_statement, 10), &inst.patched_files)
    });
    Ok(InstanceResult {
        instance_id: inst.instance_id.clone(),
        repo: inst.repo.clone(),
        patched_files: inst.patched_files.clone(),
        dandori: Some(dandori),
        baseline,
        skipped: None,
        timing: Some(Timing {
            checkout_ms,
            scan_ms,
            index_ms,
            query_ms,
        }),
    })
}

/// A tree at the instance's base commit: either the user's per-instance
/// checkout, used as is, or a temporary checkout from a clone, removed on drop.
/// The clone is only read (a temporary index file, no ref or worktree changes).
pub enum Checkout {
    Existing(PathBuf),
    Temporary {
        tree: PathBuf,
        /// The clone's git directory and the commit checked out.
        git_dir: PathBuf,
        commit: String,
        _dir: tempfile::TempDir,
    },
}

impl Checkout {
    /// The tree's root.
    pub fn path(&self) -> &Path {
        match self {
            Checkout::Existing(p) => p,
            Checkout::Temporary { tree, .. } => tree,
        }
    }

    /// The commit history up to the checked-out commit
    /// ([`History::read`], [`HISTORY_COMMITS`] commits): from the clone for a
    /// temporary checkout, from the tree itself when it is the top level of a
    /// git work tree;
    /// `None` without history.
    pub fn history(&self) -> Option<History> {
        let h = match self {
            Checkout::Existing(p) => History::read_work_tree(p, "HEAD", HISTORY_COMMITS),
            Checkout::Temporary {
                git_dir, commit, ..
            } => History::read(git_dir, commit, HISTORY_COMMITS),
        };
        h.ok().filter(|h| !h.is_empty())
    }

    /// `repos/<instance_id>/` as is, or a temporary checkout of `inst.base_commit`
    /// from a clone `repos/<owner>__<name>`, `repos/<owner>/<name>` or `repos/<name>`.
    pub fn prepare(repos: &Path, inst: &Instance) -> Result<Checkout, RepoError> {
        let fail = |message: String| RepoError::Checkout {
            instance_id: inst.instance_id.clone(),
            message,
        };
        let per_instance = repos.join(&inst.instance_id);
        if per_instance.is_dir() {
            return Ok(Checkout::Existing(per_instance));
        }
        let (owner, name) = inst
            .repo
            .split_once('/')
            .ok_or_else(|| fail(format!("`repo` {:?} is not owner/name", inst.repo)))?;
        let candidates = [
            repos.join(format!("{owner}__{name}")),
            repos.join(owner).join(name),
            repos.join(name),
        ];
        let clone = candidates.iter().find(|p| p.is_dir()).ok_or_else(|| {
            fail(format!(
                "no checkout {} and no clone {} or {}",
                per_instance.display(),
                candidates[0].display(),
                candidates[1].display()
            ))
        })?;
        let git_dir = git_output(clone, &["rev-parse", "--absolute-git-dir"])
            .map_err(|e| fail(format!("{} is not a git repository: {e}", clone.display())))?;
        let git_dir = PathBuf::from(git_dir.trim());
        let tmp = tempfile::Builder::new()
            .prefix("dandori-eval-")
            .tempdir()
            .map_err(|e| fail(format!("creating a temporary directory: {e}")))?;
        let work = tmp.path().join("tree");
        dandori_fs::create_dir_all(&work)?;
        let index_file = tmp.path().join("index");
        let git = |args: &[&str]| -> Result<(), String> {
            let out =
                dandori_exec::git::git_command(tmp.path(), dandori_exec::git::GlobalConfig::Ignore)
                    .arg("--git-dir")
                    .arg(&git_dir)
                    .arg("--work-tree")
                    .arg(&work)
                    .args(args)
                    .env("GIT_INDEX_FILE", &index_file)
                    .output()
                    .map_err(|e| format!("running git: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "git {} failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        let commit = format!("{}^{{commit}}", inst.base_commit);
        git(&["read-tree", &commit]).map_err(fail)?;
        git(&["checkout-index", "--all", "--force"]).map_err(fail)?;
        let _ = std::fs::remove_file(&index_file);
        Ok(Checkout::Temporary {
            tree: work,
            git_dir,
            commit: inst.base_commit.clone(),
            _dir: tmp,
        })
    }
}

fn git_output(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = dandori_exec::git::git_command(dir, dandori_exec::git::GlobalConfig::Ignore)
        .args(args)
        .output()
        .map_err(|e| format!("running git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn halves_by_position() {
        let v: Vec<u32> = (0..7).collect();
        assert_eq!(Split::Tune.select(v.clone()), vec![0, 2, 4, 6]);
        assert_eq!(Split::HeldOut.select(v.clone()), vec![1, 3, 5]);
        assert_eq!(Split::All.select(v).len(), 7);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut v: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert_eq!(percentile(&mut v, 50.0), 10.0);
        assert_eq!(percentile(&mut v, 95.0), 19.0);
        assert_eq!(percentile(&mut [], 50.0), 0.0);
    }

    #[test]
    fn files_from_diff_headers() {
        let diff = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/old.py b/old.py\ndeleted file mode 100644\n--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-z\n";
        assert_eq!(patched_files(diff), vec!["src/a.py", "old.py"]);
        assert_eq!(
            patched_files("--- a/x.go\t2020\n+++ b/x.go\t2020\n"),
            vec!["x.go"]
        );
    }
}
