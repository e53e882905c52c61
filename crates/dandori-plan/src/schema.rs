//! JSON Schemas generated from the types. The committed copies live in
//! `schemas/` at the repository root; a test fails when they drift, and
//! `UPDATE_SCHEMAS=1 cargo test -p dandori-plan --test all schema` rewrites them.

use serde_json::Value;

use crate::{Planning, Stage};

/// The JSON Schema of `planning.json`.
pub fn planning() -> Value {
    to_value(schemars::schema_for!(Planning))
}

/// The JSON Schema of `stage.json`.
pub fn stage() -> Value {
    to_value(schemars::schema_for!(Stage))
}

fn to_value(schema: schemars::Schema) -> Value {
    schema.to_value()
}
