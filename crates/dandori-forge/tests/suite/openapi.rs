//! The fake forge's responses and dandori's requests against the committed
//! OpenAPI subsets (crates/dandori-forge/openapi, refreshed by
//! scripts/refresh-forge-openapi.py).

use dandori_config::{ForgeOperation, ForgesConfig};
use dandori_forge::record::ForgeRecord;
use dandori_forge::{ForgeRef, report};
use dandori_test_support::fake_forge::{Api, ForgeExchange, ItemKind};
use serde_json::Value;

use super::client::{client, seeded};

fn subset(name: &str) -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("openapi")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The subset's path template matching `path` (`{x}` matches one segment).
fn template<'a>(doc: &'a Value, path: &str) -> Option<(&'a str, &'a Value)> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    doc["paths"].as_object()?.iter().find_map(|(t, ops)| {
        let ts: Vec<&str> = t.split('/').filter(|s| !s.is_empty()).collect();
        (ts.len() == segs.len()
            && ts
                .iter()
                .zip(&segs)
                .all(|(a, b)| a.starts_with('{') || a == b))
        .then_some((t.as_str(), ops))
    })
}

fn check(schema: &Value, v: &Value, at: &str, errs: &mut Vec<String>) {
    if v.is_null() {
        if schema.get("nullable") != Some(&Value::Bool(true)) {
            errs.push(format!("{at}: null where not nullable"));
        }
        return;
    }
    if let Some(alts) = schema.get("oneOf").and_then(Value::as_array) {
        let ok = alts.iter().any(|a| {
            let mut e = Vec::new();
            check(a, v, at, &mut e);
            e.is_empty()
        });
        if !ok {
            errs.push(format!("{at}: matches no alternative"));
        }
        return;
    }
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    let ok = match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_u64() || v.is_i64(),
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
    if let Some(req) = schema.get("required").and_then(Value::as_array) {
        for r in req.iter().filter_map(Value::as_str) {
            if v.get(r).is_none() {
                errs.push(format!("{at}.{r}: required, missing"));
            }
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, s) in props {
            if let Some(x) = v.get(k) {
                check(s, x, &format!("{at}.{k}"), errs);
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(items, x, &format!("{at}[{i}]"), errs);
        }
    }
}

fn check_exchanges(exchanges: &[ForgeExchange]) -> (usize, Vec<String>) {
    let gh = subset("github-subset.json");
    let gl = subset("gitlab-subset.json");
    let mut errs = Vec::new();
    let mut checked = 0;
    for e in exchanges {
        let doc = if e.api == Api::GitHub { &gh } else { &gl };
        let path = e.path.replace("%2F", "/");
        // GitLab's {id} is one url-encoded segment.
        let path = if e.api == Api::GitLab {
            e.path.clone()
        } else {
            path
        };
        let Some((t, ops)) = template(doc, &path) else {
            errs.push(format!("{} {}: not in the subset", e.method, e.path));
            continue;
        };
        let Some(op) = ops.get(e.method.to_lowercase()) else {
            errs.push(format!("{} {t}: method not in the subset", e.method));
            continue;
        };
        if let Some(s) = op.pointer("/requestBody/content/application~1json/schema") {
            check(s, &e.body, &format!("{} {t} request", e.method), &mut errs);
        } else if !e.body.is_null() {
            errs.push(format!(
                "{} {t}: a body the operation does not take",
                e.method
            ));
        }
        if (200..300).contains(&e.status) {
            let code = e.status.to_string();
            match op.pointer(&format!(
                "/responses/{code}/content/application~1json/schema"
            )) {
                Some(s) => check(
                    s,
                    &e.response,
                    &format!("{} {t} {code}", e.method),
                    &mut errs,
                ),
                None => errs.push(format!("{} {t}: status {code} not in the subset", e.method)),
            }
        }
        checked += 1;
    }
    (checked, errs)
}

#[test]
fn requests_and_responses_match_the_openapi_subsets() {
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
    }
    let (checked, errs) = check_exchanges(&f.exchanges());
    assert!(errs.is_empty(), "{errs:#?}");
    assert!(checked >= 20, "{checked} exchanges checked");
    // Every operation of both subsets was exercised.
    for (name, api) in [
        ("github-subset.json", Api::GitHub),
        ("gitlab-subset.json", Api::GitLab),
    ] {
        let doc = subset(name);
        for (t, ops) in doc["paths"].as_object().unwrap() {
            for m in ops.as_object().unwrap().keys() {
                let used = f.exchanges().iter().any(|e| {
                    e.api == api
                        && e.method.eq_ignore_ascii_case(m)
                        && template(&doc, &e.path).map(|(x, _)| x) == Some(t.as_str())
                });
                assert!(used, "{name}: {m} {t} never exercised");
            }
        }
    }
}
