//! GitHub and GitLab issues, pull requests and merge requests as the task source,
//! with the human in the loop (seed 000 §2.5, §9.3, §10.4, §11.3.1, §12.3).
//!
//! * [`reference`]: `github:OWNER/REPO#N`, `github-pr:…#N`, `gitlab:GROUP/PROJECT#N`,
//!   `gitlab-mr:…!N` and web URLs.
//! * [`client`]: the REST clients (GitHub REST v3, GitLab v4): base URLs, tokens,
//!   pagination, rate limits.
//! * [`intake`]: an issue → the request text and the seed 000 §9.3 task type.
//! * [`report`]: the comments posted back (plan summary, status, completion),
//!   each found again by a hidden marker so that re-running edits instead of
//!   duplicating.
//! * [`permissions`]: who may trigger, steer and approve (seed 000 §12.3) and
//!   which repository operations dandori may perform.
//! * [`record`]: `forge.json` in the run directory (the source reference, the
//!   comments posted, the feedback consumed, the approval state).
//! * [`change_request`] and [`publish`]: `dandori run --open-pr`: the work
//!   branch pushed with a per-command token, a pull / merge request opened or
//!   updated with the run report.
//! * [`ci`]: `dandori ci`: a GitHub Actions / GitLab CI event → the step it
//!   asks for, and who may ask; [`ci_bot`]: the command's body (the job's
//!   event read, the actor admitted or answered, the steps run).
//! * [`session`]: the commands' link to an issue (clients, `plan --issue`
//!   intake, the plan comments); [`run_hook`]: `dandori run`'s status and
//!   completion comments and `--open-pr`.
//! * [`feedback`]: the comments that are feedback for a revision, and the one
//!   that approves it.
//! * [`revise`]: human feedback → a seed-format human reflection and a revised
//!   planning.json, with the revision history of seed 000 §11.3.1.
//! * [`model_revision`]: the model's seed-format `plan_revision` answer,
//!   checked (shape, steps, paths, commands, validation) before it is applied.
//! * [`revision_flow`]: `dandori revise` and `dandori approve`: the feedback
//!   gathered and masked, the revision made and reported on the issue.
//!
//! * [`workflow`]: the CI files of `dandori init github-action | gitlab-ci`
//!   (audited: pinned actions, the job gated before it starts, least privilege).
//!
//! Reason codes: [`reason`], documented in docs/forges.md.

pub mod change_request;
pub mod ci;
pub mod ci_bot;
pub mod client;
mod error;
pub mod feedback;
pub mod intake;
pub mod model_revision;
pub mod permissions;
pub mod publish;
pub mod reason;
pub mod record;
pub mod reference;
pub mod report;
pub mod revise;
pub mod revision_flow;
pub mod run_hook;
pub mod scopes;
pub mod session;
pub mod workflow;

pub use client::{Comment, CommentSource, ForgeClient, ForgeSettings, Identity, Issue};
pub use error::ForgeError;
pub use reference::{Forge, ForgeRef, ItemKind};

/// The label of seed 000 §10.4, verbatim.
pub const HELP_LABEL: &str = "coding agent help needed";
