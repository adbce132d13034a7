//! `runsbx mcp`: an MCP client written here, speaking JSON-RPC over the
//! server's stdio as Claude Code, Cursor or any MCP client does.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use crate::common::*;
use serde_json::{json, Value};

struct Client {
    env: Env,
    tmpdir: PathBuf,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Client {
    fn start(flags: &[&str]) -> Self {
        let env = Env::new();
        let tmpdir = env.traversable_tmpdir();
        let mut child = env
            .cmd()
            .env("TMPDIR", &tmpdir)
            .arg("mcp")
            .args(flags)
            .args(["--", "/usr/bin/python3"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut c = Self {
            env,
            tmpdir,
            child,
            stdin,
            stdout,
            next: 1,
        };
        let init = c.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "runsbx-tests", "version": "1"}
            }),
        );
        assert_eq!(init["serverInfo"]["name"], "runsbx", "{init}");
        assert!(init["capabilities"]["tools"].is_object(), "{init}");
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        c
    }

    fn send(&mut self, msg: Value) {
        let w = self.stdin.as_mut().unwrap();
        writeln!(w, "{msg}").unwrap();
        w.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                assert!(v["error"].is_null(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    /// tools/call; returns (isError, the text of its text blocks, its images' MIME types).
    fn call(&mut self, tool: &str, args: Value) -> (bool, String, Vec<String>) {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let mut text = String::new();
        let mut images = Vec::new();
        for c in r["content"].as_array().unwrap() {
            match c["type"].as_str() {
                Some("text") => text.push_str(c["text"].as_str().unwrap()),
                Some("image") => images.push(c["mimeType"].as_str().unwrap().to_string()),
                other => panic!("content {other:?}: {r}"),
            }
        }
        (r["isError"] == true, text, images)
    }

    fn python(&mut self, code: &str) -> (bool, String, Vec<String>) {
        self.call("run_python", json!({ "code": code }))
    }

    /// Closes stdin: the server must exit 0 with its session gone and
    /// nothing left.
    fn close(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status:?}");
        assert_no_leftovers(&self.env, &self.tmpdir);
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn run_python_keeps_state_returns_figures_and_reads_the_workdir() {
    let mut c = Client::start(&[]);
    let tools = c.request("tools/list", json!({}));
    let mut names: Vec<_> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["list_files", "read_file", "restart_python", "run_python"]
    );

    assert_eq!(
        c.python("x = 6 * 7\nprint(x)"),
        (false, "42\n".into(), vec![])
    );
    let (err, text, images) = c.python(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.figure()\nplt.bar([1], [x])\nprint(x + 1)",
    );
    assert!(!err, "{text}");
    assert_eq!(text, "43\n");
    assert_eq!(images, ["image/png", "image/png"]);
    // Closed after they were returned.
    assert_eq!(c.python("print(plt.get_fignums())").1, "[]\n");

    c.python("open('notes.txt', 'w').write('sandboxed notes')\nplt.plot([0]); plt.savefig('plot.png'); plt.close('all')");
    let (_, listing, _) = c.call("list_files", json!({}));
    assert!(listing.contains("[\"notes.txt\", 15]"), "{listing}");
    assert!(listing.contains("\"plot.png\""), "{listing}");
    assert_eq!(
        c.call("read_file", json!({"path": "notes.txt"})),
        (false, "sandboxed notes".into(), vec![])
    );
    assert_eq!(
        c.call("read_file", json!({"path": "plot.png"})).2,
        ["image/png"]
    );
    // The helpers left the user's variables alone.
    assert_eq!(
        c.python("print(sorted(k for k in globals() if not k.startswith('__')))")
            .1,
        "['plt', 'x']\n"
    );

    // Outside the workdir: refused, from inside the sandbox.
    let (err, text, _) = c.call("read_file", json!({"path": "/etc/shadow"}));
    assert!(err && text.contains("Error"), "{text}");
    let (err, text, _) = c.python("1/0");
    assert!(err && text.contains("ZeroDivisionError"), "{text}");

    let (err, _, _) = c.call("restart_python", json!({}));
    assert!(!err);
    let (err, text, _) = c.python("print(x)");
    assert!(
        err && text.contains("NameError"),
        "state survived a restart: {text}"
    );
    assert_eq!(c.call("list_files", json!({})).1, "[]");
    c.close();
}

#[test]
fn a_call_past_a_limit_says_so_and_the_next_starts_fresh() {
    past_a_limit(&[]);
}

/// The same with the session forked from a fork server (`--fork-server`).
#[test]
fn a_call_past_a_limit_says_so_and_the_next_starts_fresh_forked() {
    past_a_limit(&["--fork-server", "--preload", "import json"]);
}

fn past_a_limit(mode: &[&str]) {
    let mut c = Client::start(&[&["--call-timeout", "3s", "--rss-limit", "200M"], mode].concat());
    c.python("x = 1");
    let (err, text, _) = c.python("while True: pass");
    assert!(err && text.contains("timeout"), "{text}");
    let (err, text, _) = c.python("print(x)");
    assert!(
        err && text.contains("NameError"),
        "a fresh interpreter after the limit: {text}"
    );
    let (err, text, _) = c.python("b = b'x' * (400 << 20)");
    assert!(err && text.contains("rss-limit"), "{text}");
    assert_eq!(c.python("print(1)"), (false, "1\n".into(), vec![]));
    c.close();
}

/// The official MCP Python SDK (PyPI's `mcp`, in hack/setup-ci's venv) as
/// the client: tests/mcp/client.py lists the tools, keeps state across
/// calls, gets a figure as an image, sees a denied read, the escapes and a
/// timeout as results; nothing is left after.
#[test]
fn the_official_python_sdk_drives_it() {
    let venv = std::env::var_os("RUNSBX_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/runsbx-mcp/venv"));
    let python = venv.join("bin/python");
    require_file(
        python.to_str().unwrap(),
        "mcp from PyPI (hack/setup-ci's venv)",
    );
    let env = Env::new();
    let tmpdir = env.traversable_tmpdir();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/client.py");
    let out = std::process::Command::new(python)
        .arg(client)
        .arg(runsbx_bin())
        .arg("--root")
        .arg(&env.root)
        .env("TMPDIR", &tmpdir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("client done"),
        "{stdout}\n{}",
        stderr_of(&out)
    );
    assert_no_leftovers(&env, &tmpdir);
}
