//! The MCP protocol side: rmcp's server handler over stdio. Tool calls run on
//! blocking threads (planning and runs are synchronous); every error and even a
//! panic inside a tool becomes a tool error with a reason code, so no input ends
//! the server.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParam, CallToolResult, Content, Implementation, ListResourcesResult,
    ListToolsResult, PaginatedRequestParam, RawResource, ReadResourceRequestParam,
    ReadResourceResult, ResourceContents, ServerCapabilities, ServerInfo,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use crate::error::reason;
use crate::service::{Service, ServiceOptions, file_uri};
use crate::tools::{self, ToolSet};

/// Run files served as resources, relative to the run directory.
const RUN_FILES: &[(&str, &str)] = &[
    ("planning.json", "application/json"),
    ("stage.json", "application/json"),
    ("report.md", "text/markdown"),
    ("errors.json", "application/json"),
    ("trace.jsonl", "application/jsonl"),
    ("report.html", "text/html"),
    ("environment/summary.md", "text/markdown"),
    ("environment/setup.json", "application/json"),
];

/// How often a waiting `next` reports progress.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Sends `notifications/progress` until aborted: elapsed seconds as the progress,
/// the run's latest trace event as the message.
async fn progress_ticker(
    peer: rmcp::Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
    run_dir: Option<PathBuf>,
) {
    let started = std::time::Instant::now();
    loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        let elapsed = started.elapsed().as_secs();
        // A model call in flight says what it is waiting for (planning, size
        // estimation, reflection, the executor's tool loop).
        let activity = dandori_llm::progress::latest()
            .map(|p| dandori_llm::progress::render_line(&p))
            .or_else(|| run_dir.as_deref().and_then(last_activity));
        let message = match activity {
            Some(a) => format!("{a} ({elapsed} s)"),
            None => format!("waiting ({elapsed} s)"),
        };
        let sent = peer
            .notify_progress(rmcp::model::ProgressNotificationParam {
                progress_token: token.clone(),
                progress: elapsed as f64,
                total: None,
                message: Some(message),
            })
            .await;
        if sent.is_err() {
            return;
        }
    }
}

/// The last event of the run's trace (`ENV_SETUP_START`, `BASELINE`, `STEP_START
/// S02`), read from the end of `trace.jsonl`.
fn last_activity(run_dir: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(run_dir.join("trace.jsonl")).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(8192))).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))?;
    let v: Value = serde_json::from_str(line).ok()?;
    let event = v.get("event")?.as_str()?.to_string();
    Some(match v.pointer("/data/step_id").and_then(|s| s.as_str()) {
        Some(step) => format!("{event} {step}"),
        None => event,
    })
}

/// The dandori MCP server.
#[derive(Clone)]
pub struct DandoriServer {
    set: ToolSet,
    service: Arc<Service>,
}

impl DandoriServer {
    pub fn new(set: ToolSet, opts: ServiceOptions) -> Self {
        DandoriServer {
            set,
            service: Arc::new(Service::new(opts)),
        }
    }

    /// Serves MCP over stdin/stdout until the client closes the stream. Lines
    /// pass through [`crate::guard`] first: a malformed one gets its JSON-RPC error
    /// and the session goes on.
    pub async fn serve_stdio(self) -> Result<(), String> {
        self.serve_lines(tokio::io::stdin(), tokio::io::stdout())
            .await
    }

