//! Checks forge exchanges against OpenAPI descriptions: dandori's requests
//! (method and path template, path and query parameters, JSON body) and the
//! fake forge's answers (the schema of their status code: `$ref`, `required`,
//! types, formats, `enum`, `nullable`, `allOf`, `anyOf`, `oneOf` with a
//! `discriminator`).
//!
//! GitHub's official descriptions come from npm `@octokit/openapi`, which
//! scripts/test.sh installs into target/test-tools/node; GitLab's is the
//! committed subset crates/dandori-forge/openapi/gitlab-subset.json (see
//! docs/forges.md). Used by dandori-forge's OpenAPI test and by the CLI's
//! end-to-end forge tests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fake_forge::ForgeExchange;

/// The npm package of GitHub's official descriptions.
pub const OCTOKIT: &str = "@octokit/openapi";

/// `$DANDORI_TEST_TOOLS` (set by scripts/test.sh), else the workspace's
/// target/test-tools.
pub fn test_tools() -> PathBuf {
    std::env::var_os("DANDORI_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools"))
}

fn read_json(p: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(p).map_err(|e| {
        format!(
            "{}: {e}: run the tests with ./scripts/test.sh, which installs npm {OCTOKIT} (GitHub's official OpenAPI descriptions) into target/test-tools/node",
            p.display()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
}

/// The official GitHub descriptions (file name, document): api.github.com and
/// the newest GitHub Enterprise Server.
pub fn github_descriptions() -> Result<Vec<(String, Value)>, String> {
    let dir = test_tools().join("node/node_modules/@octokit/openapi/generated");
    let mut out = vec![(
        "api.github.com.json".to_string(),
        read_json(&dir.join("api.github.com.json"))?,
    )];
    let mut ghes: Vec<(Vec<u32>, String)> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| {
            let v = n.strip_prefix("ghes-")?.strip_suffix(".json")?;
            let v: Vec<u32> = v
                .split('.')
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            Some((v, n))
        })
        .collect();
    ghes.sort();
    let (_, newest) = ghes
        .pop()
        .ok_or_else(|| format!("{}: no ghes-*.json", dir.display()))?;
    out.push((newest.clone(), read_json(&dir.join(&newest))?));
    Ok(out)
}

/// The committed GitLab subset.
pub fn gitlab_subset() -> Result<Value, String> {
    read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../dandori-forge/openapi/gitlab-subset.json"),
    )
}

/// `node` with its `$ref`s followed (`#/components/...`).
fn deref<'a>(doc: &'a Value, mut node: &'a Value) -> &'a Value {
    for _ in 0..32 {
        let Some(r) = node.get("$ref").and_then(Value::as_str) else {
            return node;
        };
        node = r
            .strip_prefix('#')
            .and_then(|p| doc.pointer(p))
            .unwrap_or_else(|| panic!("unresolvable $ref {r}"));
    }
    node
}

/// The operation template matching `path`: `{x}` matches one segment; the
/// template with the most literal segments wins (`issues/comments/{id}` over
/// `issues/{n}/...`).
pub fn template<'a>(doc: &'a Value, path: &str) -> Option<(&'a str, &'a Value)> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    doc["paths"]
        .as_object()?
        .iter()
        .filter_map(|(t, ops)| {
            let ts: Vec<&str> = t.split('/').filter(|s| !s.is_empty()).collect();
            let fits = ts.len() == segs.len()
                && ts
                    .iter()
                    .zip(&segs)
                    .all(|(a, b)| a.starts_with('{') || a == b);
            fits.then(|| {
                let literal = ts.iter().filter(|a| !a.starts_with('{')).count();
                (literal, t.as_str(), ops)
            })
        })
        .max_by_key(|(literal, _, _)| *literal)
        .map(|(_, t, ops)| (t, ops))
}

fn format_ok(format: &str, s: &str) -> bool {
    match format {
        "uri" => s.starts_with("http://") || s.starts_with("https://"),
        "date-time" => chrono::DateTime::parse_from_rfc3339(s).is_ok(),
        "email" => s.contains('@'),
        _ => true,
    }
}

