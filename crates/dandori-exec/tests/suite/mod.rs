mod policy;
mod policy_props;
mod run;
