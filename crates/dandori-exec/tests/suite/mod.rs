mod policy;
mod policy_corpus;
mod policy_props;
mod run;
