//! dandori's requests and the fake forge's responses against the official
//! OpenAPI descriptions.
//!
//! GitHub: npm `@octokit/openapi` (GitHub's own generated descriptions:
//! `generated/api.github.com.json` and the newest `ghes-*.json`), installed by
//! scripts/test.sh into target/test-tools/node. Every exchange is matched to
//! its operation (method and path template), its path and query parameters and
//! JSON body are checked against the operation's parameters and request body
//! (unknown fields are errors), and the response against the schema of its
//! status code ($ref, required, types, formats, enums, nullable, oneOf with a
//! discriminator, anyOf, allOf).
//!
//! GitLab: its official description (doc/api/openapi/openapi_v2.yaml) is not
//! installable from a package registry; the committed subset
//! crates/dandori-forge/openapi/gitlab-subset.json is checked the same way
//! (scripts/refresh-forge-openapi.py refreshes it from the official file).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use dandori_config::{ForgeOperation, ForgesConfig};
use dandori_forge::record::ForgeRecord;
use dandori_forge::{ForgeRef, report};
use dandori_test_support::fake_forge::{Api, ForgeExchange, ItemKind};
use serde_json::Value;

use super::client::{client, seeded};

const OCTOKIT: &str = "@octokit/openapi";

fn tools() -> PathBuf {
    std::env::var_os("DANDORI_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools"))
}

fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: run the tests with ./scripts/test.sh, which installs npm {OCTOKIT} (GitHub's official OpenAPI descriptions) into target/test-tools/node",
            p.display()
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The official GitHub descriptions: api.github.com and the newest GHES.
fn github_docs() -> Vec<(String, Value)> {
    let dir = tools().join("node/node_modules/@octokit/openapi/generated");
    let mut out = vec![(
        "api.github.com.json".to_string(),
        read_json(&dir.join("api.github.com.json")),
    )];
    let mut ghes: Vec<(Vec<u32>, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
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
        .unwrap_or_else(|| panic!("{}: no ghes-*.json", dir.display()));
    out.push((newest.clone(), read_json(&dir.join(&newest))));
    out
}

fn gitlab_subset() -> Value {
    read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("openapi")
            .join("gitlab-subset.json"),
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
fn template<'a>(doc: &'a Value, path: &str) -> Option<(&'a str, &'a Value)> {
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
fn check(doc: &Value, schema: &Value, v: &Value, at: &str, strict: bool, errs: &mut Vec<String>) {
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
fn check_exchange(doc: &Value, e: &ForgeExchange, errs: &mut Vec<String>) -> Option<String> {
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

/// Exercises every request dandori's forge client makes, on both forges.
fn exercise() -> dandori_test_support::fake_forge::FakeForge {
    let f = seeded();
    f.set_max_per_page(1);
    f.add_comment(Api::GitHub, "octo/app", 1, "alice", "one");
    f.add_comment(Api::GitHub, "octo/app", 1, "bob", "two");
    f.add_item(
        Api::GitHub,
        "octo/app",
        3,
        ItemKind::ChangeRequest,
        "PR",
        "b",
        &[],
        "alice",
    );
    f.add_review(Api::GitHub, "octo/app", 3, "carol", "", "APPROVED");
    f.add_review(
        Api::GitHub,
        "octo/app",
        3,
        "dave",
        "use tokio",
        "CHANGES_REQUESTED",
    );
    f.add_comment(Api::GitLab, "grp/sub/app", 2, "alice", "note");
    f.add_item(
        Api::GitLab,
        "grp/sub/app",
        4,
        ItemKind::ChangeRequest,
        "MR",
        "b",
        &[],
        "alice",
    );
    f.add_review(Api::GitLab, "grp/sub/app", 4, "carol", "diff note", "");
    f.add_team("octo/reviewers", &["carol"]);
    f.add_team("grp/maint", &["carol"]);
    let cfg = ForgesConfig::default();
    assert!(cfg.operations.contains(&ForgeOperation::Label));
    for reference in [
        "github:octo/app#1",
        "github-pr:octo/app#3",
        "gitlab:grp/sub/app#2",
        "gitlab-mr:grp/sub/app!4",
    ] {
        let r = ForgeRef::parse(reference).unwrap();
        let c = client(&f, &r, &cfg);
        assert_eq!(c.whoami().unwrap(), "dandori-bot");
        let issue = c.issue(&r).unwrap();
        let mut rec = ForgeRecord {
            reference: r.clone(),
            source: r.to_string(),
            web_url: issue.web_url.clone(),
            title: issue.title.clone(),
            issue_author: issue.author.clone(),
            labels: issue.labels.clone(),
            task_type: r.task_type().into(),
            comment: true,
            comments: Default::default(),
            consumed: Default::default(),
            help_label: false,
        };
        report::upsert(
            &c,
            &cfg,
            &mut rec,
            "status",
            "<!-- dandori:status x -->\nfirst",
        )
        .unwrap();
        report::upsert(
            &c,
            &cfg,
            &mut rec,
            "status",
            "<!-- dandori:status x -->\nsecond",
        )
        .unwrap();
        if r.kind == dandori_forge::ItemKind::Issue {
            report::add_help_label(&c, &cfg, &mut rec).unwrap();
        }
        let team = if r.forge == dandori_forge::Forge::GitHub {
            "octo/reviewers"
        } else {
            "grp/maint"
        };
        assert!(c.is_member(team, "carol").unwrap());
        assert!(!c.is_member(team, "mallory").unwrap());
        // A missing item: the 404 answer is checked too.
        let missing = ForgeRef::parse(&reference.replace(['1', '3', '2', '4'], "9")).unwrap();
        assert!(c.issue(&missing).is_err());
    }
    f
}

#[test]
fn github_requests_and_responses_match_the_official_descriptions() {
    let f = exercise();
    let exchanges: Vec<ForgeExchange> = f
        .exchanges()
        .into_iter()
        .filter(|e| e.api == Api::GitHub)
        .collect();
    for (name, doc) in github_docs() {
        let mut errs = Vec::new();
        let ops: BTreeSet<String> = exchanges
            .iter()
            .filter_map(|e| check_exchange(&doc, e, &mut errs))
            .collect();
        assert!(errs.is_empty(), "{name}: {errs:#?}");
        // Every operation dandori's GitHub client performs was exercised.
        let expected: BTreeSet<String> = [
            "users/get-authenticated",
            "issues/get",
            "issues/list-comments",
            "issues/create-comment",
            "issues/update-comment",
            "issues/add-labels",
            "pulls/list-reviews",
            "teams/get-membership-for-user-in-org",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(ops, expected, "{name}");
        assert!(
            exchanges.len() >= 20,
            "{name}: {} exchanges",
            exchanges.len()
        );
    }
}

#[test]
fn gitlab_requests_and_responses_match_the_subset() {
    let f = exercise();
    let doc = gitlab_subset();
    let exchanges: Vec<ForgeExchange> = f
        .exchanges()
        .into_iter()
        .filter(|e| e.api == Api::GitLab)
        .collect();
    let mut errs = Vec::new();
    let ops: BTreeSet<String> = exchanges
        .iter()
        .filter_map(|e| check_exchange(&doc, e, &mut errs))
        .collect();
    assert!(errs.is_empty(), "{errs:#?}");
    // Every operation of the subset was exercised.
    for (t, m) in doc["paths"].as_object().unwrap() {
        for method in m.as_object().unwrap().keys().filter(|k| *k != "parameters") {
            let id = m[method]["operationId"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("{} {t}", method.to_uppercase()));
            assert!(
                ops.contains(&id),
                "gitlab-subset.json: {method} {t} never exercised"
            );
        }
    }
}

#[test]
fn the_checker_rejects_what_the_description_forbids() {
    let docs = github_docs();
    let doc = &docs[0].1;
    let base = ForgeExchange {
        api: Api::GitHub,
        method: "POST".into(),
        path: "/repos/o/r/issues/1/comments".into(),
        query: String::new(),
        headers: Default::default(),
        body: serde_json::json!({"body": "hi"}),
        status: 422,
        response: serde_json::json!({"message": "x", "documentation_url": "https://docs.github.com/rest"}),
    };
    let errors = |e: &ForgeExchange| {
        let mut errs = Vec::new();
        check_exchange(doc, e, &mut errs);
        errs
    };
    assert!(errors(&base).is_empty(), "{:?}", errors(&base));
    let mut e = base.clone();
    e.body = serde_json::json!({"text": "hi"});
    let errs = errors(&e);
    assert!(
        errs.iter().any(|x| x.contains("body: required")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|x| x.contains(".text: not a property")),
        "{errs:?}"
    );
    let mut e = base.clone();
    e.path = "/repos/o/r/issues/one/comments".into();
    assert!(errors(&e).iter().any(|x| x.contains("not an integer")));
    let mut e = base.clone();
    e.method = "GET".into();
    e.body = Value::Null;
    e.query = "per_page=100&colour=red".into();
    assert!(
        errors(&e)
            .iter()
            .any(|x| x.contains("query parameter colour"))
    );
    let mut e = base.clone();
    e.status = 201;
    e.response = serde_json::json!({"id": "7", "node_id": "x"});
    let errs = errors(&e);
    assert!(
        errs.iter().any(|x| x.contains(".id: expected integer")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|x| x.contains(".user: required")),
        "{errs:?}"
    );
    let mut e = base.clone();
    e.method = "DELETE".into();
    e.path = "/repos/o/r/issues/1/comments/nope/x".into();
    assert!(errors(&e).iter().any(|x| x.contains("no such path")));
}
