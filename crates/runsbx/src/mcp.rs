//! `runsbx mcp`: an MCP server over stdio whose tools run Python in one
//! sandboxed session (a `runsbx sandbox` of the REPL driver, as a session of
//! `serve`), kept across calls, started in the background when the server
//! starts and again after `restart_python` or a limit.
//!
//! Tools: `run_python` (stdout, the error, and every matplotlib figure as an
//! image), `restart_python`, `list_files` and `read_file` (the session's
//! workdir, read from inside the sandbox, so they see no more than the code
//! does).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::serve::{Factory, Session};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct RunPython {
    #[schemars(description = "Python code; the session's variables persist between calls")]
    pub code: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ReadFile {
    #[schemars(description = "a path relative to the session's working directory")]
    pub path: String,
}

#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct NoArguments {}

struct Inner {
    factory: Factory,
    session: Mutex<Option<Session>>,
    call_timeout: Option<Duration>,
    /// The client went: no session is started any more.
    closing: AtomicBool,
}

#[derive(Clone)]
pub struct Mcp {
    inner: Arc<Inner>,
    tool_router: ToolRouter<Self>,
}

/// Serves MCP on stdin/stdout until the client closes them.
pub fn run(factory: Factory, call_timeout: Option<Duration>) -> Result<u8> {
    let server = Mcp {
        inner: Arc::new(Inner {
            factory,
            session: Mutex::new(None),
            call_timeout,
            closing: AtomicBool::new(false),
        }),
        tool_router: Mcp::tool_router(),
    };
    let inner = server.inner.clone();
    Inner::warm_up(inner.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    rt.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .context("MCP initialization")?;
        service.waiting().await.context("MCP service")?;
        anyhow::Ok(())
    })?;
    inner.closing.store(true, Ordering::SeqCst);
    inner.end();
    Ok(0)
}

#[tool_router]
impl Mcp {
    #[tool(
        description = "Run Python code in a sandbox (no network, no files outside its working directory, no subprocesses). State persists between calls. Returns what the code printed, the traceback if it raised, and every matplotlib figure it left open as an image."
    )]
    async fn run_python(
        &self,
        Parameters(RunPython { code }): Parameters<RunPython>,
    ) -> Result<CallToolResult, ErrorData> {
        self.blocking(move |inner| inner.run(&code)).await
    }

    #[tool(
        description = "End the Python session; the next run_python starts a fresh interpreter with an empty working directory."
    )]
    async fn restart_python(
        &self,
        Parameters(_): Parameters<NoArguments>,
    ) -> Result<CallToolResult, ErrorData> {
        self.blocking(|inner| {
            inner.end();
            CallToolResult::success(vec![ContentBlock::text(
                "the session ended; the next call starts a fresh interpreter",
            )])
        })
        .await
    }

    #[tool(description = "List the files in the session's working directory, with their sizes.")]
    async fn list_files(
        &self,
        Parameters(_): Parameters<NoArguments>,
    ) -> Result<CallToolResult, ErrorData> {
        self.blocking(|inner| inner.run_quiet(LIST_FILES)).await
    }

    #[tool(
        description = "Read a file of the session's working directory: text as text, a PNG or JPEG as an image."
    )]
    async fn read_file(
        &self,
        Parameters(ReadFile { path }): Parameters<ReadFile>,
    ) -> Result<CallToolResult, ErrorData> {
        self.blocking(move |inner| inner.read(&path)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Mcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("runsbx", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "runsbx: Python in a sandbox. run_python keeps state between calls; restart_python starts over.",
            )
    }
}

/// Run inside the session through `exec` with a dict of its own, so the
/// user's variables are not touched.
const LIST_FILES: &str = "exec(\"import os, json\\nout = []\\nfor root, dirs, files in os.walk('.'):\\n    for f in files:\\n        p = os.path.join(root, f)\\n        out.append([p[2:], os.path.getsize(p)])\\nprint(json.dumps(sorted(out)))\", {})";

/// One piece of a file, base64 in JSON: small enough for the REPL's 64 KiB
/// output capture. The host puts the pieces together and decides what the
/// file is: nothing the workload says about it is taken.
const READ_CHUNK: &str = "import base64, json, os\nwith open(path, 'rb') as f:\n    size = os.fstat(f.fileno()).st_size\n    f.seek(offset)\n    data = f.read(32768)\nprint(json.dumps({'size': size, 'base64': base64.b64encode(data).decode()}))";

/// The largest file `read_file` returns.
const MAX_READ: u64 = 8 << 20;

impl Mcp {
    /// `f` on a blocking thread: sessions are plain pipes and processes.
    async fn blocking<F>(&self, f: F) -> Result<CallToolResult, ErrorData>
    where
        F: FnOnce(&Inner) -> CallToolResult + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let result = f(&inner);
            // The call ended the session (restart_python, a limit): the next
            // one is made now, not when it is asked for.
            if inner
                .session
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_none()
            {
                Inner::warm_up(inner.clone());
            }
            result
        })
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

enum Answer {
    Ok(Value),
    Failed(CallToolResult),
}

impl Inner {
    /// Starts the next session in the background, so that the first call
    /// after the server starts, a restart or a limit finds it warm. A call
    /// made meanwhile waits for it; a start that fails is tried again, and
    /// reported, by the next call.
    fn warm_up(inner: Arc<Self>) {
        std::thread::spawn(move || {
            let mut guard = inner.session.lock().unwrap_or_else(|e| e.into_inner());
            if guard.is_none() && !inner.closing.load(Ordering::SeqCst) {
                *guard = inner.factory.start().ok();
                if let Some(s) = guard.as_ref() {
                    s.handed_out();
                }
            }
        });
    }

