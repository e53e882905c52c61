use std::io::Write;
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::json;

use dandori_config::SecurityConfig;
use dandori_tools::{
    Approver, AutoApprove, DenyNonInteractive, ReasonCode, TerminalApprover, ToolPolicy,
    ToolRegistry, ToolStatus,
};

use super::{Repo, call, env};

fn registry(repo: &Repo, approver: Arc<dyn Approver>) -> ToolRegistry {
    let security = SecurityConfig {
        allowed_tools: vec![],
        forbidden_tools: vec![],
        require_approval: vec!["write_*".into(), "run_command".into()],
    };
    ToolRegistry::builder(repo.path())
        .env(env())
        .policy(ToolPolicy::from_config(&security, true).unwrap())
        .approver(approver)
        .build()
        .unwrap()
}

#[test]
fn non_interactive_denies_unless_approved() {
    let repo = Repo::new();
    let reg = registry(&repo, Arc::new(DenyNonInteractive));
    let r = call(&reg, "write_file", json!({"path": "a.txt", "content": "x"}));
    assert_eq!(r.code(), Some(ReasonCode::ApprovalDenied));
    assert!(r.content.contains("rerun with --approve"), "{}", r.content);
    assert!(!repo.path().join("a.txt").exists());
    // Tools outside require_approval are not affected.
    assert_eq!(
        call(&reg, "read_file", json!({"path": "README.md"})).status,
        ToolStatus::Ok
    );

    let reg = registry(&repo, Arc::new(AutoApprove));
    let r = call(&reg, "write_file", json!({"path": "a.txt", "content": "x"}));
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
    assert_eq!(repo.read("a.txt"), "x");
}

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn terminal_asks_and_follows_the_answer() {
    let repo = Repo::new();
    let prompt = Shared::default();
    let answers = std::io::Cursor::new(b"n\ny\n".to_vec());
    let reg = registry(
        &repo,
        Arc::new(TerminalApprover::new(answers, prompt.clone())),
    );

    let r = call(&reg, "run_command", json!({"command": "touch first"}));
    assert_eq!(r.code(), Some(ReasonCode::ApprovalDenied));
    assert_eq!(
        r.content,
        "error [APPROVAL_DENIED]: the user declined tool `run_command`"
    );
    assert!(!repo.path().join("first").exists());

    let r = call(&reg, "run_command", json!({"command": "touch second"}));
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
    assert!(repo.path().join("second").exists());

    let asked = String::from_utf8(prompt.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        asked,
        "dandori: tool `run_command` requires approval\n  arguments: {\"command\":\"touch first\"}\n  approve? [y/N] \
         dandori: tool `run_command` requires approval\n  arguments: {\"command\":\"touch second\"}\n  approve? [y/N] "
    );
}