    /// Serves MCP over any line stream (stdio, or a pipe in tests).
    pub async fn serve_lines<R, W>(self, input: R, output: W) -> Result<(), String>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (our_read, our_write) = tokio::io::split(ours);
        let (answers_tx, answers_rx) = tokio::sync::mpsc::channel(64);
        let reader = tokio::spawn(crate::guard::filter_input(input, our_write, answers_tx));
        let writer = tokio::spawn(crate::guard::merge_output(our_read, answers_rx, output));
        let served = async {
            let running = self
                .serve(tokio::io::split(theirs))
                .await
                .map_err(|e| format!("MCP initialisation failed: {e}"))?;
            running
                .waiting()
                .await
                .map_err(|e| format!("MCP server task failed: {e}"))?;
            Ok::<(), String>(())
        }
        .await;
        // The session is over: the input side has nothing left to forward, and
        // the writer drains what the server and the guard still had to say.
        reader.abort();
        let _ = writer.await;
        served
    }

    /// Runs one tool and shapes its result (also used by tests and benches
    /// without a transport).
    pub async fn call(&self, name: &str, args: serde_json::Map<String, Value>) -> CallToolResult {
        if !tools::in_set(name, self.set) {
            return tool_error(
                reason::TOOL_UNKNOWN,
                &format!(
                    "no tool {name:?} in this tool set (start with --tools all for every tool)"
                ),
            );
        }
        let service = self.service.clone();
        let name_owned = name.to_string();
        let joined = tokio::task::spawn_blocking(move || service.call(&name_owned, &args)).await;
        match joined {
            Ok(Ok(value)) => {
                let text = serde_json::to_string(&value).unwrap_or_default();
                CallToolResult {
                    content: vec![Content::text(text)],
                    structured_content: Some(value),
                    is_error: Some(false),
                    meta: None,
                }
            }
            Ok(Err(e)) => tool_error(e.code(), &e.to_string()),
            Err(join) => tool_error(
                reason::IO_ERROR,
                &format!("tool {name} stopped unexpectedly: {join}"),
            ),
        }
    }

    fn readable(&self, uri: &str) -> Option<(PathBuf, &'static str)> {
        let path = PathBuf::from(uri.strip_prefix("file://")?);
        let path = dandori_fs::canonicalize(&path).ok()?;
        RUN_FILES.iter().find_map(|(name, mime)| {
            if !path.ends_with(name) {
                return None;
            }
            // Only files of a run directory: planning.json beside them.
            let run_dir = path.ancestors().nth(Path::new(name).components().count())?;
            run_dir
                .join("planning.json")
                .is_file()
                .then(|| (path.clone(), *mime))
        })
    }
}

fn tool_error(code: &str, message: &str) -> CallToolResult {
    let text = if message.starts_with(code) {
        message.to_string()
    } else {
        format!("{code}: {message}")
    };
    CallToolResult {
        content: vec![Content::text(text.clone())],
        structured_content: Some(json!({"error": {"code": code, "message": text}})),
        is_error: Some(true),
        meta: None,
    }
}

fn resources_of(run_dir: &Path) -> Vec<rmcp::model::Resource> {
    RUN_FILES
        .iter()
        .filter(|(n, _)| run_dir.join(n).is_file())
        .map(|(n, mime)| {
            let mut r = RawResource::new(file_uri(&run_dir.join(n)), n.to_string());
            r.mime_type = Some(mime.to_string());
            r.description = Some(format!("{n} of {}", run_dir.display()));
            rmcp::model::Annotated::new(r, None)
        })
        .collect()
}

impl ServerHandler for DandoriServer {
    fn get_info(&self) -> ServerInfo {
        ServerInfo {
            capabilities: ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
            server_info: Implementation {
                name: "dandori".to_string(),
                title: None,
                version: env!("CARGO_PKG_VERSION").to_string(),
                icons: None,
                website_url: None,
            },
            instructions: Some(
                "plan a request, then loop: next -> step -> edit files in the step's workdir -> step_update done; report at the end."
                    .to_string(),
            ),
            ..ServerInfo::default()
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParam>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::tools(self.set)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParam,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        // `next` may wait minutes (environment setup, the baseline, steps), and
        // `plan` on a model as long: a client that sent a progress token hears
        // what the run or the model is doing.
        let ticker = context.meta.get_progress_token().map(|token| {
            let run_dir = request
                .arguments
                .as_ref()
                .and_then(|a| a.get("run_dir"))
                .and_then(|v| v.as_str())
                .map(PathBuf::from);
            tokio::spawn(progress_ticker(context.peer.clone(), token, run_dir))
        });
        let result = self
            .call(&request.name, request.arguments.unwrap_or_default())
            .await;
        if let Some(t) = ticker {
            t.abort();
        }
        Ok(result)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParam>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = self
            .service
            .known_runs()
            .iter()
            .flat_map(|d| resources_of(d))
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParam,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, ErrorData> {
        let Some((path, mime)) = self.readable(&request.uri) else {
            return Err(ErrorData::resource_not_found(
                format!(
                    "{}: {} is not a file of a run directory ({})",
                    reason::RESOURCE_UNKNOWN,
                    request.uri,
                    RUN_FILES
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            ));
        };
        let text = dandori_fs::read_to_string(&path)
            .map_err(|e| ErrorData::internal_error(format!("{}: {e}", reason::IO_ERROR), None))?;
        Ok(ReadResourceResult {
            contents: vec![ResourceContents::TextResourceContents {
                uri: request.uri,
                mime_type: Some(mime.to_string()),
                text,
                meta: None,
            }],
        })
    }
}