/// `v` against `schema`; `strict` rejects properties the schema does not
/// name (dandori's request bodies), responses may carry more.
pub fn check(
    doc: &Value,
    schema: &Value,
    v: &Value,
    at: &str,
    strict: bool,
    errs: &mut Vec<String>,
) {
    let schema = deref(doc, schema);
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for s in all {
            check(doc, s, v, at, strict, errs);
        }
    }
    let alternatives = |key: &str| schema.get(key).and_then(Value::as_array);
    if let Some(alts) = alternatives("oneOf").or_else(|| alternatives("anyOf")) {
        // A discriminator names the alternative.
        if let Some(d) = schema.get("discriminator") {
            let prop = d["propertyName"].as_str().unwrap_or("");
            let Some(tag) = v.get(prop).and_then(Value::as_str) else {
                errs.push(format!("{at}.{prop}: the discriminator is missing"));
                return;
            };
            match d.pointer(&format!("/mapping/{tag}")) {
                Some(r) => check(doc, &serde_json::json!({"$ref": r}), v, at, strict, errs),
                None => errs.push(format!("{at}.{prop}: {tag} is not in the mapping")),
            }
            return;
        }
        let matching = alts
            .iter()
            .filter(|a| {
                let mut e = Vec::new();
                check(doc, a, v, at, strict, &mut e);
                e.is_empty()
            })
            .count();
        let one_of = schema.get("oneOf").is_some();
        if matching == 0 || (one_of && matching > 1 && !v.is_null()) {
            errs.push(format!(
                "{at}: {matching} of {} alternatives match {v}",
                alts.len()
            ));
        }
        return;
    }
    if v.is_null() {
        let nullable = schema.get("nullable") == Some(&Value::Bool(true))
            || schema.get("type") == Some(&Value::String("null".into()));
        if !nullable && schema.get("type").is_some() {
            errs.push(format!("{at}: null where the schema is not nullable"));
        }
        return;
    }
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    let ok = match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        // JSON Schema's `null` (OpenAPI 3.1, the webhook schemas): v is not null here.
        "null" => false,
        _ => true,
    };
    if !ok {
        errs.push(format!("{at}: expected {ty}, got {v}"));
        return;
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        errs.push(format!("{at}: {v} not in {e:?}"));
    }
    if let (Some(f), Some(s)) = (schema.get("format").and_then(Value::as_str), v.as_str())
        && !format_ok(f, s)
    {
        errs.push(format!("{at}: {s:?} is not a {f}"));
    }
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
        && v.as_array().is_some_and(|a| (a.len() as u64) < min)
    {
        errs.push(format!("{at}: fewer than {min} items"));
    }
    for r in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if v.get(r).is_none() {
            errs.push(format!("{at}.{r}: required, missing"));
        }
    }
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(obj) = v.as_object() {
        for (k, x) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => check(doc, s, x, &format!("{at}.{k}"), strict, errs),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        errs.push(format!("{at}.{k}: not a property of the schema"))
                    }
                    Some(s @ Value::Object(_)) => {
                        check(doc, s, x, &format!("{at}.{k}"), strict, errs)
                    }
                    _ if strict && props.is_some() => {
                        errs.push(format!("{at}.{k}: not a property of the schema"))
                    }
                    _ => {}
                },
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(doc, items, x, &format!("{at}[{i}]"), strict, errs);
        }
    }
}

/// A parameter value (path segment or query value) against its schema.
fn check_param(doc: &Value, p: &Value, raw: &str, at: &str, errs: &mut Vec<String>) {
    let schema = deref(doc, p.get("schema").unwrap_or(p));
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    let v = match ty {
        "integer" => match raw.parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => {
                errs.push(format!("{at}: {raw:?} is not an integer"));
                return;
            }
        },
        "boolean" => Value::Bool(raw == "true"),
        _ => Value::String(raw.to_string()),
    };
    check(doc, schema, &v, at, true, errs);
}

