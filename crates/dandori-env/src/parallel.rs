//! Seed 002 §12.2 parallel setup: a repository with independent ecosystems (a
//! root Python project and a `web/` Node package) gets each set up, the
//! independent ones at the same time.
//!
//! Which: the primary environment (§4.2.2, [`crate::phase::select_with_bootstrap`]),
//! and for every other language detected its shallowest ecosystem, with its own
//! setup and verification commands. Which run together: ecosystems in
//! different directories are independent; ecosystems in the same directory are
//! not (a Python build backend may run the `npm` the Node install brings, a
//! `prepare` script the `.venv`'s Python), so they form one chain set up one
//! after the other, the primary first. Chains go to
//! `planning.environment_setup.execution.max_parallel` workers, chain `i` to
//! worker `i % workers`: a deterministic schedule.
//!
//! Each ecosystem is a [`setup::run`] of its own — its records (the primary's
//! in the record directory as before, the others' in `ecosystems/<key>/`), its
//! logs, its state and reuse fingerprint (`reuse::state_file`) — so changing
//! one manifest prepares only that ecosystem again. `ecosystems.json` in the
//! record directory is the schedule and what each ecosystem ended with (worker,
//! start and end, status, errors); the state directory's `ecosystems/index.json`
//! is the activation order [`crate::activation::env_for_with`] combines.
//!
//! Workers send progress lines and regeneration requests to the calling
//! thread, which prints the lines (prefixed with the ecosystem) and asks the
//! caller's regenerator (one request at a time), so neither needs to be `Sync`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc;

use dandori_plan::SelectedEnvironment;
use serde::{Deserialize, Serialize};

use crate::EnvError;
use crate::analyzer::{self, Ecosystem, EnvironmentAnalysis, MINIFORGE, PYTHON};
use crate::records::{self, OverallStatus, ToolBootstrap};
use crate::reuse;
use crate::setup::{
    self, CommandRegenerator, RegeneratedCommands, RegenerationRequest, SetupOptions, SetupOutcome,
};

/// `ecosystems.json` of the record directory.
pub const ECOSYSTEMS_FILE: &str = "ecosystems.json";

/// One ecosystem to set up: its environment and what the package-manager
/// bootstrap did for it.
#[derive(Debug, Clone)]
pub struct EcosystemPlan {
    pub selected: SelectedEnvironment,
    pub bootstrap: Option<ToolBootstrap>,
}

impl EcosystemPlan {
    pub fn root(&self) -> String {
        root_of(&self.selected)
    }
}

fn root_of(s: &SelectedEnvironment) -> String {
    s.extra
        .get("root")
        .and_then(|v| v.as_str())
        .unwrap_or(".")
        .to_string()
}

/// The key of an ecosystem other than the primary one: `node@web`,
/// `python@services+api`, `go` at the root.
pub fn key_of(name: &str, root: &str) -> String {
    if root == "." {
        name.to_string()
    } else {
        format!("{name}@{}", root.replace('/', "+"))
    }
}

fn language(name: &str) -> &str {
    if name == MINIFORGE { PYTHON } else { name }
}

