//! `dandori sandbox check [--json]`: each mechanism probed on this machine (the
//! same probe `run` does), which one `auto` picks, and why the others cannot
//! work. Exit 0 when commands can be sandboxed, 1 when they would be refused.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use dandori_config::SandboxMode;
use dandori_exec::{Sandbox, SandboxKind, SandboxOptions};
use serde::Serialize;

use crate::cli::{SandboxCheckArgs, SandboxCommand};
use crate::output;

pub fn sandbox(
    config: Option<&Path>,
    sets: &[String],
    cmd: SandboxCommand,
) -> anyhow::Result<ExitCode> {
    match cmd {
        SandboxCommand::Check(args) => check(config, sets, &args),
    }
}

#[derive(Serialize)]
struct Probe {
    mechanism: &'static str,
    works: bool,
    /// Why it does not work here.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

#[derive(Serialize)]
struct Report {
    uid: u32,
    /// The configured mode (`sandbox.mode` / `--sandbox`).
    mode: SandboxMode,
    /// What `run` would use with that mode.
    chosen: String,
    probes: Vec<Probe>,
    /// What every sandboxed command gets, whichever mechanism.
    enforced: Vec<&'static str>,
    /// The system calls the filter refuses.
    denied_syscalls: Vec<&'static str>,
}

fn check(
    config: Option<&Path>,
    sets: &[String],
    args: &SandboxCheckArgs,
) -> anyhow::Result<ExitCode> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let repo = std::env::current_dir()?;
    let loaded = super::load_config(config, sets, &repo, &env)?;
    let mode = loaded.config.sandbox.mode;
    let probe = |m: SandboxMode, name: &'static str| {
        let s = Sandbox::detect(&SandboxOptions::new(m).env(&env));
        let works = s.status().kind != SandboxKind::None;
        Probe {
            mechanism: name,
            works,
            reason: (!works).then(|| {
                s.status()
                    .fallback_reason
                    .clone()
                    .unwrap_or_else(|| "unknown".to_string())
            }),
        }
    };
    let probes = vec![
        probe(SandboxMode::Bubblewrap, "bubblewrap"),
        probe(SandboxMode::Landlock, "landlock"),
    ];
    let chosen = Sandbox::detect(&SandboxOptions::new(mode).env(&env));
    let report = Report {
        uid: nix_uid(),
        mode,
        chosen: chosen.status().summary(),
        probes,
        enforced: vec![
            "a user namespace with no capability (empty bounding set), also for root",
            "no_new_privs and a seccomp filter (mount, umount, pivot_root, setns, unshare, namespace clone flags, ptrace, process_vm_*, keyctl, bpf, perf_event_open, kexec, modules)",
            "its own PID namespace and /proc: no process outside is visible",
            "a minimal file system view: system directories read-only (/etc without its secret files), the worktree, the run's scratch, the toolchains of the home read-only, a fresh per-run home",
            "no network but loopback unless the command needs it (environment setup, agents)",
            "an allow-listed environment (toolchain variables; agents also runner.agent_env)",
        ],
        denied_syscalls: dandori_exec::sandbox::seccomp::denied()
            .into_iter()
            .map(|(n, _)| n)
            .collect(),
    };
    let ok = chosen.refusal().is_none();
    if args.json {
        output::json(&report);
    } else {
        output::line(&format!("uid {}; sandbox.mode: {:?}", report.uid, mode).to_lowercase());
        for p in &report.probes {
            match &p.reason {
                None => output::line(&format!("  {:<10} works", p.mechanism)),
                Some(r) => output::line(&format!("  {:<10} does not work: {r}", p.mechanism)),
            }
        }
        output::line(&report.chosen);
        if ok && chosen.status().kind != SandboxKind::None {
            output::line("every sandboxed command gets:");
            for e in &report.enforced {
                output::line(&format!("  - {e}"));
            }
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn nix_uid() -> u32 {
    // The real uid as the kernel reports it (no extra dependency): /proc/self/status.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|u| u.parse().ok())
        .unwrap_or(u32::MAX)
}
