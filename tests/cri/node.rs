//! The CRI test's node and client: a private containerd with its CRI plugin
//! (hack/engines/setup-cri) and a CRI client on its socket, with the pod and
//! container configs a kubelet sends and the counts of what pods leave.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hyper_util::rt::TokioIo;
use k8s_cri::v1 as cri;
use k8s_cri::v1::image_service_client::ImageServiceClient;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::security_profile::ProfileType;
use k8s_cri::v1::{ContainerState, NamespaceMode};
use tonic::transport::{Channel, Endpoint, Uri};

use crate::common::*;

pub const PAUSE: &str = "localhost/pause:latest";
pub const BUSYBOX: &str = "localhost/busybox:latest";
/// hack/engines/setup-cri's CNI network: bridge and host-local range.
pub const POD_SUBNET: &str = "10.209.0.";
pub const BRIDGE: &str = "runsbx-cri0";

pub fn eventually<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The images, built once per test process where every run finds them
/// (the scripts keep a build that is still current).
pub fn images_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cri-images");
        for script in ["build-pause-image", "build-busybox-image"] {
            let out = Command::new(repo().join("hack/engines").join(script))
                .arg(&dir)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "hack/engines/{script} failed: {}",
                stderr_of(&out)
            );
        }
        dir
    })
    .clone()
}

// ------------------------------------------------------------ the client ---

/// A CRI client on containerd's socket, as a kubelet holds one: tonic over
/// a unix socket. Calls block; the runtime's one worker drives the
/// connection, so threads can call at once.
pub struct Cri {
    pub rt: tokio::runtime::Runtime,
    pub runtime: RuntimeServiceClient<Channel>,
    pub images: ImageServiceClient<Channel>,
}

/// One unary call: the request in, the response message or the gRPC status out.
macro_rules! call {
    ($cri:expr, $svc:ident . $method:ident ($req:expr)) => {
        $cri.rt
            .block_on($cri.$svc.clone().$method($req))
            .map(tonic::Response::into_inner)
    };
}

impl Cri {
    pub fn connect(sock: &Path) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let sock = sock.to_path_buf();
        // The URI is a placeholder: the connector below dials the socket.
        let channel = rt
            .block_on(
                Endpoint::from_static("http://localhost").connect_with_connector(
                    tower::service_fn(move |_: Uri| {
                        let sock = sock.clone();
                        async move {
                            let s = tokio::net::UnixStream::connect(sock).await?;
                            Ok::<_, std::io::Error>(TokioIo::new(s))
                        }
                    }),
                ),
            )
            .expect("connect to containerd's CRI socket");
        Self {
            rt,
            runtime: RuntimeServiceClient::new(channel.clone()),
            images: ImageServiceClient::new(channel),
        }
    }
}

// ------------------------------------------------------------- the node ---

/// A containerd with its CRI plugin, set up by hack/engines/setup-cri under
/// a temp dir, and the pods this test runs on it. Pod cgroups go under
/// `/<prefix>/pod<uid>` in every hierarchy, as a kubelet's go under
/// `/kubepods/...`.
pub struct Node {
    pub tmp: tempfile::TempDir,
    pub pid: i32,
    pub prefix: String,
    pub cri: Cri,
    /// Every sandbox id run here, for the leftover counts.
    pub sandboxes: std::sync::Mutex<Vec<String>>,
}

pub struct Pod {
    pub id: String,
    pub name: String,
    pub uid: String,
    pub config: cri::PodSandboxConfig,
}

/// What a test's pods could leave behind on the node, counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Entries in runsbx's state root (the handler's Root/k8s.io): container
    /// dirs, and `.ID.create` locks while a create runs.
    pub state_dirs: usize,
    /// cgroup dirs under the node's prefix, in every hierarchy.
    pub cgroups: usize,
    /// Mounts under the node's dir: rootfs overlays, /dev/shm, netns files.
    pub mounts: usize,
    /// Pod network namespaces (files in the CRI plugin's netns dir) and
    /// libcni's cached results for the node's network.
    pub netns: usize,
    /// Processes in the node's cgroups, and shims of the node.
    pub processes: usize,
}