/// The ecosystems set up besides `primary`: for each other language of
/// `analysis`, its shallowest ecosystem (a conda file before plain Python at
/// the same depth, as the primary's choice), ordered by directory and name,
/// each with its commands and its package manager bootstrapped. Those with no
/// setup command are left out.
pub fn others(
    analysis: &EnvironmentAnalysis,
    primary: &SelectedEnvironment,
    base_env: &BTreeMap<String, String>,
    progress: &dyn Fn(&str),
) -> Result<Vec<EcosystemPlan>, EnvError> {
    let primary_lang = language(&primary.name);
    let mut ecos: Vec<&Ecosystem> = analysis.ecosystems.iter().collect();
    ecos.sort_by_key(|e| {
        (
            if e.dir == "." {
                0
            } else {
                1 + e.dir.matches('/').count()
            },
            usize::from(e.name != MINIFORGE),
            e.dir.clone(),
        )
    });
    let mut by_lang: BTreeMap<&str, &Ecosystem> = BTreeMap::new();
    for e in ecos {
        let lang = language(&e.name);
        if lang != primary_lang {
            by_lang.entry(lang).or_insert(e);
        }
    }
    let mut chosen: Vec<&Ecosystem> = by_lang.into_values().collect();
    chosen.sort_by(|a, b| (&a.dir, &a.name).cmp(&(&b.dir, &b.name)));
    let mut plans = Vec::new();
    for e in chosen {
        let alone = EnvironmentAnalysis {
            ecosystems: vec![e.clone()],
            detected_files: analysis
                .detected_files
                .iter()
                .filter(|f| f.ecosystem == analyzer::COMMON)
                .cloned()
                .collect(),
            source_files: analysis.source_files.clone(),
            files_scanned: analysis.files_scanned,
            warnings: Vec::new(),
        };
        let (selected, bootstrap) =
            crate::phase::select_with_bootstrap(&alone, None, base_env, progress)?;
        if !selected.setup_commands.is_empty() {
            plans.push(EcosystemPlan {
                selected,
                bootstrap,
            });
        }
    }
    Ok(plans)
}

/// The primary environment ([`crate::phase::select_with_bootstrap`]) and the others.
pub fn plan(
    analysis: &EnvironmentAnalysis,
    target_language: Option<&str>,
    base_env: &BTreeMap<String, String>,
    progress: &dyn Fn(&str),
) -> Result<Vec<EcosystemPlan>, EnvError> {
    let (selected, bootstrap) =
        crate::phase::select_with_bootstrap(analysis, target_language, base_env, progress)?;
    let mut plans = vec![EcosystemPlan {
        selected,
        bootstrap,
    }];
    let rest = others(analysis, &plans[0].selected, base_env, progress)?;
    plans.extend(rest);
    Ok(plans)
}

/// One ecosystem in `ecosystems.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EcosystemRun {
    /// `primary` for the primary environment, else [`key_of`].
    pub key: String,
    pub environment: String,
    pub root: String,
    pub primary: bool,
    /// Its chain (ecosystems of one directory) and the worker that ran it.
    pub chain: usize,
    pub worker: usize,
    /// Where its setup.json, verification.json, handover.json and logs are.
    pub record_dir: String,
    pub overall_status: OverallStatus,
    pub environment_ready: bool,
    pub reused: bool,
    pub started_at: String,
    pub finished_at: String,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// `ecosystems.json`: the schedule and each ecosystem's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EcosystemsRecord {
    /// Always `environment_setup`.
    pub setup_phase: String,
    /// `execution.max_parallel` in force and the workers used.
    pub max_parallel: u32,
    pub workers: usize,
    /// The keys of each chain, in order.
    pub chains: Vec<Vec<String>>,
    /// In the order of the setup plan (the primary first), not of completion.
    pub ecosystems: Vec<EcosystemRun>,
    /// The primary's status, lowered to `partial_success` when another
    /// ecosystem is not ready.
    pub overall_status: OverallStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// What [`run`] gives back.
#[derive(Debug, Clone, Serialize)]
pub struct MultiOutcome {
    /// The primary environment's outcome, with the combined `overall_status`
    /// and the other ecosystems' failures among its warnings and errors.
    #[serde(flatten)]
    pub primary: SetupOutcome,
    /// Every ecosystem (the primary first), as in `ecosystems.json`.
    pub ecosystems: Vec<EcosystemRun>,
    /// The other ecosystems' own outcomes, in the order of `ecosystems[1..]`
    /// (`None` for one whose setup returned an error).
    #[serde(skip)]
    pub others: Vec<Option<SetupOutcome>>,
}

enum Msg {
    Progress(String),
    Regenerate(
        RegenerationRequest,
        mpsc::Sender<Result<RegeneratedCommands, EnvError>>,
    ),
    Done(usize, Box<Finished>),
}

