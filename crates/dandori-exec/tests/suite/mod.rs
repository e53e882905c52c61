mod policy;
mod run;
