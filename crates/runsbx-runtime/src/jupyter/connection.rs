//! Jupyter connection files: the client's, and the one runsbx writes for the
//! kernel inside the workdir.
use std::fs;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::JupyterError;

/// The five channels, in the order runsbx numbers the kernel's sockets.
pub const CHANNELS: [&str; 5] = [
    "shell_port",
    "iopub_port",
    "stdin_port",
    "control_port",
    "hb_port",
];

/// Where a channel listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// A parsed connection file; fields runsbx does not use are kept as they are.
#[derive(Debug, Clone)]
pub struct Connection {
    pub path: PathBuf,
    fields: Map<String, Value>,
    /// The client's endpoint of each channel, in [`CHANNELS`] order.
    pub endpoints: Vec<Endpoint>,
}

impl Connection {
    pub fn read(path: &Path) -> Result<Self, JupyterError> {
        let text = fs::read_to_string(path)
            .map_err(|e| JupyterError::io(format!("connection file {}", path.display()), e))?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Self, JupyterError> {
        let bad = |reason: String| JupyterError::Connection {
            path: path.to_path_buf(),
            reason,
        };
        let fields = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(bad("not a JSON object".into())),
            Err(e) => return Err(bad(format!("not JSON: {e}"))),
        };
        let text_of = |name: &str| fields.get(name).and_then(Value::as_str);
        let transport = text_of("transport").unwrap_or("tcp");
        let ip = text_of("ip").unwrap_or("127.0.0.1");
        if text_of("key").is_none() {
            return Err(bad("no \"key\"".into()));
        }
        let mut endpoints = Vec::new();
        for name in CHANNELS {
            let port = fields
                .get(name)
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .filter(|p| *p != 0)
                .ok_or_else(|| {
                    bad(format!(
                        "\"{name}\" is not a port number (the client picks the ports)"
                    ))
                })?;
            endpoints.push(match transport {
                "tcp" => {
                    let addr: IpAddr = ip
                        .parse()
                        .map_err(|_| bad(format!("\"ip\" {ip:?} is not an IP address")))?;
                    Endpoint::Tcp(SocketAddr::new(addr, port))
                }
                // ZMQ's ipc endpoint of a Jupyter channel is "<ip>-<port>".
                "ipc" => Endpoint::Unix(PathBuf::from(format!("{ip}-{port}"))),
                other => return Err(bad(format!("transport {other:?}: only tcp and ipc exist"))),
            });
        }
        Ok(Connection {
            path: path.to_path_buf(),
            fields,
            endpoints,
        })
    }

    /// The kernel's connection file: the client's, with the ipc transport on
    /// sockets `<dir>/kernel-1` to `<dir>/kernel-5`.
    pub fn for_kernel(&self, dir: &Path) -> Value {
        let mut fields = self.fields.clone();
        fields.insert("transport".into(), "ipc".into());
        fields.insert("ip".into(), kernel_base(dir).display().to_string().into());
        for (i, name) in CHANNELS.iter().enumerate() {
            fields.insert((*name).into(), (i as u64 + 1).into());
        }
        Value::Object(fields)
    }
}

fn kernel_base(dir: &Path) -> PathBuf {
    dir.join("kernel")
}

/// The kernel's socket of each channel, in [`CHANNELS`] order.
pub fn kernel_sockets(dir: &Path) -> Vec<PathBuf> {
    let base = kernel_base(dir).display().to_string();
    (1..=CHANNELS.len())
        .map(|i| PathBuf::from(format!("{base}-{i}")))
        .collect()
}

/// The longest socket path the kernel can bind (`sun_path` holds 108 bytes,
/// one for the terminating NUL).
pub const MAX_SOCKET_PATH: usize = 107;

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = r#"{"shell_port": 5001, "iopub_port": 5002, "stdin_port": 5003,
        "control_port": 5004, "hb_port": 5005, "ip": "127.0.0.1", "key": "k3y",
        "transport": "tcp", "signature_scheme": "hmac-sha256", "kernel_name": "py"}"#;

    #[test]
    fn tcp_file_gives_tcp_endpoints_and_an_ipc_kernel_file() {
        let c = Connection::parse(Path::new("c.json"), TCP).unwrap();
        assert_eq!(
            c.endpoints[0],
            Endpoint::Tcp("127.0.0.1:5001".parse().unwrap())
        );
        assert_eq!(
            c.endpoints[4],
            Endpoint::Tcp("127.0.0.1:5005".parse().unwrap())
        );
        let k = c.for_kernel(Path::new("/w"));
        assert_eq!(k["transport"], "ipc");
        assert_eq!(k["ip"], "/w/kernel");
        assert_eq!(k["shell_port"], 1);
        assert_eq!(k["hb_port"], 5);
        assert_eq!(k["key"], "k3y");
        assert_eq!(k["signature_scheme"], "hmac-sha256");
        assert_eq!(k["kernel_name"], "py");
        assert_eq!(
            kernel_sockets(Path::new("/w"))[2],
            PathBuf::from("/w/kernel-3")
        );
    }

    #[test]
    fn ipc_file_gives_unix_endpoints() {
        let text = TCP
            .replace("\"tcp\"", "\"ipc\"")
            .replace("127.0.0.1", "/run/user/1/k");
        let c = Connection::parse(Path::new("c.json"), &text).unwrap();
        assert_eq!(c.endpoints[1], Endpoint::Unix("/run/user/1/k-5002".into()));
    }

    #[test]
    fn bad_files_name_the_problem() {
        for (text, want) in [
            ("[]", "not a JSON object"),
            ("{", "not JSON"),
            (r#"{"key": "k"}"#, "\"shell_port\" is not a port number"),
            (&TCP.replace("\"key\": \"k3y\",", ""), "no \"key\""),
            (&TCP.replace("\"tcp\"", "\"udp\""), "transport \"udp\""),
            (
                &TCP.replace("127.0.0.1", "localhost"),
                "is not an IP address",
            ),
            (&TCP.replace("5003", "0"), "\"stdin_port\""),
        ] {
            let e = Connection::parse(Path::new("c.json"), text)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("connection file c.json: "), "{e}");
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