impl Node {
    pub fn start() -> Self {
        require_root();
        require_file("/usr/bin/containerd", "containerd");
        require_file("/usr/bin/containerd-shim-runc-v2", "containerd");
        require_file("/usr/bin/umoci", "umoci");
        require_file("/usr/bin/gcc", "gcc");
        require_file(RUNC, "runc");
        let images = images_dir();
        let tmp = tempfile::Builder::new()
            .prefix("runsbx-cri-")
            .tempdir()
            .unwrap();
        let out = Command::new(repo().join("hack/engines/setup-cri"))
            .arg(tmp.path())
            .arg(runsbx_bin())
            .arg(&images)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let pid: i32 = fs::read_to_string(tmp.path().join("containerd.pid"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        if !out.status.success() {
            stop_containerd(tmp.path());
            panic!("hack/engines/setup-cri failed: {}", stderr_of(&out));
        }
        let sock = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let name = tmp
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let node = Self {
            pid,
            prefix: name,
            cri: Cri::connect(&sock),
            sandboxes: Default::default(),
            tmp,
        };
        node.require_ready();
        node
    }

    pub fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// The CRI's Status: both conditions a kubelet waits for. NetworkReady
    /// is false when the CNI config or plugins cannot be loaded.
    pub fn require_ready(&self) {
        let v =
            call!(self.cri, runtime.version(cri::VersionRequest::default())).expect("CRI Version");
        assert_eq!(v.runtime_name, "containerd", "{v:?}");
        let mut last = None;
        let ready = (0..100).any(|_| {
            let s =
                call!(self.cri, runtime.status(cri::StatusRequest::default())).expect("CRI Status");
            let conds = s.status.map(|s| s.conditions).unwrap_or_default();
            let ok = ["RuntimeReady", "NetworkReady"]
                .iter()
                .all(|t| conds.iter().any(|c| c.r#type == *t && c.status));
            last = Some(conds);
            if !ok {
                std::thread::sleep(Duration::from_millis(100));
            }
            ok
        });
        assert!(
            ready,
            "the CRI plugin is not ready (runtime or network; is containernetworking-plugins installed?): {last:?}"
        );
    }

    /// As a kubelet with `imagePullPolicy: IfNotPresent` or `Never`: the image
    /// is there, so there is nothing to pull (no registry here).
    pub fn require_image(&self, image: &str) {
        let r = call!(
            self.cri,
            images.image_status(cri::ImageStatusRequest {
                image: Some(image_spec(image)),
                verbose: false,
            })
        )
        .expect("ImageStatus");
        assert!(
            r.image.is_some(),
            "{image} is not in containerd's k8s.io namespace"
        );
    }

    pub fn pod_config(&self, name: &str, host_network: bool) -> cri::PodSandboxConfig {
        let uid = unique_id("uid");
        let log_dir = self
            .dir()
            .join("pods")
            .join(format!("default_{name}_{uid}"));
        fs::create_dir_all(&log_dir).unwrap();
        let mut labels = HashMap::new();
        labels.insert("io.kubernetes.pod.name".to_string(), name.to_string());
        cri::PodSandboxConfig {
            metadata: Some(cri::PodSandboxMetadata {
                name: name.into(),
                uid: uid.clone(),
                namespace: "default".into(),
                attempt: 0,
            }),
            hostname: if host_network { "" } else { name }.into(),
            log_directory: log_dir.to_str().unwrap().into(),
            labels,
            linux: Some(cri::LinuxPodSandboxConfig {
                cgroup_parent: format!("/{}/pod{uid}", self.prefix),
                security_context: Some(cri::LinuxSandboxSecurityContext {
                    namespace_options: Some(namespaces(host_network)),
                    seccomp: Some(seccomp(ProfileType::RuntimeDefault)),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    pub fn run_pod(&self, name: &str, handler: &str, host_network: bool) -> Pod {
        self.run_pod_with(self.pod_config(name, host_network), handler)
    }

    /// RunPodSandbox of `config` (from [`Node::pod_config`], changed).
    pub fn run_pod_with(&self, config: cri::PodSandboxConfig, handler: &str) -> Pod {
        let name = config.metadata.as_ref().unwrap().name.clone();
        let r = call!(
            self.cri,
            runtime.run_pod_sandbox(cri::RunPodSandboxRequest {
                config: Some(config.clone()),
                runtime_handler: handler.into(),
            })
        )
        .unwrap_or_else(|e| panic!("RunPodSandbox {name} under {handler}: {e}"));
        let uid = config.metadata.as_ref().unwrap().uid.clone();
        self.sandboxes
            .lock()
            .unwrap()
            .push(r.pod_sandbox_id.clone());
        Pod {
            id: r.pod_sandbox_id,
            name,
            uid,
            config,
        }
    }

    /// PodSandboxStatus, verbose: the status and containerd's `info` JSON
    /// (the sandbox's pid, runtime options, netns path).
    pub fn pod_status(&self, pod: &Pod) -> (cri::PodSandboxStatus, serde_json::Value) {
        let r = call!(
            self.cri,
            runtime.pod_sandbox_status(cri::PodSandboxStatusRequest {
                pod_sandbox_id: pod.id.clone(),
                verbose: true,
            })
        )
        .expect("PodSandboxStatus");
        (r.status.unwrap(), info_json(&r.info))
    }

    pub fn pod_ip(&self, pod: &Pod) -> String {
        let (s, _) = self.pod_status(pod);
        s.network.map(|n| n.ip).unwrap_or_default()
    }

    pub fn create_start(&self, pod: &Pod, config: cri::ContainerConfig) -> String {
        let name = config.metadata.as_ref().unwrap().name.clone();
        let r = call!(
            self.cri,
            runtime.create_container(cri::CreateContainerRequest {
                pod_sandbox_id: pod.id.clone(),
                config: Some(config),
                sandbox_config: Some(pod.config.clone()),
            })
        )
        .unwrap_or_else(|e| panic!("CreateContainer {name} in {}: {e}", pod.name));
        let id = r.container_id;
        call!(
            self.cri,
            runtime.start_container(cri::StartContainerRequest {
                container_id: id.clone(),
            })
        )
        .unwrap_or_else(|e| panic!("StartContainer {name} in {}: {e}", pod.name));
        id
    }

    /// ContainerStatus, verbose: the status and containerd's `info` JSON.
    pub fn status(&self, id: &str) -> (cri::ContainerStatus, serde_json::Value) {
        let r = call!(
            self.cri,
            runtime.container_status(cri::ContainerStatusRequest {
                container_id: id.into(),
                verbose: true,
            })
        )
        .expect("ContainerStatus");
        (r.status.unwrap(), info_json(&r.info))
    }

    pub fn wait_exited(&self, id: &str) -> cri::ContainerStatus {
        eventually("the container to exit", Duration::from_secs(60), || {
            let (s, _) = self.status(id);
            (s.state == ContainerState::ContainerExited as i32).then_some(s)
        })
    }

    pub fn exec(&self, id: &str, cmd: &[&str]) -> cri::ExecSyncResponse {
        call!(
            self.cri,
            runtime.exec_sync(cri::ExecSyncRequest {
                container_id: id.into(),
                cmd: cmd.iter().map(|s| s.to_string()).collect(),
                timeout: 30,
            })
        )
        .unwrap_or_else(|e| panic!("ExecSync {cmd:?}: {e}"))
    }

    /// What the container wrote to stdout, from the CRI log file
    /// (`TIMESTAMP stdout F line`).
    pub fn log(&self, pod: &Pod, id: &str) -> String {
        let (s, _) = self.status(id);
        assert!(
            s.log_path.starts_with(&pod.config.log_directory),
            "{} not in {}",
            s.log_path,
            pod.config.log_directory
        );
        fs::read_to_string(&s.log_path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once(" stdout F ").map(|(_, t)| format!("{t}\n")))
            .collect()
    }

    /// `log` of an exited container, once containerd has written it:
    /// its CRI plugin copies the container's output to the file on its own
    /// schedule, and under load can report the exit before the last lines
    /// land. Waits (up to 5 s) for the file to hold something and stay the
    /// same for 100 ms.
    pub fn log_after_exit(&self, pod: &Pod, id: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut last = self.log(pod, id);
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let now = self.log(pod, id);
            if (!now.is_empty() && now == last) || Instant::now() > deadline {
                return now;
            }
            last = now;
        }
    }

    pub fn stop(&self, id: &str, timeout: i64) {
        call!(
            self.cri,
            runtime.stop_container(cri::StopContainerRequest {
                container_id: id.into(),
                timeout,
            })
        )
        .expect("StopContainer");
    }

    pub fn remove(&self, id: &str) {
        call!(
            self.cri,
            runtime.remove_container(cri::RemoveContainerRequest {
                container_id: id.into(),
            })
        )
        .expect("RemoveContainer");
    }

    /// StopPodSandbox, RemovePodSandbox, then the pod's cgroup, as a kubelet
    /// removes it; `rmdir` fails on a cgroup a container left behind.
    pub fn remove_pod(&self, pod: &Pod) {
        call!(
            self.cri,
            runtime.stop_pod_sandbox(cri::StopPodSandboxRequest {
                pod_sandbox_id: pod.id.clone(),
            })
        )
        .unwrap_or_else(|e| panic!("StopPodSandbox {}: {e}", pod.name));
        call!(
            self.cri,
            runtime.remove_pod_sandbox(cri::RemovePodSandboxRequest {
                pod_sandbox_id: pod.id.clone(),
            })
        )
        .unwrap_or_else(|e| panic!("RemovePodSandbox {}: {e}", pod.name));
        for h in hierarchies() {
            let _ = fs::remove_dir(h.join(&self.prefix).join(format!("pod{}", pod.uid)));
        }
    }

    /// A pod of one container gone, as a kubelet deletes it: SIGKILL at
    /// once (no grace period) if it still runs.
    pub fn end(&self, pod: &Pod, id: &str) {
        self.stop(id, 0);
        self.remove(id);
        self.remove_pod(pod);
    }

    /// Nothing of the pods left (within 20 s: shims exit after the calls
    /// return).
    pub fn assert_clean(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let c = self.counts();
            if c == Counts::ZERO {
                return;
            }
            assert!(Instant::now() < deadline, "left behind: {c:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn runsbx_state(&self) -> PathBuf {
        self.dir().join("runsbx-root/k8s.io")
    }

    pub fn counts(&self) -> Counts {
        let state_dirs = fs::read_dir(self.runsbx_state())
            .map(|rd| rd.count())
            .unwrap_or(0);
        let mut cgroups = 0;
        let mut pids = BTreeSet::new();
        for h in hierarchies() {
            let mut stack = vec![h.join(&self.prefix)];
            while let Some(dir) = stack.pop() {
                if let Ok(procs) = fs::read_to_string(dir.join("cgroup.procs")) {
                    pids.extend(procs.lines().filter_map(|l| l.parse::<i32>().ok()));
                }
                for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
                    if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                        cgroups += 1;
                        stack.push(e.path());
                    }
                }
            }
        }
        let needle = self.dir().to_str().unwrap().to_string();
        for e in fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            if pid == self.pid || !pid_alive(pid) {
                continue;
            }
            let cmd = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmd).contains(&needle) {
                pids.insert(pid);
            }
        }
        let prefix = format!("{needle}/");
        let mounts = fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|m| m.starts_with(&prefix))
            .count();
        let netns_dir = self.dir().join("state/io.containerd.grpc.v1.cri/netns");
        let netns = fs::read_dir(netns_dir).map(|rd| rd.count()).unwrap_or(0)
            + fs::read_dir("/var/lib/cni/results")
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    // <network>-<container id>-<ifname>; this node's sandboxes only.
                    n.starts_with("runsbx-cri-") && self.knows_sandbox(&n)
                })
                .count();
        Counts {
            state_dirs,
            cgroups,
            mounts,
            netns,
            processes: pids.len(),
        }
    }

    /// Whether a libcni cache file (`<network>-<sandbox id>-<ifname>`)
    /// belongs to a sandbox of this node.
    pub fn knows_sandbox(&self, cache_name: &str) -> bool {
        let seen = self.sandboxes.lock().unwrap();
        seen.iter().any(|id| cache_name.contains(id.as_str()))
    }
}

pub fn stop_containerd(dir: &Path) {
    let _ = Command::new(repo().join("hack/engines/stop-containerd"))
        .arg(dir)
        .stdin(Stdio::null())
        .status();
}

impl Drop for Node {
    fn drop(&mut self) {
        // What a failed test left: its pods, then the daemon, then the
        // cgroups the pods' parents were.
        if let Ok(r) = call!(
            self.cri,
            runtime.list_pod_sandbox(cri::ListPodSandboxRequest::default())
        ) {
            for p in r.items {
                let id = p.id;
                let _ = call!(
                    self.cri,
                    runtime.stop_pod_sandbox(cri::StopPodSandboxRequest {
                        pod_sandbox_id: id.clone(),
                    })
                );
                let _ = call!(
                    self.cri,
                    runtime.remove_pod_sandbox(cri::RemovePodSandboxRequest { pod_sandbox_id: id })
                );
            }
        }
        stop_containerd(self.dir());
        for h in hierarchies() {
            let top = h.join(&self.prefix);
            if let Ok(rd) = fs::read_dir(&top) {
                for e in rd.flatten().filter(|e| e.path().is_dir()) {
                    let _ = fs::remove_dir(e.path());
                }
            }
            let _ = fs::remove_dir(top);
        }
    }
}

/// Every cgroup hierarchy: the v1 controllers and cgroup2 (hybrid hosts).
pub fn hierarchies() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(" - cgroup ") || l.contains(" - cgroup2 "))
        .filter_map(|l| l.split(' ').nth(4).map(PathBuf::from))
        .collect();
    v.sort();
    v.dedup();
    v
}

pub fn info_json(info: &HashMap<String, String>) -> serde_json::Value {
    info.get("info")
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or(serde_json::Value::Null)
}

pub fn image_spec(image: &str) -> cri::ImageSpec {
    cri::ImageSpec {
        image: image.into(),
        ..Default::default()
    }
}

pub fn seccomp(t: ProfileType) -> cri::SecurityProfile {
    cri::SecurityProfile {
        profile_type: t as i32,
        localhost_ref: String::new(),
    }
}

/// A kubelet's namespaces: the pod's network (or the node's with
/// hostNetwork), a pid namespace per container, the pod's IPC.
pub fn namespaces(host_network: bool) -> cri::NamespaceOption {
    cri::NamespaceOption {
        network: if host_network {
            NamespaceMode::Node
        } else {
            NamespaceMode::Pod
        } as i32,
        pid: NamespaceMode::Container as i32,
        ipc: NamespaceMode::Pod as i32,
        ..Default::default()
    }
}

/// A busybox container as a kubelet asks for it: log path
/// `<name>/0.log`, the pod's namespaces, seccomp `RuntimeDefault`.
pub fn container(pod: &Pod, name: &str, args: &[&str]) -> cri::ContainerConfig {
    let host_network = pod
        .config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref())
        .and_then(|s| s.namespace_options.as_ref())
        .is_some_and(|n| n.network == NamespaceMode::Node as i32);
    cri::ContainerConfig {
        metadata: Some(cri::ContainerMetadata {
            name: name.into(),
            attempt: 0,
        }),
        image: Some(image_spec(BUSYBOX)),
        command: args.iter().map(|s| s.to_string()).collect(),
        log_path: format!("{name}/0.log"),
        linux: Some(cri::LinuxContainerConfig {
            resources: Some(cri::LinuxContainerResources {
                cpu_shares: 2,
                oom_score_adj: 1000,
                ..Default::default()
            }),
            security_context: Some(cri::LinuxContainerSecurityContext {
                namespace_options: Some(namespaces(host_network)),
                seccomp: Some(seccomp(ProfileType::RuntimeDefault)),
                masked_paths: MASKED.iter().map(|s| s.to_string()).collect(),
                readonly_paths: READONLY.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            }),
        }),
        ..Default::default()
    }
}

/// The paths a kubelet masks and makes read-only (its default procMount).
pub const MASKED: &[&str] = &[
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
];
pub const READONLY: &[&str] = &[
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// The pod's own cgroup dir of a container in `hierarchy` (`memory`, ...).
pub fn container_cgroup(node: &Node, pod: &Pod, id: &str, hierarchy: &str) -> PathBuf {
    Path::new("/sys/fs/cgroup")
        .join(hierarchy)
        .join(&node.prefix)
        .join(format!("pod{}", pod.uid))
        .join(id)
}

impl Counts {
    pub const ZERO: Counts = Counts {
        state_dirs: 0,
        cgroups: 0,
        mounts: 0,
        netns: 0,
        processes: 0,
    };

    pub fn max(self, o: Counts) -> Counts {
        Counts {
            state_dirs: self.state_dirs.max(o.state_dirs),
            cgroups: self.cgroups.max(o.cgroups),
            mounts: self.mounts.max(o.mounts),
            netns: self.netns.max(o.netns),
            processes: self.processes.max(o.processes),
        }
    }
}