/// One ecosystem's setup, done.
struct Finished {
    result: Result<SetupOutcome, EnvError>,
    started_at: String,
    finished_at: String,
    duration_ms: u64,
}

/// A worker's regenerator: asks the calling thread's.
struct Forward {
    name: String,
    tx: mpsc::Sender<Msg>,
}

impl CommandRegenerator for Forward {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn regenerate(&self, r: &RegenerationRequest) -> Result<RegeneratedCommands, EnvError> {
        let (reply, answer) = mpsc::channel();
        let gone = || EnvError::Regeneration {
            message: "the setup's regenerator is gone".into(),
        };
        self.tx
            .send(Msg::Regenerate(r.clone(), reply))
            .map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }
}

/// The parts of the caller's options every worker copies.
#[derive(Clone)]
struct Shared {
    repo: PathBuf,
    stats_dir: PathBuf,
    config: dandori_config::EnvironmentSetupConfig,
    force: bool,
    backoff_base: std::time::Duration,
    base_env: BTreeMap<String, String>,
    masker: dandori_trace::Masker,
    limits: Option<dandori_exec::ResourceLimits>,
    sandbox: Option<dandori_exec::Sandbox>,
    plugins: crate::plugins::Registry,
    regenerator: Option<String>,
}

struct Job {
    index: usize,
    plan: EcosystemPlan,
    key: Option<String>,
    record_dir: PathBuf,
    other_roots: Vec<String>,
}