    fn end(&self) {
        if let Some(s) = self
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            s.kill();
            s.finish();
        }
    }

    /// `code`'s answer from the session (started if there is none); a
    /// session that ends on the way (a limit, a crash) is gone, and the
    /// result says why.
    fn ask(&self, code: &str) -> Answer {
        let mut guard = self.session.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            match self.factory.start() {
                Ok(s) => {
                    s.handed_out();
                    *guard = Some(s)
                }
                Err(e) => {
                    return Answer::Failed(error(format!("the sandbox did not start: {e:#}")))
                }
            }
        }
        let session = guard.as_mut().expect("started");
        let timed_out = Arc::new(AtomicBool::new(false));
        let (done, wait) = std::sync::mpsc::channel::<()>();
        if let Some(limit) = self.call_timeout {
            let (timed_out, killer) = (timed_out.clone(), session.killer.clone());
            std::thread::spawn(move || {
                use std::sync::mpsc::RecvTimeoutError;
                if let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(limit) {
                    timed_out.store(true, Ordering::SeqCst);
                    killer.kill();
                }
            });
        }
        let answer = session.request(code);
        drop(done);
        match answer.and_then(|a| serde_json::from_str::<Value>(&a).ok()) {
            Some(v) => Answer::Ok(v),
            None => {
                let s = guard.take().expect("started");
                s.kill();
                let outcome = s.finish();
                let reason = if timed_out.load(Ordering::SeqCst) {
                    "timeout (--call-timeout)".to_string()
                } else {
                    outcome["reason"].as_str().unwrap_or("ended").to_string()
                };
                Answer::Failed(error(format!(
                    "the sandbox ended: {reason}; the next call starts a fresh interpreter (state is lost)"
                )))
            }
        }
    }

    fn run(&self, code: &str) -> CallToolResult {
        let v = match self.ask(code) {
            Answer::Ok(v) => v,
            Answer::Failed(r) => return r,
        };
        let mut content = Vec::new();
        let mut text = v["stdout"].as_str().unwrap_or_default().to_string();
        if v["truncated"] == true {
            text.push_str("\n[output truncated]");
        }
        if let Some(e) = v["error"].as_str() {
            text.push_str(e);
        }
        if !text.is_empty() {
            content.push(ContentBlock::text(text));
        }
        for f in v["figures"].as_array().into_iter().flatten() {
            if let Some(png) = f.as_str() {
                content.push(ContentBlock::image(png, "image/png"));
            }
        }
        if v["ok"] == true {
            CallToolResult::success(content)
        } else {
            CallToolResult::error(content)
        }
    }

    /// A helper's printed output (`LIST_FILES`) as the result.
    fn run_quiet(&self, code: &str) -> CallToolResult {
        match self.ask(code) {
            Answer::Ok(v) if v["ok"] == true => {
                let mut out = v["stdout"]
                    .as_str()
                    .unwrap_or_default()
                    .trim_end()
                    .to_string();
                if v["truncated"] == true {
                    out.push_str("\n(cut at the REPL's 64 KiB output capture)");
                }
                CallToolResult::success(vec![ContentBlock::text(out)])
            }
            Answer::Ok(v) => error(v["error"].as_str().unwrap_or("failed").to_string()),
            Answer::Failed(r) => r,
        }
    }

    fn read(&self, path: &str) -> CallToolResult {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let path_literal = serde_json::to_string(path).expect("a string");
        let mut data = Vec::new();
        loop {
            let code = format!(
                "exec({READ_CHUNK:?}, {{'path': {path_literal}, 'offset': {}}})",
                data.len()
            );
            let v = match self.ask(&code) {
                Answer::Ok(v) if v["ok"] == true => v,
                Answer::Ok(v) => {
                    let e = v["error"].as_str().unwrap_or("failed");
                    return error(e.trim_end().lines().last().unwrap_or(e).to_string());
                }
                Answer::Failed(r) => return r,
            };
            let piece: Value =
                serde_json::from_str(v["stdout"].as_str().unwrap_or_default()).unwrap_or_default();
            let (Some(size), Some(chunk)) = (piece["size"].as_u64(), piece["base64"].as_str())
            else {
                return error("read_file: no answer".into());
            };
            if size > MAX_READ {
                return error(format!(
                    "read_file: {path} is {size} bytes, over the {MAX_READ} bytes read_file returns"
                ));
            }
            let Ok(chunk) = b64.decode(chunk) else {
                return error("read_file: no answer".into());
            };
            // A file that grows while it is read stops at the bound.
            if chunk.is_empty() || data.len() + chunk.len() > MAX_READ as usize {
                break;
            }
            data.extend_from_slice(&chunk);
            if data.len() as u64 >= size {
                break;
            }
        }
        let image = if data.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some("image/png")
        } else if data.starts_with(b"\xff\xd8\xff") {
            Some("image/jpeg")
        } else {
            None
        };
        match (image, String::from_utf8(data)) {
            (Some(mime), Err(e)) => {
                CallToolResult::success(vec![ContentBlock::image(b64.encode(e.as_bytes()), mime)])
            }
            (_, Ok(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
            (None, Err(e)) => CallToolResult::success(vec![ContentBlock::text(format!(
                "application/octet-stream, base64:\n{}",
                b64.encode(e.as_bytes())
            ))]),
        }
    }
}

fn error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}
