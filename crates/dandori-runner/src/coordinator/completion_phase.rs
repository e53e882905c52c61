//! Completion: AC coverage, follow-up steps for gaps (seed 001 §10.5–10.8), and
//! the final report.

use std::collections::{BTreeMap, BTreeSet};

use dandori_plan::{RunStatus, Step, StepStatus};
use serde_json::{Value, json};

use crate::completion::{self, CompletionStatus};
use crate::coverage::{self, AcEvidence, CoverageInput, CoverageResult, EvidenceItem};
use crate::error::RunnerError;
use crate::evidence::{self, AcStatus, StepEvidence};
use crate::executor::Executor;
use crate::step::{self, Check, StepResult};
use crate::{events, reason, report};

use super::{Coordinator, RunOutcome};

impl Coordinator<'_> {
    /// Follow-up steps recorded in `stage.json` (`follow_ups`).
    pub(super) fn follow_ups(&self) -> Vec<completion::FollowUp> {
        completion::follow_ups(&self.stage)
    }

    /// Seed 001 §10.5: evaluate AC coverage (on evidence) with the deterministic
    /// guardrails; every uncovered AC gets a follow-up step (seed 001 §10.6), run
    /// while iterations remain once every planned step is done, recorded as
    /// pending otherwise.
    pub(super) fn coverage_and_follow_ups(
        &mut self,
        executor: &dyn Executor,
        env: &BTreeMap<String, String>,
    ) -> Result<CoverageResult, RunnerError> {
        let max_iterations = self.opts.config.planning.revision.max_revisions.max(1);
        let mut follow_ups = self.follow_ups();
        // Follow-ups run by this call, per criterion.
        let mut tries: BTreeMap<String, u32> = BTreeMap::new();
        let mut iteration = 1;
        loop {
            let input = self.coverage_input(&follow_ups, iteration, max_iterations)?;
            let result = coverage::apply_guardrails(&input, coverage::assess(&input));
            self.emit(
                events::COVERAGE_EVALUATION,
                json!({"input": input, "result": result}),
            );
            let all_steps_done = self
                .stage
                .steps
                .iter()
                .all(|s| s.status == StepStatus::Done);
            // Without any test command a follow-up cannot give an unverified
            // criterion evidence either: it stays unverified, with no follow-up.
            let no_tests = self.planning.steps.iter().all(|s| {
                s.commands.unit.as_ref().is_none_or(|u| u.is_empty())
                    && s.commands.e2e.as_ref().is_none_or(|u| u.is_empty())
            });
            let mut gaps: Vec<String> = result
                .critical_gaps
                .iter()
                .filter(|g| {
                    !follow_ups
                        .iter()
                        .any(|f| &f.ac == *g && f.status == StepStatus::Done)
                })
                .filter(|g| {
                    !(no_tests
                        && self
                            .ac_evidence
                            .iter()
                            .any(|e| &e.ac == *g && e.status == Some(AcStatus::Unverified)))
                })
                .cloned()
                .collect();
            // Seed 001 §10.6: critical gaps first (high, then medium, then low
            // priority), plan order within a priority; but a gap whose follow-up
            // has had fewer tries goes first, so gaps past the first three get
            // their turn while those keep failing.
            gaps.sort_by_key(|g| {
                let tried = follow_ups
                    .iter()
                    .find(|f| &f.ac == g)
                    .is_some_and(|f| f.status != StepStatus::Pending);
                (
                    tries.get(g).copied().unwrap_or(0),
                    tried,
                    priority_rank(&self.follow_up_advice(g, &input).0),
                )
            });
            if !result.should_continue
                || gaps.is_empty()
                || !all_steps_done
                || !executor.can_execute()
                || self.stop_reason.is_some()
            {
                for ac in &gaps {
                    follow_up_for(&mut follow_ups, ac, self.follow_up_advice(ac, &input));
                }
                self.stage
                    .extra
                    .insert("follow_ups".to_string(), json!(follow_ups));
                return Ok(result);
            }
            for ac in gaps.iter().take(FOLLOW_UPS_PER_ITERATION) {
                *tries.entry(ac.clone()).or_insert(0) += 1;
                let idx = follow_up_for(&mut follow_ups, ac, self.follow_up_advice(ac, &input));
                if follow_ups[idx].status == StepStatus::Done {
                    continue;
                }
                let mut step = self.follow_up_step(&follow_ups[idx].step_id, ac);
                step.suggested_tools =
                    Some(follow_ups[idx].suggested_tools.clone()).filter(|t| !t.is_empty());
                // Recorded before it runs: an MCP client handed the step looks it
                // up in stage.json.
                follow_ups[idx].status = StepStatus::Running;
                self.stage
                    .extra
                    .insert("follow_ups".to_string(), json!(follow_ups));
                self.save()?;
                let (status, commit, code) = self.run_follow_up(executor, env, &step)?;
                follow_ups[idx].status = status;
                follow_ups[idx].commit = commit;
                follow_ups[idx].reason_code = code.map(str::to_string);
                self.stage
                    .extra
                    .insert("follow_ups".to_string(), json!(follow_ups));
                self.save()?;
            }
            iteration += 1;
        }
    }

    pub(super) fn coverage_input(
        &mut self,
        follow_ups: &[completion::FollowUp],
        iteration: u32,
        max_iterations: u32,
    ) -> Result<CoverageInput, RunnerError> {
        let acs: Vec<String> = self
            .planning
            .context
            .acceptance_criteria
            .iter()
            .map(|a| a.id.clone())
            .collect();
        // The checks each proof commit on the branch carries (newest proof wins).
        let mut checks: BTreeMap<String, Vec<Check>> = BTreeMap::new();
        let range = format!("{}..{}", self.base_commit, self.tip);
        for c in self.main.step_commits(&range)? {
            if c.run_id == self.planning.run_id && c.completes_step() {
                checks
                    .entry(c.step_id.clone())
                    .or_insert_with(|| c.checks.iter().filter_map(|t| Check::parse(t)).collect());
            }
        }
        let mut linking: Vec<(String, Vec<String>, StepStatus)> = self
            .planning
            .steps
            .iter()
            .zip(&self.stage.steps)
            .map(|(step, st)| (step.step_id.clone(), step.links_to_ac.clone(), st.status))
            .collect();
        for f in follow_ups {
            linking.push((f.step_id.clone(), vec![f.ac.clone()], f.status));
        }
        let mut linked = BTreeSet::new();
        let mut evidence = Vec::new();
        let baseline = self.baseline();
        let step_evidence = self.step_evidence(follow_ups);
        for ac in &acs {
            let mut e = AcEvidence {
                ac: ac.clone(),
                covered: false,
                status: None,
                check: String::new(),
                base_result: String::new(),
                after_result: String::new(),
                green_step: None,
                green_commit: None,
                log: None,
                missing: Vec::new(),
                evidence: Vec::new(),
            };
            let mut linking_ids = Vec::new();
            for (step_id, _, status) in linking.iter().filter(|l| l.1.contains(ac)) {
                linked.insert(ac.clone());
                linking_ids.push(step_id.clone());
                let done = *status == StepStatus::Done;
                let step_checks = checks.get(step_id).filter(|_| done);
                match step_checks {
                    Some(cs) if !cs.is_empty() => {
                        for c in cs {
                            let log = if c.kind == "diff" {
                                self.paths.patch(step_id)
                            } else {
                                self.paths.step_log(step_id, "unit")
                            };
                            e.evidence.push(EvidenceItem {
                                step_id: step_id.clone(),
                                kind: c.kind.clone(),
                                command: c.command.clone(),
                                exit_code: c.exit_code,
                                log: log.to_string_lossy().into_owned(),
                            });
                        }
                    }
                    _ => e.missing.push(format!(
                        "{step_id}: {}",
                        if done {
                            "done without a verification"
                        } else {
                            dandori_report::step_status_str(*status)
                        }
                    )),
                }
            }
            if let Some(criterion) = self
                .planning
                .context
                .acceptance_criteria
                .iter()
                .find(|a| &a.id == ac)
            {
                let j = evidence::judge_ac(
                    criterion,
                    &self.planning.context.acceptance_criteria,
                    &linking_ids,
                    baseline.as_ref(),
                    &step_evidence,
                );
                e.covered = j.status == AcStatus::Covered;
                e.status = Some(j.status);
                e.check = j.check;
                e.base_result = j.base_result;
                e.after_result = j.after_result;
                e.green_step = j.green_step;
                e.green_commit = j.green_commit;
                e.log = j.log;
            }
            evidence.push(e);
        }
        let covered: Vec<String> = evidence
            .iter()
            .filter(|e| e.covered)
            .map(|e| e.ac.clone())
            .collect();
        let weakly_evidenced: Vec<String> = evidence
            .iter()
            .filter(|e| e.covered && !e.missing.is_empty())
            .map(|e| e.ac.clone())
            .collect();
        self.stage
            .extra
            .insert("ac_evidence".to_string(), json!(evidence));
        self.ac_evidence = evidence;
        let numstat = self
            .main
            .run(&["diff", "--numstat", &self.base_commit, &self.tip])?;
        let synthesis_size = numstat
            .lines()
            .map(|l| {
                let mut it = l.split('\t');
                let a = it.next().and_then(|x| x.parse::<u64>().ok()).unwrap_or(1);
                let d = it.next().and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
                a + d
            })
            .sum();
        Ok(CoverageInput {
            unplanned: acs
                .iter()
                .filter(|a| !linked.contains(*a))
                .cloned()
                .collect(),
            acceptance_criteria: acs,
            covered,
            weakly_evidenced,
            synthesis_size,
            iteration,
            max_iterations,
        })
    }

    /// The recorded test runs (`evidence/Sxx.json`) of every done step whose proof
    /// commit they belong to, in plan order, then the done follow-ups.
    pub(super) fn step_evidence(&self, follow_ups: &[completion::FollowUp]) -> Vec<StepEvidence> {
        let done = self
            .stage
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Done)
            .map(|s| (s.step_id.clone(), s.commit.clone()))
            .chain(
                follow_ups
                    .iter()
                    .filter(|f| f.status == StepStatus::Done)
                    .map(|f| (f.step_id.clone(), f.commit.clone())),
            );
        done.filter_map(|(id, commit)| {
            let text = std::fs::read_to_string(self.paths.evidence(&id)).ok()?;
            let e: StepEvidence = serde_json::from_str(&text).ok()?;
            (Some(&e.commit) == commit.as_ref()).then_some(e)
        })
        .collect()
    }

    /// [`completion::Completion::evidence`]: the ACs' evidence and the failures
    /// that were already there.
    fn evidence_record(&self) -> Value {
        let baseline = self.baseline();
        json!({
            "baseline_commit": baseline.as_ref().map(|b| b.commit.clone()),
            "preexisting_failures": baseline.as_ref().map(|b| b.failures().iter()
                .map(|(c, t)| json!({"command": c, "test": t})).collect::<Vec<_>>()).unwrap_or_default(),
            "acceptance_criteria": self.ac_evidence.iter().map(|e| json!({
                "ac": e.ac, "status": e.status, "check": e.check, "base_result": e.base_result,
                "after_result": e.after_result, "green_step": e.green_step,
                "green_commit": e.green_commit, "log": e.log})).collect::<Vec<_>>(),
        })
    }

    /// Seed 001 §10.6 `Priority` and `SuggestedTools` of the follow-up for
    /// `ac_id`: `high` for a functional criterion (or one without a kind) and for
    /// one no step linked, `medium` for a regression criterion, `low` for a
    /// non-functional one; the tools the steps linking it were given, else
    /// reading, searching and patching, and `run_command` when there is a test
    /// command to prove it.
    pub(super) fn follow_up_advice(
        &self,
        ac_id: &str,
        input: &CoverageInput,
    ) -> (String, Vec<String>) {
        let kind = self
            .planning
            .context
            .acceptance_criteria
            .iter()
            .find(|a| a.id == ac_id)
            .and_then(|a| a.kind);
        let unplanned = input.unplanned.iter().any(|u| u == ac_id);
        let priority = match kind {
            _ if unplanned => "high",
            Some(dandori_plan::AcKind::Regression) => "medium",
            Some(dandori_plan::AcKind::Nonfunctional) => "low",
            Some(dandori_plan::AcKind::Functional) | None => "high",
        };
        let mut tools: Vec<String> = Vec::new();
        for s in self
            .planning
            .steps
            .iter()
            .filter(|s| s.links_to_ac.iter().any(|l| l == ac_id))
        {
            for t in s.suggested_tools.iter().flatten() {
                if !tools.contains(t) {
                    tools.push(t.clone());
                }
            }
        }
        if tools.is_empty() {
            tools = vec!["read_file".into(), "search".into(), "apply_patch".into()];
            let has_tests = self
                .planning
                .context
                .test_instructions
                .unit
                .as_ref()
                .is_some_and(|u| !u.trim().is_empty());
            if has_tests {
                tools.push("run_command".into());
            }
        }
        (priority.to_string(), tools)
    }

    /// A follow-up step for an AC the plan left uncovered (seed 001 §10.6).
    pub(super) fn follow_up_step(&self, step_id: &str, ac_id: &str) -> Step {
        crate::completion::follow_up_step(&self.planning, &self.paths, step_id, ac_id)
    }

    pub(super) fn run_follow_up(
        &mut self,
        executor: &dyn Executor,
        env: &BTreeMap<String, String>,
        step: &Step,
    ) -> Result<(StepStatus, Option<String>, Option<&'static str>), RunnerError> {
        let shared = self.step_shared(0, 0);
        let cx = shared.context(executor, env);
        let wt = step::worktree_path(&self.paths, &step.step_id, 1);
        if wt.exists() {
            self.main.remove_worktree(&wt)?;
        }
        dandori_fs::create_dir_all(&self.paths.worktrees)?;
        self.emit(
            events::STEP_START,
            json!({"step_id": step.step_id, "follow_up_for": step.links_to_ac}),
        );
        let commits = vec![("tip".to_string(), self.tip.clone())];
        let base = step::StepBase {
            commits: &commits,
            main: &self.main,
            known: &crate::git::Ancestry::default(),
        };
        let r = step::run_step_on_base(&cx, usize::MAX, step, &base, &wt);
        self.tokens.add(r.tokens);
        let out = match &r.result {
            StepResult::Committed { commits } => {
                let merged = match commits.last() {
                    Some(proof) => self.main.merge_commits(
                        &self.tip,
                        proof,
                        &format!("dandori: integrate {}", step.step_id),
                    )?,
                    None => Some(self.tip.clone()),
                };
                if let Some(head) = merged {
                    self.main.remove_worktree(&wt)?;
                    self.main.set_branch(&self.planning.work_branch, &head)?;
                    self.tip = head.clone();
                    (StepStatus::Done, commits.last().cloned(), None)
                } else {
                    (StepStatus::Failed, None, Some(reason::MERGE_CONFLICT))
                }
            }
            StepResult::Failed { reason_code, .. } => {
                (StepStatus::Failed, None, Some(*reason_code))
            }
            StepResult::NeedsInput { reason_code, .. } => {
                (StepStatus::NeedsInput, None, Some(*reason_code))
            }
        };
        self.emit(
            events::STEP_END,
            json!({"step_id": step.step_id, "status": out.0, "commit": out.1, "reason_code": out.2}),
        );
        self.reports.insert(step.step_id.clone(), r);
        Ok(out)
    }

    pub(super) fn finish(
        mut self,
        executor_name: &str,
        coverage: CoverageResult,
    ) -> Result<RunOutcome, RunnerError> {
        let follow_ups: Vec<completion::FollowUp> = self
            .stage
            .extra
            .get("follow_ups")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let revisions = self
            .stage
            .extra
            .get("revisions")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let completion = completion::build(&completion::CompletionInput {
            planning: &self.planning,
            stage: &self.stage,
            reports: &self.reports,
            coverage: &coverage,
            follow_ups: &follow_ups,
            stop_reason: self.stop_reason.clone(),
            revisions,
            max_revisions: self.opts.config.planning.revision.max_revisions as u64,
            tokens: self.tokens,
            executor: executor_name,
            lessons: &self.lessons,
            environment: &self.environment,
            run_dir: &self.paths.run_dir,
            evidence: self.evidence_record(),
        });
        self.stage.status = match completion.status {
            CompletionStatus::Completed => RunStatus::Done,
            CompletionStatus::NeedsInput => RunStatus::NeedsInput,
            CompletionStatus::Paused => RunStatus::Running,
            CompletionStatus::Failed | CompletionStatus::RequiresHumanIntervention => {
                RunStatus::Failed
            }
        };
        self.update_index();
        self.save()?;
        if self.reattach_work_branch {
            self.main
                .run(&["checkout", "--quiet", &self.planning.work_branch])?;
        }
        report::write(&report::ReportInput {
            planning: &self.planning,
            stage: &self.stage,
            reports: &self.reports,
            timings: &self.timings,
            completion: &completion,
            preds: &self.preds,
            paths: &self.paths,
            ac_evidence: &self.ac_evidence,
            masker: &self.masker,
        })?;
        self.emit(
            events::EXECUTION_END,
            serde_json::to_value(&completion).unwrap_or(Value::Null),
        );
        Ok(RunOutcome {
            completion,
            run_dir: self.paths.run_dir.clone(),
        })
    }
}

/// Follow-up steps run per coverage iteration; the iterations are bounded by
/// `planning.revision.max_revisions`.
const FOLLOW_UPS_PER_ITERATION: usize = 3;

/// The index of `ac`'s follow-up step, added (pending) when it has none.
fn follow_up_for(
    follow_ups: &mut Vec<completion::FollowUp>,
    ac: &str,
    (priority, suggested_tools): (String, Vec<String>),
) -> usize {
    if let Some(i) = follow_ups.iter().position(|f| f.ac == ac) {
        return i;
    }
    follow_ups.push(completion::FollowUp {
        step_id: format!("F{:02}", follow_ups.len() + 1),
        ac: ac.to_string(),
        status: StepStatus::Pending,
        commit: None,
        reason_code: None,
        priority,
        suggested_tools,
    });
    follow_ups.len() - 1
}

/// `high` < `medium` < `low`, for sorting.
fn priority_rank(p: &str) -> u8 {
    match p {
        "high" => 0,
        "medium" => 1,
        _ => 2,
    }
}