/// Sets up every ecosystem of `plans` (the first is the primary) as the module
/// says, with `opts` (its record directory, statistics, configuration,
/// sandbox, regenerator, progress; its `tool_bootstrap`, `state_key` and
/// `other_roots` are set per ecosystem). An error of the primary's setup is
/// returned once every worker is done; another's is recorded as its failure.
pub fn run(plans: Vec<EcosystemPlan>, opts: &SetupOptions<'_>) -> Result<MultiOutcome, EnvError> {
    let repo = dandori_fs::canonicalize(&opts.repo)?;
    let keys: Vec<String> = plans
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i == 0 {
                "primary".to_string()
            } else {
                key_of(&p.selected.name, &p.root())
            }
        })
        .collect();
    // Chains: one per directory, the primary's first; in a chain the primary,
    // then by name.
    let mut chain_roots: Vec<String> = Vec::new();
    for p in &plans {
        let r = p.root();
        if !chain_roots.contains(&r) {
            chain_roots.push(r);
        }
    }
    let first = 1.min(chain_roots.len());
    chain_roots[first..].sort();
    let mut chains: Vec<Vec<usize>> = chain_roots
        .iter()
        .map(|r| {
            let mut c: Vec<usize> = (0..plans.len())
                .filter(|i| plans[*i].root() == *r)
                .collect();
            c.sort_by_key(|i| (*i != 0, plans[*i].selected.name.clone()));
            c
        })
        .collect();
    chains.retain(|c| !c.is_empty());
    let max_parallel = opts.config.execution.max_parallel.get();
    let workers = (max_parallel as usize).min(chains.len()).max(1);
    let shared = Shared {
        repo: repo.clone(),
        stats_dir: opts.stats_dir.clone(),
        config: opts.config.clone(),
        force: opts.force,
        backoff_base: opts.backoff_base,
        base_env: opts.base_env.clone(),
        masker: opts.masker.clone(),
        limits: opts.limits.clone(),
        sandbox: opts.sandbox.clone(),
        plugins: opts.plugins.clone(),
        regenerator: opts.regenerator.map(|r| r.name()),
    };
    let mut chain_of = vec![0usize; plans.len()];
    for (c, members) in chains.iter().enumerate() {
        for i in members {
            chain_of[*i] = c;
        }
    }
    let mut queues: Vec<Vec<Job>> = (0..workers).map(|_| Vec::new()).collect();
    let mut slots: Vec<Option<EcosystemPlan>> = plans.into_iter().map(Some).collect();
    let roots: Vec<String> = slots
        .iter()
        .map(|p| p.as_ref().map(EcosystemPlan::root).unwrap_or_default())
        .collect();
    for (c, members) in chains.iter().enumerate() {
        for i in members {
            let Some(plan) = slots[*i].take() else {
                continue;
            };
            let mine = &roots[*i];
            queues[c % workers].push(Job {
                index: *i,
                key: (*i != 0).then(|| keys[*i].clone()),
                record_dir: if *i == 0 {
                    opts.record_dir.clone()
                } else {
                    opts.record_dir.join(reuse::ECOSYSTEMS_DIR).join(&keys[*i])
                },
                // Other chains' directories below this one's (`web/` under `.`).
                other_roots: chain_roots
                    .iter()
                    .filter(|r| *r != mine && *r != ".")
                    .filter(|r| mine == "." || r.starts_with(&format!("{mine}/")))
                    .cloned()
                    .collect(),
                plan,
            });
        }
    }
    let count = roots.len();
    let mut results: Vec<Option<Finished>> = (0..count).map(|_| None).collect();
    let (tx, rx) = mpsc::channel::<Msg>();
    // Progress lines of the others are prefixed with their key.
    let names: Vec<String> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            if i == 0 {
                String::new()
            } else {
                format!("[{k}] ")
            }
        })
        .collect();
    std::thread::scope(|scope| {
        for queue in queues {
            let tx = tx.clone();
            let shared = shared.clone();
            let names = names.clone();
            scope.spawn(move || {
                for job in queue {
                    worker(job, &shared, &names, &tx);
                }
            });
        }
        drop(tx);
        for msg in rx {
            match msg {
                Msg::Progress(line) => {
                    if let Some(p) = opts.progress {
                        p(&line);
                    }
                }
                Msg::Regenerate(request, reply) => {
                    let answer = match opts.regenerator {
                        Some(r) => r.regenerate(&request),
                        None => Err(EnvError::Regeneration {
                            message: "no command regenerator is configured".into(),
                        }),
                    };
                    let _ = reply.send(answer);
                }
                Msg::Done(i, done) => results[i] = Some(*done),
            }
        }
    });
    let mut runs = Vec::new();
    let mut outcomes: Vec<Option<SetupOutcome>> = Vec::new();
    let mut primary_result: Option<Result<SetupOutcome, EnvError>> = None;
    for (i, r) in results.into_iter().enumerate() {
        let Finished {
            result,
            started_at,
            finished_at,
            duration_ms,
        } = r.unwrap_or_else(|| Finished {
            result: Err(EnvError::Record {
                path: repo.display().to_string(),
                message: "the setup worker ended without a result".into(),
            }),
            started_at: String::new(),
            finished_at: String::new(),
            duration_ms: 0,
        });
        let record_dir = if i == 0 {
            opts.record_dir.clone()
        } else {
            opts.record_dir.join(reuse::ECOSYSTEMS_DIR).join(&keys[i])
        };
        let run = match &result {
            Ok(o) => EcosystemRun {
                key: keys[i].clone(),
                environment: o.setup_result.environment.clone(),
                root: o.setup_result.root.clone(),
                primary: i == 0,
                chain: chain_of[i],
                worker: chain_of[i] % workers,
                record_dir: record_dir.display().to_string(),
                overall_status: o.overall_status,
                environment_ready: o.handover.environment_ready,
                reused: o.setup_result.reused,
                started_at,
                finished_at,
                duration_ms,
                errors: o.errors.clone(),
            },
            Err(e) => EcosystemRun {
                key: keys[i].clone(),
                environment: keys[i].split('@').next().unwrap_or("").to_string(),
                root: roots[i].clone(),
                primary: i == 0,
                chain: chain_of[i],
                worker: chain_of[i] % workers,
                record_dir: record_dir.display().to_string(),
                overall_status: OverallStatus::Failed,
                environment_ready: false,
                reused: false,
                started_at,
                finished_at,
                duration_ms,
                errors: vec![opts.masker.mask_str(&e.to_string())],
            },
        };
        runs.push(run);
        if i == 0 {
            primary_result = Some(result);
        } else {
            outcomes.push(result.ok());
        }
    }
    let mut primary = match primary_result {
        Some(Ok(o)) => o,
        Some(Err(e)) => return Err(e),
        None => {
            return Err(EnvError::Record {
                path: repo.display().to_string(),
                message: "no environment to set up".into(),
            });
        }
    };
    if let Some(p) = runs.first_mut() {
        p.environment = primary.setup_result.environment.clone();
    }
    // The others' failures, each named; the primary's status decides whether
    // the run goes on, lowered to a partial success when another is not ready.
    let mut errors = Vec::new();
    for r in runs.iter().skip(1) {
        if !r.environment_ready {
            let what = format!(
                "{} environment in {} is not ready ({}){}",
                r.environment,
                if r.root == "." {
                    "the repository root".to_string()
                } else {
                    format!("{}/", r.root)
                },
                r.overall_status.as_str(),
                r.errors
                    .first()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            );
            errors.push(what);
        }
    }
    if !errors.is_empty() && primary.overall_status == OverallStatus::Success {
        primary.overall_status = OverallStatus::PartialSuccess;
    }
    for r in runs.iter().skip(1).filter(|r| r.environment_ready) {
        primary.handover.setup_notes.push_str(&format!(
            "; {} environment prepared in {}",
            r.environment,
            if r.root == "." {
                "the repository root".to_string()
            } else {
                format!("{}/", r.root)
            }
        ));
    }
    primary.errors.extend(errors.iter().cloned());
    let record = EcosystemsRecord {
        setup_phase: "environment_setup".to_string(),
        max_parallel,
        workers,
        chains: chains
            .iter()
            .map(|c| c.iter().map(|i| keys[*i].clone()).collect())
            .collect(),
        ecosystems: runs.clone(),
        overall_status: primary.overall_status,
        errors,
    };
    let file = opts.record_dir.join(ECOSYSTEMS_FILE);
    if runs.len() > 1 {
        records::write_json(&opts.record_dir, ECOSYSTEMS_FILE, &record)?;
    } else if file.exists() {
        dandori_fs::remove_file(&file)?;
    }
    reuse::save_index(&repo, &keys[1..])?;
    Ok(MultiOutcome {
        primary,
        ecosystems: runs,
        others: outcomes,
    })
}

