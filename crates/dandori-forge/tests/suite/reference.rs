use dandori_forge::{Forge, ForgeRef, ItemKind};

#[test]
fn shorthands_parse_and_print_back() {
    for (input, forge, kind, project, n) in [
        (
            "github:octo/hello#15",
            Forge::GitHub,
            ItemKind::Issue,
            "octo/hello",
            15,
        ),
        (
            "github-pr:octo/hello#7",
            Forge::GitHub,
            ItemKind::ChangeRequest,
            "octo/hello",
            7,
        ),
        (
            "gitlab:grp/sub/proj#3",
            Forge::GitLab,
            ItemKind::Issue,
            "grp/sub/proj",
            3,
        ),
        (
            "gitlab-mr:grp/proj!9",
            Forge::GitLab,
            ItemKind::ChangeRequest,
            "grp/proj",
            9,
        ),
        (
            "gitlab:grp/proj!9",
            Forge::GitLab,
            ItemKind::ChangeRequest,
            "grp/proj",
            9,
        ),
    ] {
        let r = ForgeRef::parse(input).unwrap();
        assert_eq!(
            (r.forge, r.kind, r.project.as_str(), r.number),
            (forge, kind, project, n),
            "{input}"
        );
        assert_eq!(ForgeRef::parse(&r.to_string()).unwrap(), r);
    }
}

#[test]
fn urls_parse_with_enterprise_and_self_hosted_hosts() {
    let r = ForgeRef::parse("https://github.com/octo/hello/issues/15#issuecomment-1").unwrap();
    assert_eq!(
        (r.forge, r.kind, r.number, r.host.clone()),
        (Forge::GitHub, ItemKind::Issue, 15, None)
    );
    let r = ForgeRef::parse("https://ghe.corp.example/team/app/pull/4/files").unwrap();
    assert_eq!(r.kind, ItemKind::ChangeRequest);
    assert_eq!(r.host.as_deref(), Some("ghe.corp.example"));
    let r = ForgeRef::parse("https://git.example.org/a/b/c/-/merge_requests/12").unwrap();
    assert_eq!(
        (r.forge, r.kind, r.project.as_str(), r.number),
        (Forge::GitLab, ItemKind::ChangeRequest, "a/b/c", 12)
    );
    let r = ForgeRef::parse("https://gitlab.com/a/b/-/issues/2").unwrap();
    assert_eq!((r.forge, r.host.clone()), (Forge::GitLab, None));
}

#[test]
fn bad_references_are_refused_with_a_reason_code() {
    for bad in [
        "octo/hello#1",
        "github:octo#1",
        "github:octo/hello",
        "github:octo/hello#0",
        "github:octo/../x#1",
        "bitbucket:a/b#1",
        "https://github.com/octo",
        "gitlab:single#1",
        "github:a/b c#1",
    ] {
        let e = ForgeRef::parse(bad).unwrap_err();
        assert_eq!(e.code(), "FORGE_REF_INVALID", "{bad}: {e}");
    }
}

#[test]
fn request_ids_are_plain_and_distinct() {
    let a = ForgeRef::parse("github:Octo/hello.rs#15")
        .unwrap()
        .request_id();
    assert_eq!(a, "github-Octo-hello-rs-15");
    let b = ForgeRef::parse("gitlab-mr:g/s/p!15").unwrap().request_id();
    assert_eq!(b, "gitlab-mr-g-s-p-15");
    let long = format!("gitlab:{}/p#1", vec!["group"; 40].join("/"));
    let id = ForgeRef::parse(&long).unwrap().request_id();
    assert!(id.len() <= 100 && id.ends_with("-p-1"), "{id}");
}

#[test]
fn every_reason_code_is_documented() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/forges.md"),
    )
    .unwrap();
    for code in dandori_forge::reason::ALL {
        assert!(
            doc.contains(&format!("| `{code}` |")),
            "{code} is not in docs/forges.md"
        );
    }
}
