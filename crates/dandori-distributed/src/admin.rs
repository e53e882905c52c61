//! Restate's admin API (port 9070 by default): is the step service registered, and
//! registering a worker's endpoint as a deployment.

use serde_json::json;

use crate::error::DistributedError;
use crate::protocol::RESTATE_UNAVAILABLE;

/// The admin URL of a Restate server whose ingress is `ingress` (same host,
/// port 9070).
pub fn default_admin_url(ingress: &str) -> String {
    let trimmed = ingress.trim_end_matches('/');
    let (scheme, rest) = trimmed.split_once("://").unwrap_or(("http", trimmed));
    let host = rest.split('/').next().unwrap_or(rest);
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    };
    format!("{scheme}://{host}:9070")
}

/// Whether `service` (`DandoriStep`, `DandoriRun`) is registered.
pub async fn service_registered(
    client: &reqwest::Client,
    admin: &str,
    service: &str,
) -> Result<bool, DistributedError> {
    let url = format!("{}/services/{service}", admin.trim_end_matches('/'));
    let resp = client
        .get(&url)
        .send()
        .await
        .map_err(|e| unreachable(&url, e))?;
    match resp.status().as_u16() {
        200 => Ok(true),
        404 => Ok(false),
        s => Err(DistributedError::Restate {
            url,
            message: format!("HTTP {s}: {}", resp.text().await.unwrap_or_default().trim()),
        }),
    }
}

/// Registers the worker endpoint `worker_url` (Restate discovers its services);
/// an endpoint already registered is fine.
pub async fn register(
    client: &reqwest::Client,
    admin: &str,
    worker_url: &str,
) -> Result<(), DistributedError> {
    let url = format!("{}/deployments", admin.trim_end_matches('/'));
    let resp = client
        .post(&url)
        .json(&json!({"uri": worker_url}))
        .send()
        .await
        .map_err(|e| unreachable(&url, e))?;
    match resp.status().as_u16() {
        200 | 201 | 409 => Ok(()),
        s => Err(DistributedError::Restate {
            url,
            message: format!(
                "registering {worker_url}: HTTP {s}: {}",
                resp.text().await.unwrap_or_default().trim()
            ),
        }),
    }
}

pub(crate) fn unreachable(url: &str, e: reqwest::Error) -> DistributedError {
    DistributedError::Restate {
        url: url.to_string(),
        message: format!("{RESTATE_UNAVAILABLE}: {e}"),
    }
}

pub use reqwest::Client;

/// An HTTP client for the admin API.
pub fn client() -> Result<Client, DistributedError> {
    Client::builder()
        .connect_timeout(std::time::Duration::from_secs(5))
        .build()
        .map_err(|e| DistributedError::Restate {
            url: String::new(),
            message: format!("HTTP client: {e}"),
        })
}