fn worker(job: Job, shared: &Shared, names: &[String], tx: &mpsc::Sender<Msg>) {
    let prefix = names[job.index].clone();
    let say = |s: &str| {
        let _ = tx.send(Msg::Progress(format!("{prefix}{s}")));
    };
    let forward = shared.regenerator.as_ref().map(|name| Forward {
        name: name.clone(),
        tx: tx.clone(),
    });
    let mut opts = SetupOptions::new(&shared.repo);
    opts.record_dir = job.record_dir;
    opts.stats_dir = shared.stats_dir.clone();
    opts.config = shared.config.clone();
    opts.force = shared.force;
    opts.backoff_base = shared.backoff_base;
    opts.base_env = shared.base_env.clone();
    opts.masker = shared.masker.clone();
    opts.limits = shared.limits.clone();
    opts.sandbox = shared.sandbox.clone();
    opts.plugins = shared.plugins.clone();
    opts.tool_bootstrap = job.plan.bootstrap.clone();
    opts.state_key = job.key;
    opts.other_roots = job.other_roots;
    opts.regenerator = forward.as_ref().map(|f| f as &dyn CommandRegenerator);
    opts.progress = Some(&say);
    if job.index > 0 {
        say(&format!(
            "environment: {} ({})",
            job.plan.selected.name, job.plan.selected.reason
        ));
    }
    let started_at = dandori_trace::now_rfc3339();
    let t = std::time::Instant::now();
    let result = setup::run(&job.plan.selected, &opts);
    let done = Finished {
        result,
        started_at,
        finished_at: dandori_trace::now_rfc3339(),
        duration_ms: t.elapsed().as_millis() as u64,
    };
    let _ = tx.send(Msg::Done(job.index, Box::new(done)));
}
