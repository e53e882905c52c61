mod anthropic;
mod budget;
mod openai;
mod proptests;
mod retry;
mod structured;

use std::collections::BTreeMap;

use dandori_config::{ProviderConfig, ProviderKind, TokenBudgets};
use dandori_llm::Client;

pub const KEY: &str = "sk-test-0123456789abcdefXYZ";

/// A provider with fast retries and 1 s time limits, key in `TEST_KEY`.
pub fn provider(kind: ProviderKind, base_url: &str) -> ProviderConfig {
    let mut p = ProviderConfig::new("fake", kind, base_url, "fake-model");
    p.api_key_env = Some("TEST_KEY".to_string());
    p.request_timeout_secs = 1;
    p.stream_idle_timeout_secs = 1;
    p.retry_base_delay_ms = 5;
    p.max_retries = 3;
    p
}

pub fn env() -> BTreeMap<String, String> {
    BTreeMap::from([("TEST_KEY".to_string(), KEY.to_string())])
}

pub fn client(config: &ProviderConfig) -> Client {
    let env = env();
    Client::from_config(config, &TokenBudgets::default(), &|k| env.get(k).cloned())
        .unwrap_or_else(|e| panic!("client: {e}"))
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}
