//! The client's endpoints, served by runsbx and relayed byte for byte to the
//! kernel's unix sockets in the workdir.
//!
//! ZMTP is a stream protocol that does not care which stream carries it, and
//! ZMQ reconnects by itself, so a relay needs no ZMQ: each connection the
//! client opens becomes one connection to the kernel's socket of the same
//! channel. runsbx binds the client's endpoints before the kernel starts (a
//! client connecting early waits in the listen queue) and connects to the
//! kernel's socket once it exists.
use std::fs;
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow};

use super::connection::{kernel_sockets, Connection, Endpoint};
use super::JupyterError;

/// How long a client connection waits for the kernel's socket to appear.
const KERNEL_START: Duration = Duration::from_secs(120);

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    fn shutdown_write(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
            Stream::Unix(s) => s.shutdown(Shutdown::Write),
        };
    }
}

impl io::Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl io::Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The client's endpoints, bound, not yet served.
pub struct Relay {
    channels: Vec<(Listener, PathBuf)>,
    host_sockets: Vec<PathBuf>,
}

impl Relay {
    /// Binds every endpoint of `conn`; the kernel's sockets will be in
    /// `kernel_dir`. A leftover socket file at an ipc endpoint is replaced, as
    /// ZMQ does; any other file there is an error.
    pub fn bind(conn: &Connection, kernel_dir: &Path) -> Result<Relay, JupyterError> {
        let mut relay = Relay {
            channels: Vec::new(),
            host_sockets: Vec::new(),
        };
        for (endpoint, inner) in conn.endpoints.iter().zip(kernel_sockets(kernel_dir)) {
            let listener = match endpoint {
                Endpoint::Tcp(addr) => Listener::Tcp(TcpListener::bind(addr).map_err(|e| {
                    JupyterError::io(format!("listening on {addr} for the kernel"), e)
                })?),
                Endpoint::Unix(path) => {
                    if let Ok(m) = fs::symlink_metadata(path) {
                        if !m.file_type().is_socket() {
                            return Err(JupyterError::io(
                                format!("listening on {} for the kernel", path.display()),
                                io::Error::from(io::ErrorKind::AlreadyExists),
                            ));
                        }
                        let _ = fs::remove_file(path);
                    }
                    let l = UnixListener::bind(path).map_err(|e| {
                        JupyterError::io(
                            format!("listening on {} for the kernel", path.display()),
                            e,
                        )
                    })?;
                    relay.host_sockets.push(path.clone());
                    Listener::Unix(l)
                }
            };
            relay.channels.push((listener, inner));
        }
        Ok(relay)
    }

    /// Serves every channel from threads of their own, until the process
    /// ends. Call it only once the container's init is forked: a fork while
    /// these threads hold a lock (the allocator's) would leave the child
    /// stuck on it. The threads block every signal, so that a signal sent to
    /// runsbx still reaches the thread that forwards it to the kernel.
    pub fn serve(self) -> Serving {
        let all = SigSet::all();
        let mut old = SigSet::empty();
        let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&all), Some(&mut old));
        for (listener, inner) in self.channels {
            thread::spawn(move || accept_loop(listener, inner));
        }
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
        Serving {
            host_sockets: self.host_sockets,
        }
    }
}

/// Removes the ipc endpoints runsbx made when dropped.
pub struct Serving {
    host_sockets: Vec<PathBuf>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        for p in &self.host_sockets {
            let _ = fs::remove_file(p);
        }
    }
}

fn accept_loop(listener: Listener, inner: PathBuf) {
    loop {
        let client = match &listener {
            Listener::Tcp(l) => l.accept().map(|(s, _)| Stream::Tcp(s)),
            Listener::Unix(l) => l.accept().map(|(s, _)| Stream::Unix(s)),
        };
        let Ok(client) = client else {
            continue;
        };
        let inner = inner.clone();
        thread::spawn(move || relay_one(client, &inner));
    }
}

fn relay_one(client: Stream, inner: &Path) {
    let deadline = Instant::now() + KERNEL_START;
    let kernel = loop {
        match UnixStream::connect(inner) {
            Ok(s) => break Stream::Unix(s),
            // Not there yet (ENOENT) or not listening yet (ECONNREFUSED).
            Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
            // The client's ZMQ reconnects if it still wants to.
            Err(_) => return,
        }
    };
    let (Ok(mut client_r), Ok(mut kernel_r)) = (client.try_clone(), kernel.try_clone()) else {
        return;
    };
    let (mut client_w, mut kernel_w) = (client, kernel);
    let up = thread::spawn(move || {
        let _ = io::copy(&mut client_r, &mut kernel_w);
        kernel_w.shutdown_write();
    });
    let _ = io::copy(&mut kernel_r, &mut client_w);
    client_w.shutdown_write();
    let _ = up.join();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn relays_both_ways_and_waits_for_the_kernel() {
        let t = tempfile::tempdir().unwrap();
        let text = format!(
            r#"{{"transport": "ipc", "ip": "{}/client", "key": "k", "shell_port": 1,
               "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5}}"#,
            t.path().display()
        );
        let conn = Connection::parse(Path::new("c.json"), &text).unwrap();
        let kdir = t.path().join("w");
        fs::create_dir(&kdir).unwrap();
        let relay = Relay::bind(&conn, &kdir).unwrap();
        let serving = relay.serve();
        // The client connects before the kernel listens.
        let mut c = UnixStream::connect(t.path().join("client-4")).unwrap();
        c.write_all(b"ping").unwrap();
        thread::sleep(Duration::from_millis(50));
        let k = UnixListener::bind(kdir.join("kernel-4")).unwrap();
        let (mut ks, _) = k.accept().unwrap();
        let mut buf = [0u8; 4];
        ks.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ping");
        ks.write_all(b"pong").unwrap();
        c.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"pong");
        // EOF passes through.
        c.shutdown(Shutdown::Write).unwrap();
        assert_eq!(ks.read(&mut buf).unwrap(), 0);
        drop(serving);
        assert!(!t.path().join("client-4").exists());
    }
}
