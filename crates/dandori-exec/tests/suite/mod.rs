mod git_hardening;
mod policy;
mod policy_corpus;
mod policy_props;
mod proxy;
mod run;
