//! Observability of every command: the seed 000 §16.4.1 human log (`dandori.log`
//! beside each `trace.jsonl`, at `planning.logging.level`) and the OpenTelemetry
//! export of the spans of what this command traced (when an OTLP endpoint is set
//! by `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
//! `telemetry.otlp_endpoint`). Both read the trace events after masking.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use dandori_config::planning::LogLevel;
use dandori_trace::TraceEvent;

use crate::output;

type Collected = Arc<Mutex<BTreeMap<PathBuf, Vec<TraceEvent>>>>;

struct State {
    level: AtomicU8,
    collect: AtomicBool,
    telemetry: Mutex<dandori_config::TelemetryConfig>,
    events: Collected,
}

static STATE: std::sync::OnceLock<Arc<State>> = std::sync::OnceLock::new();

fn level_code(l: LogLevel) -> u8 {
    match l {
        LogLevel::Debug => 0,
        LogLevel::Info => 1,
        LogLevel::Warning => 2,
        LogLevel::Error => 3,
    }
}

fn level_of(code: u8) -> LogLevel {
    match code {
        0 => LogLevel::Debug,
        1 => LogLevel::Info,
        2 => LogLevel::Warning,
        _ => LogLevel::Error,
    }
}

fn env_map() -> BTreeMap<String, String> {
    std::env::vars().collect()
}

/// Exports at drop (end of the command).
pub struct Session;

impl Session {
    /// Installs the trace observer for this process.
    pub fn start() -> Session {
        let state = Arc::new(State {
            level: AtomicU8::new(level_code(LogLevel::Info)),
            // Off at zero cost unless an endpoint is in the environment; a config
            // endpoint turns it on when the config loads.
            collect: AtomicBool::new(
                dandori_obs::otlp::OtlpConfig::resolve(&env_map(), &Default::default())
                    .map(|c| c.is_some())
                    .unwrap_or(true),
            ),
            telemetry: Mutex::new(Default::default()),
            events: Arc::new(Mutex::new(BTreeMap::new())),
        });
        if STATE.set(state.clone()).is_ok() {
            let observer = state.clone();
            dandori_trace::set_observer(Box::new(move |path: &Path, ev: &TraceEvent| {
                dandori_obs::log::append(
                    path,
                    ev,
                    level_of(observer.level.load(Ordering::Relaxed)),
                );
                if observer.collect.load(Ordering::Relaxed)
                    && let Ok(mut m) = observer.events.lock()
                {
                    m.entry(path.to_path_buf()).or_default().push(ev.clone());
                }
            }));
        }
        Session
    }
}

/// Takes the logging level and telemetry settings of a loaded config.
pub fn configure(config: &dandori_config::Config) {
    let Some(state) = STATE.get() else { return };
    state
        .level
        .store(level_code(config.planning.logging.level), Ordering::Relaxed);
    if config.telemetry.otlp_endpoint.is_some() {
        state.collect.store(true, Ordering::Relaxed);
    }
    if let Ok(mut t) = state.telemetry.lock() {
        *t = config.telemetry.clone();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let Some(state) = STATE.get() else { return };
        if !state.collect.load(Ordering::Relaxed) {
            return;
        }
        let telemetry = state
            .telemetry
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default();
        let config = match dandori_obs::otlp::OtlpConfig::resolve(&env_map(), &telemetry) {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(e) => {
                output::progress(&format!("warning: OpenTelemetry export off: {e}"));
                return;
            }
        };
        let collected = match state.events.lock() {
            Ok(mut m) => std::mem::take(&mut *m),
            Err(_) => return,
        };
        let spans: Vec<_> = collected
            .values()
            .flat_map(|events| dandori_obs::otlp::spans(events))
            .collect();
        if let Err(e) = dandori_obs::otlp::export(&config, &spans) {
            output::progress(&format!("warning: {e}"));
        }
    }
}
