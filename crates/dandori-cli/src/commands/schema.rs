//! `dandori schema planning|stage|config`: the JSON Schemas generated from the types
//! (the same as the committed `schemas/*.schema.json`).

use std::process::ExitCode;

use crate::cli::{SchemaArgs, SchemaKind};
use crate::output;

pub fn schema(args: &SchemaArgs) -> anyhow::Result<ExitCode> {
    let schema = match args.kind {
        SchemaKind::Planning => dandori_plan::schema::planning(),
        SchemaKind::Stage => dandori_plan::schema::stage(),
        SchemaKind::Config => dandori_config::schema::config(),
    };
    output::json(&schema);
    Ok(ExitCode::SUCCESS)
}
