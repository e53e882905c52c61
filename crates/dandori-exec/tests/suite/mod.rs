mod policy;
mod policy_props;
mod git_hardening;
mod run;
