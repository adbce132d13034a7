//! `runsbx sandbox --allow-net`: the proxy against an "internet" this test
//! makes itself (servers on 127.0.0.1 in the test's own network namespace,
//! reached by names that /etc/hosts maps there: `localhost`, and the
//! machine's other names for the mismatch cases), and every bypass tried.
//! Nothing here connects to any other address.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::thread;

use crate::common::*;
use serde_json::Value;

/// An HTTP/1.0 server on 127.0.0.1 answering every request with
/// `served PATH host=HOST` (or the file under `dir` at PATH, when given).
fn http_server(dir: Option<&Path>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let dir = dir.map(Path::to_path_buf);
    thread::spawn(move || {
        for c in l.incoming().flatten() {
            let dir = dir.clone();
            thread::spawn(move || serve_http(c, dir.as_deref()));
        }
    });
    port
}

fn serve_http(mut c: TcpStream, dir: Option<&Path>) {
    let mut r = BufReader::new(c.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split(' ').nth(1).unwrap_or("").to_string();
    let mut host = String::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some(v) = h.strip_prefix("Host: ") {
            host = v.trim().to_string();
        }
    }
    let (status, body) = match dir {
        Some(d) => {
            let mut p = d.join(path.trim_start_matches('/'));
            if p.is_dir() {
                p = p.join("index.html");
            }
            match fs::read(&p) {
                Ok(b) => ("200 OK", b),
                Err(_) => ("404 Not Found", b"missing".to_vec()),
            }
        }
        None => ("200 OK", format!("served {path} host={host}").into_bytes()),
    };
    let kind = match path.ends_with('/') {
        true => "text/html",
        false => "application/octet-stream",
    };
    let _ = write!(
        c,
        "HTTP/1.0 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let _ = c.write_all(&body);
}

/// A line echo server on 127.0.0.1: what CONNECT tunnels reach.
fn echo_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    thread::spawn(move || {
        for c in l.incoming().flatten() {
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut c = c;
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 || c.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

/// A Python prelude: `ask(raw_request)` sends bytes to the proxy on one
/// connection and returns its status line and body (or the error).
const ASK: &str = r#"
import socket, errno, os, sys, json, urllib.request, http.client
def ask(raw, then=b""):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(raw)
    data = b""
    while b"\r\n\r\n" not in data:
        got = s.recv(4096)
        if not got:
            break
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    status = head.split(b"\r\n")[0].decode()
    if then and " 200 " in status:
        s.sendall(then)
        body = s.recv(4096)
    else:
        while True:
            got = s.recv(4096)
            if not got:
                break
            body += got
    s.close()
    return status + " | " + body.decode(errors="replace").strip()
"#;

/// [`ASK`] and common's `attempt(NAME, FUNC)`, then `code`.
fn py(code: &str) -> String {
    py_attempts(&format!("{ASK}\n{code}"))
}

/// `--allow-net localhost:PORT` for each port, and the loopback range
/// those names resolve into.
fn local(ports: &[u16]) -> Vec<String> {
    let mut flags: Vec<String> = ports
        .iter()
        .flat_map(|p| ["--allow-net".to_string(), format!("localhost:{p}")])
        .collect();
    flags.extend(["--allow-net-range".into(), "127.0.0.0/8".into()]);
    flags
}

/// `runsbx sandbox FLAGS -- python3 -c CODE` with a report file; the
/// output and the report.
fn run<S: AsRef<str>>(env: &Env, flags: &[S], code: &str) -> (Output, Value) {
    let report = env
        .tmp
        .path()
        .join(format!("report-{}.json", unique_id("r")));
    let mut args = vec!["--report", report.to_str().unwrap()];
    args.extend(flags.iter().map(AsRef::as_ref));
    let out = sandbox(env, &args, &["python3", "-c", &py(code)]);
    let text = fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("report {}: {e}\n{}", report.display(), stderr_of(&out)));
    (out, serde_json::from_str(&text).unwrap())
}

fn lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The line of `out` that starts with `name `, without the name.
fn answer(out: &Output, name: &str) -> String {
    lines(out)
        .into_iter()
        .find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_string))
        .unwrap_or_else(|| {
            panic!(
                "no line {name:?} in:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                stderr_of(out)
            )
        })
}

#[test]
fn an_allowed_name_is_reached_by_http_and_a_tunnel_carries_tls_only() {
    let env = Env::new();
    let web = http_server(None);
    let echo = echo_server();
    let code = format!(
        r#"
print("env", os.environ["https_proxy"], repr(os.environ["NO_PROXY"]))
print("urllib", urllib.request.urlopen("http://localhost:{web}/hello").read().decode())
# What urllib does for an https:// URL, but without the TLS: CONNECT, then
# plain HTTP inside the tunnel; and a non-TLS protocol in a tunnel. A
# tunnel carries TLS only: both are cut after the 200.
def cut(f):
    try:
        r = f()
    except OSError:
        return "cut"
    return "cut" if r.rstrip().endswith("|") else r
def tunnelled():
    c = http.client.HTTPConnection("127.0.0.1", 3128)
    c.set_tunnel("localhost", {web})
    c.request("GET", "/tunnelled", headers={{"Host": "other-site.com"}})
    return c.getresponse().read().decode()
print("tunnel", cut(tunnelled))
print("echo", cut(lambda: ask(b"CONNECT localhost:{echo} HTTP/1.1\r\nHost: localhost:{echo}\r\n\r\n", b"ping")))
print("case", ask(b"GET http://LocalHost.:{web}/case HTTP/1.1\r\n\r\n"))
"#
    );
    let (out, report) = run(&env, &local(&[web, echo]), &code);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(answer(&out, "env"), "http://127.0.0.1:3128 ''");
    assert_eq!(
        answer(&out, "urllib"),
        format!("served /hello host=localhost:{web}")
    );
    assert_eq!(answer(&out, "tunnel"), "cut");
    assert_eq!(answer(&out, "echo"), "cut");
    assert_eq!(
        answer(&out, "case"),
        // The client sent no Host header: the proxy names the target as it
        // checked it.
        format!("HTTP/1.0 200 OK | served /case host=localhost:{web}")
    );
    let net = &report["net"];
    assert_eq!(net["allowed"], 2, "{net}");
    assert_eq!(net["refused"], 2, "{net}");
    let first = &net["events"][0];
    assert_eq!(first["host"], "localhost", "{first}");
    assert_eq!(first["addresses"], serde_json::json!(["127.0.0.1"]));
    assert!(first["bytes_in"].as_u64().unwrap() > 0, "{first}");
    assert!(
        stderr_of(&out).contains(&format!("runsbx: net: refused CONNECT localhost:{echo}: the tunnel's first bytes are not a TLS ClientHello")),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn every_bypass_is_refused_and_reported() {
    let env = Env::new();
    let web = http_server(None);
    let echo = echo_server();
    let other = echo_server();
    let code = format!(
        r#"
get = lambda host: ask(("GET http://%s:{web}/x HTTP/1.1\r\n\r\n" % host).encode())
for name, host in [("literal", "127.0.0.1"), ("decimal", "2130706433"), ("octal", "0177.0.0.1"),
                   ("hex", "0x7f.1"), ("short", "127.1"), ("v6", "[::1]"), ("mapped", "[::ffff:127.0.0.1]"),
                   ("numeric-name", "localhost.0x1")]:
    print(name, get(host))
print("port", ask(b"CONNECT localhost:{other} HTTP/1.1\r\n\r\n", b"ping"))
print("connect-host", ask(b"CONNECT localhost:{echo} HTTP/1.1\r\nHost: vm:{echo}\r\n\r\n", b"ping"))
print("get-host", ask(b"GET http://localhost:{web}/x HTTP/1.1\r\nHost: vm\r\n\r\n"))
print("bare-lf", ask(b"GET http://localhost:{web}/x HTTP/1.1\r\nX: a\nHost: vm\r\n\r\n"))
print("smuggle", ask(b"GET http://localhost:{web}/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"))
print("https-get", ask(b"GET https://localhost:{web}/x HTTP/1.1\r\n\r\n"))
print("other-name", ask(b"CONNECT vm:{echo} HTTP/1.1\r\n\r\n", b"ping"))
# Around the proxy: the sandbox's only way out is its port.
def tcp4(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(addr)
attempt("direct-tcp4-loopback", lambda: tcp4(("127.0.0.1", {web})))
attempt("direct-tcp4-out", lambda: tcp4(("10.0.0.1", 80)))
attempt("direct-tcp6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM))
attempt("udp4", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
attempt("udp6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0))
attempt("mptcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262))
def bind():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
attempt("bind", bind)
def listen():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.listen()
attempt("listen", listen)
def fastopen():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.sendto(b"x", 0x20000000, ("127.0.0.1", {web}))
attempt("fastopen", fastopen)
def dns():
    try:
        socket.getaddrinfo("localhost", 80)
        print("dns RESOLVED")
    except socket.gaierror as e:
        print("dns", "gaierror")
dns()
"#
    );
    let (out, report) = run(&env, &local(&[web, echo]), &code);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let refused = |name: &str, why: &str| {
        let a = answer(&out, name);
        assert!(
            a.starts_with("HTTP/1.1 403 ") || a.starts_with("HTTP/1.1 400 "),
            "{name}: {a}"
        );
        assert!(a.contains(why), "{name}: {a}");
    };
    for name in ["literal", "decimal", "octal", "hex", "short"] {
        refused(name, "127.0.0.1 is an IP address not in --allow-net");
    }
    refused("v6", "[::1] is an IP address not in --allow-net");
    refused("mapped", "127.0.0.1 is an IP address not in --allow-net");
    refused("numeric-name", "looks like an IPv4 address but is not one");
    refused(
        "port",
        &format!("port {other} of localhost is not in --allow-net"),
    );
    refused(
        "connect-host",
        &format!("the Host header names vm:{echo}, the request localhost:{echo}"),
    );
    refused(
        "get-host",
        &format!("the Host header names vm:80, the request localhost:{web}"),
    );
    refused("smuggle", "Transfer-Encoding");
    refused("bare-lf", "a control character (0x0a) in the request head");
    refused("https-get", "only http:// URLs are forwarded");
    refused("other-name", "vm is not in --allow-net");
    for (name, want) in [
        // Landlock: connect only to the proxy's port.
        ("direct-tcp4-loopback", "EACCES"),
        ("direct-tcp4-out", "EACCES"),
        // seccomp: no other socket than a TCP/IPv4 one.
        ("direct-tcp6", "EPERM"),
        ("udp4", "EPERM"),
        ("udp6", "EPERM"),
        ("raw", "EPERM"),
        ("packet", "EPERM"),
        ("mptcp", "EPERM"),
        ("bind", "EPERM"),
        ("listen", "EPERM"),
    ] {
        assert_eq!(answer(&out, name), want, "{name}");
    }
    // A connect Landlock does not see (TCP Fast Open's sendto) still finds
    // nothing but the proxy in the sandbox's namespace.
    let tfo = answer(&out, "fastopen");
    assert!(tfo != "ALLOWED", "fastopen: {tfo}");
    assert_eq!(answer(&out, "dns"), "gaierror");

    let net = &report["net"];
    assert_eq!(net["allowed"], 0, "{net}");
    assert_eq!(net["refused"], 15, "{net}");
    let stderr = stderr_of(&out);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("runsbx: net: refused"))
        .collect();
    assert_eq!(lines.len(), 15, "{stderr}");
    assert!(
        lines.contains(&format!(
            "runsbx: net: refused GET 127.0.0.1:{web}: 127.0.0.1 is an IP address not in --allow-net (allow names, or the address itself)"
        ).as_str()),
        "{stderr}"
    );
}

#[test]
fn a_name_resolving_to_loopback_or_private_needs_the_range() {
    let env = Env::new();
    let web = http_server(None);
    let allow = format!("localhost:{web}");
    let code = format!(r#"print("get", ask(b"GET http://localhost:{web}/x HTTP/1.1\r\n\r\n"))"#);
    for extra in [&[][..], &["--allow-net-range", "10.0.0.0/8"]] {
        let mut flags = vec!["--allow-net", &allow];
        flags.extend_from_slice(extra);
        let (out, report) = run(&env, &flags, &code);
        assert!(out.status.success(), "{}", stderr_of(&out));
        let a = answer(&out, "get");
        assert!(
            a.starts_with("HTTP/1.1 403 ")
                && a.contains("localhost resolves to 127.0.0.1 is loopback, not a public address"),
            "{extra:?}: {a}"
        );
        assert_eq!(report["net"]["refused"], 1);
        assert_eq!(
            report["net"]["events"][0]["addresses"],
            serde_json::json!(["127.0.0.1"])
        );
    }
}

#[test]
fn decisions_go_to_the_status_fd_as_they_happen() {
    let env = Env::new();
    let web = http_server(None);
    let status = env.tmp.path().join("status");
    let allow = format!("localhost:{web}");
    let code = format!(
        r#"print(ask(b"GET http://localhost:{web}/a HTTP/1.1\r\n\r\n")); print(ask(b"GET http://127.0.0.1:{web}/a HTTP/1.1\r\n\r\n"))"#
    );
    let script = py(&code);
    let out = env.run_cmd(
        Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$@" 3>"$STATUS""#)
            .arg("sh")
            .arg(runsbx_bin())
            .args(["--root", env.root.to_str().unwrap(), "sandbox"])
            .args(["--status-fd", "3", "--allow-net", &allow])
            .args(["--allow-net-range", "127.0.0.0/8", "--", "python3", "-c"])
            .arg(&script)
            .env("STATUS", &status),
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let events: Vec<Value> = fs::read_to_string(&status)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["start", "net", "net", "exit"], "{events:?}");
    // An allowed connection's event is written when it ends, which may be
    // after the next request's refusal.
    let of = |d: &str| {
        events[1..3]
            .iter()
            .find(|e| e["decision"] == d)
            .unwrap_or_else(|| panic!("no {d} event: {events:?}"))
    };
    assert_eq!(of("allowed")["port"], web);
    assert_eq!(of("refused")["host"], "127.0.0.1");
    assert_eq!(events[3]["net"]["allowed"], 1);
    assert_eq!(events[3]["net"]["refused"], 1);
}

#[test]
fn gen_writes_what_the_proxy_needs_and_nothing_without_the_flag() {
    let env = Env::new();
    let work = env.nobody_workdir();
    let config = |flags: &[&str]| -> (Value, String) {
        let dir = env.tmp.path().join(unique_id("gen"));
        let mut args = vec!["gen", "--workdir", work.to_str().unwrap(), "-o"];
        args.push(dir.to_str().unwrap());
        args.extend_from_slice(flags);
        args.extend(["--", "/bin/true"]);
        env.ok(&args);
        let check = env.ok(&["check", dir.to_str().unwrap()]);
        let config =
            serde_json::from_str(&fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
        (config, check)
    };
    let (with, check) = config(&["--allow-net", "pypi.org"]);
    assert!(
        check.contains("network: HTTP_PROXY is http://127.0.0.1:3128, runsbx's --allow-net proxy"),
        "{check}"
    );
    let env_of = |c: &Value| -> Vec<String> {
        c["process"]["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    for v in [
        "HTTPS_PROXY=http://127.0.0.1:3128",
        "http_proxy=http://127.0.0.1:3128",
        "NO_PROXY=",
    ] {
        assert!(
            env_of(&with).contains(&v.to_string()),
            "{v}: {:?}",
            env_of(&with)
        );
    }
    assert_eq!(
        with["process"]["landlock"]["rules"]["networkPort"],
        serde_json::json!([{"allowedAccess": ["connect_tcp"], "ports": [3128]}])
    );
    let (without, check) = config(&[]);
    assert!(!check.contains("network:"), "{check}");
    assert!(!env_of(&without).iter().any(|e| e.contains("PROXY")));
    assert!(without["process"]["landlock"]["rules"]
        .get("networkPort")
        .is_none());
    assert!(
        without["linux"]["seccomp"].to_string().len() < with["linux"]["seccomp"].to_string().len()
    );
    // A bad entry is refused before anything is written.
    let out = env.run(&[
        "gen",
        "--workdir",
        work.to_str().unwrap(),
        "-o",
        "/nonexistent/x",
        "--allow-net",
        "*.1.2.3.4",
        "--",
        "/bin/true",
    ]);
    assert_one_line_error(
        &out,
        "--allow-net \"*.1.2.3.4\": a wildcard needs a name after *.",
    );
}

#[test]
fn pip_installs_from_a_local_index_through_the_proxy() {
    let env = Env::new();
    let venv = "/opt/runsbx-workloads/venv/bin/python";
    require_file(venv, "the workload venv (hack/setup-workloads)");
    // A one-module wheel, and a PEP 503 index serving it.
    let site = env.tmp.path().join("index");
    let pkgs = site.join("packages");
    fs::create_dir_all(site.join("simple/tinyegress")).unwrap();
    fs::create_dir_all(&pkgs).unwrap();
    let wheel = "tinyegress-0.1-py3-none-any.whl";
    run_ok(
        Command::new("/usr/bin/python3").arg("-c").arg(format!(
            r#"
import zipfile, hashlib, base64
files = {{
 "tinyegress.py": "ANSWER = 42\n",
 "tinyegress-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinyegress\nVersion: 0.1\n",
 "tinyegress-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}}
record = ""
for n, t in files.items():
    d = base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b"=").decode()
    record += "%s,sha256=%s,%d\n" % (n, d, len(t))
record += "tinyegress-0.1.dist-info/RECORD,,\n"
with zipfile.ZipFile("{}", "w") as z:
    for n, t in files.items():
        z.writestr(n, t)
    z.writestr("tinyegress-0.1.dist-info/RECORD", record)
"#,
            pkgs.join(wheel).display()
        )),
        "building the test wheel",
    );
    fs::write(
        site.join("simple/tinyegress/index.html"),
        format!("<html><body><a href=\"../../packages/{wheel}\">{wheel}</a></body></html>"),
    )
    .unwrap();
    let port = http_server(Some(&site));
    let allow = format!("localhost:{port}");
    let index = format!("http://localhost:{port}/simple");
    let work = env.nobody_workdir();
    let report = env.tmp.path().join("pip-report.json");
    let pip = |target: &str| -> Vec<String> {
        [
            venv,
            "-m",
            "pip",
            "install",
            "--no-cache-dir",
            "--disable-pip-version-check",
        ]
        .into_iter()
        .chain(["--retries", "0", "--index-url", &index, "--target", target])
        .chain(["tinyegress"])
        .map(str::to_string)
        .collect()
    };
    let pip_in = |flags: &[&str], target: &str| {
        let argv = pip(target);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let mut all = vec!["--workdir", work.to_str().unwrap()];
        all.extend_from_slice(flags);
        sandbox(&env, &all, &argv)
    };
    let out = pip_in(
        &[
            "--allow-net",
            &allow,
            "--allow-net-range",
            "127.0.0.0/8",
            "--report",
            report.to_str().unwrap(),
        ],
        "lib",
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr_of(&out)
    );
    assert!(work.join("lib/tinyegress.py").is_file());
    let report: Value = serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
    assert!(report["net"]["allowed"].as_u64().unwrap() >= 2, "{report}");
    assert_eq!(report["net"]["refused"], 0, "{report}");
    // The same install without the name allowed is refused, and says so.
    let out = pip_in(&["--allow-net", "pypi.org"], "lib2");
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains(&format!(
            "runsbx: net: refused GET localhost:{port}: localhost is not in --allow-net"
        )),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn the_escapes_stay_refused_with_the_flag_on_and_only_the_proxy_port_answers() {
    let env = Env::new();
    let probe = probe_bin();
    let out = env.run(&[
        "selftest",
        "--allow-net",
        "--probe",
        probe.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", stderr_of(&out));
    for line in [
        "ok    reach the proxy's port: reached",
        "ok    TCP connect to loopback: blocked (EACCES)",
        "ok    TCP connect to another loopback port: blocked (EACCES)",
        "ok    bind a TCP port: blocked (EPERM)",
        "ok    MPTCP connect: blocked (EPERM)",
        "ok    send a DNS query: blocked (EPERM)",
        "selftest passed: every escape was blocked",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
    }
    // A connection that asks nothing is no decision: nothing on stderr.
    assert!(!stderr_of(&out).contains("net:"), "{}", stderr_of(&out));
    // The escapes every interface's session test tries, with the flag on
    // and the self-test first.
    let out = sandbox(
        &env,
        &["--self-test", "--allow-net", "pypi.org"],
        &["python3", "-c", SESSION_ESCAPES],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_session_escapes_refused(&String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_tunnel_whose_tls_server_name_is_another_host_is_cut() {
    let env = Env::new();
    let echo = echo_server();
    let code = format!(
        r#"
import ssl
def hello(name):
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(inc, out, server_hostname=name)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()
for name in ["localhost", "LOCALHOST.", "vm"]:
    h = hello(name)
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT localhost:{echo} HTTP/1.1\r\n\r\n")
    status = s.recv(4096).split(b"\r\n")[0].decode()
    s.sendall(h)
    back = b""
    while len(back) < len(h):
        got = s.recv(65536)
        if not got:
            break
        back += got
    print("sni-" + name, status, "echoed" if back == h else "cut (%d bytes back)" % len(back))
"#
    );
    let (out, report) = run(&env, &local(&[echo]), &code);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let ok = "HTTP/1.1 200 Connection established echoed";
    assert_eq!(answer(&out, "sni-localhost"), ok);
    assert_eq!(answer(&out, "sni-LOCALHOST."), ok);
    assert_eq!(
        answer(&out, "sni-vm"),
        "HTTP/1.1 200 Connection established cut (0 bytes back)"
    );
    let net = &report["net"];
    assert_eq!(
        (net["allowed"].as_u64(), net["refused"].as_u64()),
        (Some(2), Some(1)),
        "{net}"
    );
    assert!(
        stderr_of(&out).contains(&format!(
            "runsbx: net: refused CONNECT localhost:{echo}: the TLS server name (SNI) is vm, the CONNECT target localhost"
        )),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn urllib_fetches_https_through_connect_with_tls_end_to_end() {
    let env = Env::new();
    // A certificate for localhost, made for this test, readable inside.
    let dir = env.traversable_tmpdir();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    run_ok(
        Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            ])
            .args([
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=DNS:localhost",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert),
        "openssl req",
    );
    fs::set_permissions(&cert, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let server = format!(
        r#"
import http.server, ssl
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("tls ok " + self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", {port}), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("{}", "{}")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
"#,
        cert.display(),
        key.display()
    );
    let mut srv = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(server)
        .spawn()
        .unwrap();
    let _kill = KillOnDrop(&mut srv);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        thread::sleep(std::time::Duration::from_millis(20));
    }
    let code = format!(
        r#"
import ssl
ctx = ssl.create_default_context(cafile="{}")
print("https", urllib.request.urlopen("https://localhost:{port}/secure", context=ctx).read().decode())
"#,
        cert.display()
    );
    let mut flags = local(&[port]);
    flags.extend(["--ro".into(), cert.display().to_string()]);
    let (out, report) = run(&env, &flags, &code);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(answer(&out, "https"), "tls ok /secure");
    let e = &report["net"]["events"][0];
    assert_eq!(
        (&e["method"], &e["host"], &e["decision"]),
        (&"CONNECT".into(), &"localhost".into(), &"allowed".into()),
        "{e}"
    );
}

/// Kills and reaps a child when the test ends, passed or not.
struct KillOnDrop<'a>(&'a mut std::process::Child);

impl Drop for KillOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn bad_uses_of_the_flag_are_one_line_errors_before_anything_runs() {
    let env = Env::new();
    for (flags, needle) in [
        (
            &["--allow-net", "pypi.org:99999"][..],
            "--allow-net \"pypi.org:99999\": \"99999\" is not a port (1-65535)",
        ),
        (
            &[
                "--allow-net",
                "pypi.org",
                "--allow-net-range",
                "10.0.0.0/33",
            ],
            "--allow-net-range \"10.0.0.0/33\": prefix length must be 0-32",
        ),
        (
            &["--allow-net", "pypi.org", "--isolation", "landlock"],
            "--allow-net needs the namespaces mode",
        ),
    ] {
        let out = sandbox(&env, flags, &["/bin/true"]);
        assert_one_line_error(&out, needle);
        assert_eq!(
            out.status.code(),
            Some(125),
            "{flags:?}: {}",
            stderr_of(&out)
        );
    }
    let out = sandbox(&env, &["--allow-net-range", "127.0.0.0/8"], &["/bin/true"]);
    assert_one_line_error(&out, "--allow-net-range needs --allow-net");
}

/// Stops: socket options beyond what HTTP clients set reaching the kernel
/// under --allow-net (TCP_ULP, CVE-2023-0461's path; SO_ATTACH_FILTER, a
/// program the kernel runs): EPERM. What Python, urllib3 and curl set works.
#[test]
fn setsockopt_takes_what_http_clients_set_and_nothing_else() {
    let env = Env::new();
    let code = r#"
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
for name, level, opt, val in [
    ("nodelay", socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),
    ("keepalive", socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
    ("keepidle", socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 60),
    ("rcvbuf", socket.SOL_SOCKET, socket.SO_RCVBUF, 65536),
    ("ulp", socket.IPPROTO_TCP, 31, b"tls"),
    ("filter", socket.SOL_SOCKET, 26, b"\0" * 16),
    ("tos", socket.IPPROTO_IP, socket.IP_TOS, 16),
]:
    try:
        s.setsockopt(level, opt, val)
        print(name, "set")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
"#;
    let (out, _) = run(&env, &["--allow-net", "pypi.org"], code);
    assert!(out.status.success(), "{}", stderr_of(&out));
    for (name, want) in [
        ("nodelay", "set"),
        ("keepalive", "set"),
        ("keepidle", "set"),
        ("rcvbuf", "set"),
        ("ulp", "EPERM"),
        ("filter", "EPERM"),
        ("tos", "EPERM"),
    ] {
        assert_eq!(answer(&out, name), want, "{name}");
    }
}