/// One exchange against `doc`; returns the operation's id (or `METHOD template`).
pub fn check_exchange(doc: &Value, e: &ForgeExchange, errs: &mut Vec<String>) -> Option<String> {
    let Some((t, ops)) = template(doc, &e.path) else {
        errs.push(format!(
            "{} {}: no such path in the description",
            e.method, e.path
        ));
        return None;
    };
    let Some(op) = ops.get(e.method.to_lowercase()) else {
        errs.push(format!("{} {t}: no such operation", e.method));
        return None;
    };
    let name = op["operationId"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("{} {t}", e.method));
    let at = format!("{name} ({} {})", e.method, e.path);
    let params: Vec<&Value> = ops
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .chain(op.get("parameters").and_then(Value::as_array))
        .flatten()
        .map(|p| deref(doc, p))
        .collect();
    let find = |name: &str, place: &str| {
        params
            .iter()
            .find(|p| p["name"] == name && p["in"] == place)
            .copied()
    };
    // Path parameters.
    let segs = e.path.split('/').filter(|s| !s.is_empty());
    for (ts, seg) in t.split('/').filter(|s| !s.is_empty()).zip(segs) {
        if let Some(n) = ts.strip_prefix('{').and_then(|x| x.strip_suffix('}')) {
            match find(n, "path") {
                Some(p) => check_param(doc, p, seg, &format!("{at} path {n}"), errs),
                None => errs.push(format!("{at}: path parameter {n} is not declared")),
            }
        }
    }
    // Query parameters.
    let mut sent = BTreeSet::new();
    for kv in e.query.split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        sent.insert(k.to_string());
        match find(k, "query") {
            Some(p) => check_param(doc, p, v, &format!("{at} query {k}"), errs),
            None => errs.push(format!("{at}: query parameter {k} is not declared")),
        }
    }
    for p in &params {
        if p["in"] == "query"
            && p["required"] == true
            && !sent.contains(p["name"].as_str().unwrap_or(""))
        {
            errs.push(format!(
                "{at}: required query parameter {} missing",
                p["name"]
            ));
        }
    }
    // The request body.
    let body_schema = op
        .get("requestBody")
        .map(|b| deref(doc, b))
        .and_then(|b| b.pointer("/content/application~1json/schema"));
    match body_schema {
        Some(s) => check(doc, s, &e.body, &format!("{at} request"), true, errs),
        None if !e.body.is_null() => {
            errs.push(format!("{at}: a request body the operation does not take"));
        }
        None => {}
    }
    // The response, when the description gives the status a JSON schema.
    let code = e.status.to_string();
    match op
        .pointer(&format!("/responses/{code}"))
        .map(|r| deref(doc, r))
    {
        Some(r) => {
            if let Some(s) = r.pointer("/content/application~1json/schema") {
                check(doc, s, &e.response, &format!("{at} {code}"), false, errs);
            }
        }
        None if (200..300).contains(&e.status) => {
            errs.push(format!(
                "{at}: status {code} is not a response of the operation"
            ));
        }
        None => {}
    }
    Some(name)
}

/// Every exchange against `doc`: the operation ids used and the problems.
pub fn check_exchanges(
    doc: &Value,
    exchanges: &[ForgeExchange],
) -> (BTreeSet<String>, Vec<String>) {
    let mut errs = Vec::new();
    let ops = exchanges
        .iter()
        .filter_map(|e| check_exchange(doc, e, &mut errs))
        .collect();
    (ops, errs)
}

/// The GitHub exchanges against every official description and the GitLab
/// ones against the subset: the problems, each prefixed with the document.
pub fn check_all(exchanges: &[ForgeExchange]) -> Result<Vec<String>, String> {
    // GitHub's GraphQL endpoint (the ready-for-review mutation) is not part of
    // the REST descriptions: the fake checks its body itself.
    let (gh, gl): (Vec<ForgeExchange>, Vec<ForgeExchange>) = exchanges
        .iter()
        .filter(|e| !(e.api == crate::fake_forge::Api::GitHub && e.path == "/graphql"))
        .cloned()
        .partition(|e| e.api == crate::fake_forge::Api::GitHub);
    let mut out = Vec::new();
    if !gh.is_empty() {
        for (name, doc) in github_descriptions()? {
            out.extend(
                check_exchanges(&doc, &gh)
                    .1
                    .into_iter()
                    .map(|e| format!("{name}: {e}")),
            );
        }
    }
    if !gl.is_empty() {
        let doc = gitlab_subset()?;
        out.extend(
            check_exchanges(&doc, &gl)
                .1
                .into_iter()
                .map(|e| format!("gitlab-subset.json: {e}")),
        );
    }
    Ok(out)
}
