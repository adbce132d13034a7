//! runsbx as a Kubernetes runtime handler: a private containerd with its CRI
//! plugin (hack/engines/setup-cri: handlers "runsbx" and "runc", a CNI bridge
//! network, the node's network in a namespace of its own) driven over the CRI
//! gRPC API with the calls and messages a kubelet sends: RunPodSandbox with
//! `runtime_handler`, ImageStatus instead of PullImage for a local image,
//! CreateContainer/StartContainer, ContainerStatus, ExecSync, the container's
//! log file, UpdateContainerResources, ContainerStats, StopContainer,
//! RemoveContainer, StopPodSandbox, RemovePodSandbox, and the pod cgroup
//! removed afterwards as a kubelet removes it. Each test checks that nothing of
//! its pods is left: runsbx state, cgroup, mount, network namespace, process.
//!
//! Needs root and Debian's containerd (its CRI plugin), containernetworking-
//! plugins, umoci, busybox-static, gcc (hack/setup-ci installs them); a missing
//! one fails with its name.

#[macro_use]
mod node;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use k8s_cri::v1 as cri;
use k8s_cri::v1::security_profile::ProfileType;
use k8s_cri::v1::{ContainerState, PodSandboxState};

use crate::common::*;
use node::*;

/// One pod through every call a kubelet makes for it, under runsbx, on the
/// CNI network.
#[test]
fn cri_pod_lifecycle_under_runsbx() {
    let node = Node::start();
    let started = Instant::now();
    node.require_image(PAUSE);
    node.require_image(BUSYBOX);
    let pod = node.run_pod("life", "runsbx", false);
    let (ps, info) = node.pod_status(&pod);
    assert_eq!(ps.state, PodSandboxState::SandboxReady as i32, "{ps:?}");
    assert_eq!(ps.runtime_handler, "runsbx");
    let ip = ps.network.map(|n| n.ip).unwrap_or_default();
    assert!(ip.starts_with(POD_SUBNET), "pod IP {ip:?}");
    assert_eq!(
        info["runtimeOptions"]["binary_name"],
        node.dir().join("bin/runsbx").to_str().unwrap(),
        "{info:#}"
    );

    // PID 1 ignores SIGTERM without a handler: the trap makes StopContainer's
    // SIGTERM end it, with a last line in the log.
    let script = "trap 'echo stopping; exit 0' TERM; echo started; sleep 1000 & wait";
    let mut cfg = container(&pod, "main", &["sh", "-c", script]);
    // The pod spec docs/engines.md shows: read-only root, no capabilities,
    // an emptyDir volume (a host dir the kubelet binds), a memory limit.
    let volume = node.dir().join("volume");
    fs::create_dir(&volume).unwrap();
    cfg.mounts = vec![cri::Mount {
        container_path: "/work".into(),
        host_path: volume.to_str().unwrap().into(),
        ..Default::default()
    }];
    let linux = cfg.linux.as_mut().unwrap();
    linux.resources.as_mut().unwrap().memory_limit_in_bytes = 64 << 20;
    let sc = linux.security_context.as_mut().unwrap();
    sc.readonly_rootfs = true;
    sc.capabilities = Some(cri::Capability {
        drop_capabilities: vec!["ALL".into()],
        ..Default::default()
    });
    let id = node.create_start(&pod, cfg);
    let (st, info) = node.status(&id);
    assert_eq!(st.state, ContainerState::ContainerRunning as i32, "{st:?}");

    // runsbx made both the sandbox and the container: its state dirs, under
    // the handler's root; runc's root has nothing.
    for c in [&pod.id, &id] {
        assert!(
            node.runsbx_state().join(c).is_dir(),
            "no runsbx state for {c}"
        );
    }
    let runc_state = node.dir().join("runc-root/k8s.io");
    assert!(!runc_state.join(&id).exists());
    let pid = info["pid"].as_i64().expect("pid in ContainerStatus info");
    let limit = container_cgroup(&node, &pod, &id, "memory").join("memory.limit_in_bytes");
    assert_eq!(
        fs::read_to_string(&limit).unwrap().trim(),
        (64u64 << 20).to_string(),
        "{}",
        limit.display()
    );
    let procs = fs::read_to_string(limit.with_file_name("cgroup.procs")).unwrap();
    assert!(procs.lines().any(|l| l == pid.to_string()), "{procs}");

    // The leftover counts see a live pod: the sandbox's and the container's
    // state dirs, cgroups, rootfs and shm mounts, netns, processes.
    let live = node.counts();
    assert!(
        live.state_dirs == 2
            && live.cgroups >= 2
            && live.mounts >= 3
            && live.netns >= 1
            && live.processes >= 3,
        "{live:?}"
    );
    eprintln!("cri_pod_lifecycle_under_runsbx: one pod running: {live:?}");

    eventually("started in the log", Duration::from_secs(10), || {
        (node.log(&pod, &id) == "started\n").then_some(())
    });

    // ExecSync: status, stdout and stderr apart; the exec'd process under the
    // pod's seccomp profile, in the pod's network.
    let r = node.exec(
        &id,
        &[
            "sh",
            "-c",
            "grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status; ip -4 -o addr show eth0; \
             touch /work/from-exec; echo work=$?; touch /x 2>/dev/null; echo root=$?; \
             echo to-stderr >&2; exit 3",
        ],
    );
    let out = String::from_utf8_lossy(&r.stdout);
    assert_eq!(r.exit_code, 3, "{out}");
    assert_eq!(String::from_utf8_lossy(&r.stderr), "to-stderr\n");
    assert!(out.contains("Seccomp:\t2\n"), "{out}");
    assert!(out.contains("NoNewPrivs:\t1\n"), "{out}");
    assert!(out.contains("CapEff:\t0000000000000000\n"), "{out}");
    assert!(out.contains("work=0\nroot=1\n"), "{out}");
    assert!(volume.join("from-exec").exists());
    assert!(out.contains(&format!("inet {ip}/24")), "{out}");

    let stats = call!(
        node.cri,
        runtime.container_stats(cri::ContainerStatsRequest {
            container_id: id.clone(),
        })
    )
    .expect("ContainerStats")
    .stats
    .expect("stats");
    let mem = stats
        .memory
        .and_then(|m| m.working_set_bytes)
        .map(|v| v.value);
    let cpu = stats
        .cpu
        .and_then(|c| c.usage_core_nano_seconds)
        .map(|v| v.value);
    assert!(
        mem.unwrap_or(0) > 0 && cpu.unwrap_or(0) > 0,
        "{mem:?} {cpu:?}"
    );

    let t = Instant::now();
    node.stop(&id, 30);
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "SIGTERM did not stop it"
    );
    let st = node.wait_exited(&id);
    assert_eq!(st.exit_code, 0, "{st:?}");
    assert_eq!(node.log(&pod, &id), "started\nstopping\n");
    node.remove(&id);
    node.remove_pod(&pod);
    node.assert_clean();
    eprintln!("cri_pod_lifecycle_under_runsbx: {:?}", started.elapsed());
}

/// UpdateContainerResources goes to `runsbx update` (the shim passes the new
/// resources on stdin); the container's cgroup shows them.
#[test]
fn cri_update_container_resources() {
    let node = Node::start();
    let pod = node.run_pod("update", "runsbx", true);
    let mut cfg = container(&pod, "main", &["sleep", "1000"]);
    let res = cfg.linux.as_mut().unwrap().resources.as_mut().unwrap();
    res.memory_limit_in_bytes = 64 << 20;
    let id = node.create_start(&pod, cfg);
    let r = call!(
        node.cri,
        runtime.update_container_resources(cri::UpdateContainerResourcesRequest {
            container_id: id.clone(),
            linux: Some(cri::LinuxContainerResources {
                cpu_shares: 512,
                cpu_period: 100_000,
                cpu_quota: 50_000,
                memory_limit_in_bytes: 96 << 20,
                ..Default::default()
            }),
            ..Default::default()
        })
    );
    if let Err(e) = &r {
        assert!(
            !e.message().contains("unrecognized subcommand 'update'"),
            "UpdateContainerResources: runsbx has no `update` command yet (issue 20): {e}"
        );
        panic!("UpdateContainerResources: {e}");
    }
    let read = |h: &str, f: &str| {
        let p = container_cgroup(&node, &pod, &id, h).join(f);
        fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    };
    assert_eq!(
        read("memory", "memory.limit_in_bytes").trim(),
        (96u64 << 20).to_string()
    );
    assert_eq!(read("cpu", "cpu.cfs_quota_us").trim(), "50000");
    assert_eq!(read("cpu", "cpu.shares").trim(), "512");
    let (st, _) = node.status(&id);
    let lim = st
        .resources
        .and_then(|r| r.linux)
        .map(|l| l.memory_limit_in_bytes);
    assert_eq!(lim, Some(96 << 20));
    node.end(&pod, &id);
    node.assert_clean();
}

/// What a pod gets under runsbx that it does not under runc, from the same
/// pod spec: the operator's Landlock default (`{"landlock":"auto"}`) keeps a
/// container given CAP_SYS_ADMIN from remounting its read-only root and
/// writing outside its volumes, and sets no_new_privs. The pod's seccomp
/// profile (`RuntimeDefault`) is enforced under both; `Unconfined` lifts it.
#[test]
fn cri_landlock_default_and_pod_seccomp() {
    let node = Node::start();
    let probe = probe_bin();
    let volume = node.dir().join("volume");
    fs::create_dir(&volume).unwrap();
    let script = "mount -o remount,rw / 2>/dev/null; echo remount=$?; \
                  touch /escape 2>/dev/null; echo root=$?; touch /work/ok; echo work=$?; \
                  grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; /probe add-key";
    let cases = [
        (
            "runsbx",
            ProfileType::RuntimeDefault,
            "remount=1\nroot=1\nwork=0\nNoNewPrivs:\t1\nSeccomp:\t2\n",
            "EPERM",
        ),
        (
            "runc",
            ProfileType::RuntimeDefault,
            "remount=0\nroot=0\nwork=0\nNoNewPrivs:\t0\nSeccomp:\t2\n",
            "EPERM",
        ),
        (
            "runsbx",
            ProfileType::Unconfined,
            "remount=1\nroot=1\nwork=0\nNoNewPrivs:\t1\nSeccomp:\t0\n",
            "EFAULT",
        ),
    ];
    for (handler, profile, want, errno) in cases {
        let pod = node.run_pod(&format!("ll-{handler}"), handler, false);
        let mut cfg = container(&pod, "main", &["sh", "-c", script]);
        cfg.mounts = vec![
            cri::Mount {
                container_path: "/probe".into(),
                host_path: probe.to_str().unwrap().into(),
                readonly: true,
                ..Default::default()
            },
            // What a kubelet binds for an emptyDir volume.
            cri::Mount {
                container_path: "/work".into(),
                host_path: volume.to_str().unwrap().into(),
                ..Default::default()
            },
        ];
        let sc = cfg
            .linux
            .as_mut()
            .unwrap()
            .security_context
            .as_mut()
            .unwrap();
        sc.readonly_rootfs = true;
        sc.capabilities = Some(cri::Capability {
            add_capabilities: vec!["SYS_ADMIN".into()],
            ..Default::default()
        });
        sc.seccomp = Some(seccomp(profile));
        let id = node.create_start(&pod, cfg);
        let st = node.wait_exited(&id);
        let log = node.log(&pod, &id);
        let what = format!("{handler} {profile:?}: {log}");
        assert_eq!(st.exit_code, 0, "{what}");
        let (lines, probe_out) = log.split_at(log.find('{').unwrap_or(log.len()));
        assert_eq!(lines, want, "{what}");
        let v = probe_lines(probe_out.as_bytes());
        assert_eq!(v.len(), 1, "{what}");
        assert_eq!(v[0]["errno"], errno, "{what}");
        assert!(volume.join("ok").exists(), "{what}");
        fs::remove_file(volume.join("ok")).unwrap();
        node.end(&pod, &id);
    }
    node.assert_clean();
}

/// A pod on the CNI network serves HTTP on its own IP (and on its lo, which
/// the CRI plugin's loopback plugin brings up); a hostNetwork pod, in the
/// node's network namespace with the bridge, reaches it. Both under runsbx.
#[test]
fn cri_cni_and_host_network_pods() {
    let node = Node::start();
    let web = node.run_pod("web", "runsbx", false);
    let ip = node.pod_ip(&web);
    assert!(ip.starts_with(POD_SUBNET), "pod IP {ip:?}");
    let serve = "mkdir -p /www && echo hello-from-$(hostname) >/www/index.html && \
                 exec httpd -f -p 8080 -h /www";
    let server = node.create_start(&web, container(&web, "httpd", &["sh", "-c", serve]));
    // busybox-static's wget crashes (SIGSEGV, Debian 12); nc speaks HTTP/1.0.
    let get = |id: &str, host: &str| {
        let req = format!(
            "printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {host} 8080 | tail -n 1"
        );
        let r = node.exec(id, &["sh", "-c", &req]);
        let body = String::from_utf8_lossy(&r.stdout).into_owned();
        (r.exit_code == 0 && !body.is_empty()).then_some(body)
    };
    let body = eventually("httpd to answer on lo", Duration::from_secs(20), || {
        get(&server, "127.0.0.1")
    });
    assert_eq!(body, "hello-from-web\n");
    let r = node.exec(&server, &["ip", "-4", "-o", "addr", "show", "eth0"]);
    assert!(
        String::from_utf8_lossy(&r.stdout).contains(&format!("inet {ip}/24")),
        "{r:?}"
    );

    let host = node.run_pod("host", "runsbx", true);
    let client = node.create_start(&host, container(&host, "client", &["sleep", "1000"]));
    assert_eq!(get(&client, &ip).as_deref(), Some("hello-from-web\n"));
    let r = node.exec(&client, &["ip", "-o", "link", "show", BRIDGE]);
    assert_eq!(r.exit_code, 0, "no {BRIDGE} in the hostNetwork pod: {r:?}");

    // From the host side: the hostNetwork container is in containerd's
    // network namespace (the node's, private to this test), the other not.
    let netns = |pid: i64| fs::read_link(format!("/proc/{pid}/ns/net")).unwrap();
    let node_net = netns(node.pid.into());
    let pid_of = |id: &str| node.status(id).1["pid"].as_i64().expect("pid");
    assert_eq!(netns(pid_of(&client)), node_net);
    assert_ne!(netns(pid_of(&server)), node_net);
    assert_ne!(fs::read_link("/proc/self/ns/net").unwrap(), node_net);

    node.end(&host, &client);
    node.end(&web, &server);
    node.assert_clean();
}

/// 30 pods under runsbx, two at a time, alternately on the CNI network and
/// the node's: each prints its number and its network, and leaves nothing.
#[test]
fn cri_load_30_pods_two_in_parallel() {
    const PODS: usize = 30;
    let node = Node::start();
    let before = node.counts();
    let started = Instant::now();
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut peak = before;
    std::thread::scope(|s| {
        // The counts while pods come and go, to show they see them.
        let sampler = s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(node.counts());
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        let workers: Vec<_> = (0..2)
            .map(|worker| {
                let node = &node;
                s.spawn(move || {
                    for n in (worker..PODS).step_by(2) {
                        one_pod(node, n);
                    }
                })
            })
            .collect();
        let results: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        sampler.join().unwrap();
        for r in results {
            if let Err(e) = r {
                std::panic::resume_unwind(e);
            }
        }
    });
    let elapsed = started.elapsed();
    let after = eventually("the node to be as before", Duration::from_secs(20), || {
        let c = node.counts();
        (c == before).then_some(c)
    });
    eprintln!(
        "cri_load_30_pods_two_in_parallel: {PODS} pods in {elapsed:?}\n  before: {before:?}\n  peak:   {peak:?}\n  after:  {after:?}"
    );
}

fn one_pod(node: &Node, n: usize) {
    let host_network = n % 2 == 1;
    let pod = node.run_pod(&format!("load-{n}"), "runsbx", host_network);
    let script = if host_network {
        format!("echo pod-{n}; ip -o link show {BRIDGE} >/dev/null && echo node-network")
    } else {
        format!("echo pod-{n}; ip -4 -o addr show eth0 | awk '{{print $4}}'")
    };
    let id = node.create_start(&pod, container(&pod, "main", &["sh", "-c", &script]));
    let st = node.wait_exited(&id);
    let want = if host_network {
        format!("pod-{n}\nnode-network\n")
    } else {
        format!("pod-{n}\n{}/24\n", node.pod_ip(&pod))
    };
    let log = node.log_after_exit(&pod, &id);
    assert_eq!((st.exit_code, log.as_str()), (0, want.as_str()), "pod {n}");
    node.end(&pod, &id);
}

/// `runsbx sandbox` inside a pod, as an agent platform runs it (docs/where.md,
/// issue 30): a busybox container with the node's /usr bound read-only, an
/// emptyDir at /tmp, the kubelet's defaults (RuntimeDefault seccomp, the
/// default capabilities, a masked /proc), under runc as most clusters run
/// pods and under runsbx itself; as root and as uid 65534. Namespaces are
/// unavailable there: the sandbox takes the landlock mode, says why on
/// stderr in one line, and runs the workload, numpy and pandas, sqlite in its
/// workdir and the REPL client's requests; selftest passes; a read outside
/// the workdir is refused; nothing is left in the emptyDir. A privileged
/// pod gets the namespace mode, silently.
#[test]
fn cri_pod_runs_the_sandbox_in_landlock_mode() {
    let node = Node::start();
    node.require_image(PAUSE);
    node.require_image(BUSYBOX);
    let repo = repo();
    let ro = |host: &Path, at: &str| cri::Mount {
        container_path: at.into(),
        host_path: host.to_str().unwrap().into(),
        readonly: true,
        ..Default::default()
    };
    let py = "print(6*7)\ntry:\n    open('/etc/hostname').read()\n    print('READ')\n\
              except OSError as e:\n    print('denied', e.errno)";
    // (handler, runAsUser, runAsGroup, the cause announced; None:
    // privileged, the namespace mode).
    const USERNS: &str = "seccomp profile refuses a user namespace";
    for (handler, uid, gid, cause) in [
        ("runc", 0, None, Some("runs as root without CAP_SYS_ADMIN")),
        ("runc", 65534, Some(65534), Some(USERNS)),
        ("runsbx", 65534, Some(65534), Some(USERNS)),
        // runAsUser alone leaves gid 0, which a non-root uid cannot leave:
        // refused before anything runs, naming the fix.
        ("runc", 65534, None, Some(USERNS)),
        ("runc", 0, None, None),
    ] {
        let privileged = cause.is_none();
        let what = format!("{handler} uid {uid} gid {gid:?} privileged {privileged}");
        let suffix = match (privileged, gid) {
            (true, _) => "-privileged",
            (false, None) if uid != 0 => "-gid0",
            _ => "",
        };
        let mut config = node.pod_config(&format!("where-{handler}-{uid}{suffix}"), false);
        if privileged {
            let sc = config
                .linux
                .as_mut()
                .unwrap()
                .security_context
                .as_mut()
                .unwrap();
            sc.privileged = true;
        }
        let pod = node.run_pod_with(config, handler);
        let mut cfg = container(&pod, "main", &["sleep", "1000"]);
        let tmp = node.dir().join(format!("tmp-{handler}-{uid}{suffix}"));
        fs::create_dir(&tmp).unwrap();
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o1777)).unwrap();
        cfg.mounts = vec![
            ro(Path::new("/usr"), "/usr"),
            ro(Path::new("/usr/lib"), "/lib"),
            ro(Path::new("/usr/lib64"), "/lib64"),
            // Debian's numpy finds its BLAS through /etc/alternatives.
            ro(Path::new("/etc/alternatives"), "/etc/alternatives"),
            ro(&runsbx_bin(), "/opt/runsbx/runsbx"),
            // selftest finds its probe beside runsbx.
            ro(&probe_bin(), "/opt/runsbx/runsbx-probe"),
            ro(
                &repo.join("hack/python-repl-client.py"),
                "/opt/repl/hack/python-repl-client.py",
            ),
            ro(
                &repo.join("bundles/python-repl/repl.py"),
                "/opt/repl/bundles/python-repl/repl.py",
            ),
            cri::Mount {
                container_path: "/tmp".into(),
                host_path: tmp.to_str().unwrap().into(),
                ..Default::default()
            },
        ];
        let sc = cfg
            .linux
            .as_mut()
            .unwrap()
            .security_context
            .as_mut()
            .unwrap();
        sc.run_as_user = Some(cri::Int64Value { value: uid });
        sc.run_as_group = gid.map(|value| cri::Int64Value { value });
        if privileged {
            // What a kubelet sends for a privileged container.
            sc.privileged = true;
            sc.masked_paths.clear();
            sc.readonly_paths.clear();
        }
        let id = node.create_start(&pod, cfg);

        let sandbox = format!(
            "exec /opt/runsbx/runsbx sandbox --status-fd 3 -- /usr/bin/python3 -c \"{py}\" 3>&1"
        );
        let r = node.exec(&id, &["sh", "-c", &sandbox]);
        let (out, err) = (
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&r.stderr),
        );
        if uid != 0 && gid.is_none() {
            assert_eq!(r.exit_code, 125, "{what}: {out}\n{err}");
            assert_eq!(out, "", "{what}");
            assert!(
                err.lines().count() == 1
                    && err.starts_with("runsbx: error: ")
                    && err.contains(USERNS)
                    && err.contains("uid 65534 with gid 0")
                    && err.contains("runAsGroup"),
                "{what}: {err}"
            );
            assert_eq!(
                fs::read_dir(&tmp).unwrap().count(),
                0,
                "{what}: nothing made"
            );
            node.end(&pod, &id);
            continue;
        }
        assert_eq!(r.exit_code, 0, "{what}: {out}\n{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{what}: {out}");
        let start: serde_json::Value = serde_json::from_str(lines[0]).expect("start line");
        let mode = if privileged { "namespaces" } else { "landlock" };
        assert_eq!(start["isolation"], mode, "{what}: {out}");
        // Without a mount namespace the file is there, and refused; with
        // one, only the binds exist.
        let denied = if privileged { "denied 2" } else { "denied 13" };
        assert_eq!(lines[1..3], ["42", denied], "{what}");
        match cause {
            Some(cause) => assert!(
                err.lines().count() == 1
                    && err.starts_with("runsbx: namespaces are unavailable here (")
                    && err.contains(cause),
                "{what}: {err}"
            ),
            None => assert_eq!(err, "", "{what}"),
        }

        let r = node.exec(
            &id,
            &[
                "/opt/runsbx/runsbx",
                "sandbox",
                "--",
                "/usr/bin/python3",
                "-c",
                PY_DATA,
            ],
        );
        let out = String::from_utf8_lossy(&r.stdout);
        assert_eq!(
            out,
            "15 3\n42\n",
            "{what}: {}",
            String::from_utf8_lossy(&r.stderr)
        );

        let r = node.exec(
            &id,
            &[
                "/usr/bin/python3",
                "/opt/repl/hack/python-repl-client.py",
                "--runsbx",
                "/opt/runsbx/runsbx",
                // The image's PATH is /bin alone.
                "--python",
                "/usr/bin/python3",
            ],
        );
        let out = String::from_utf8_lossy(&r.stdout);
        assert!(
            out.contains(" 0 failure(s)"),
            "{what}: {out}\n{}",
            String::from_utf8_lossy(&r.stderr)
        );

        let r = node.exec(&id, &["/opt/runsbx/runsbx", "selftest"]);
        let out = String::from_utf8_lossy(&r.stdout);
        assert!(
            out.starts_with(&format!("isolation: {mode}\n")) && out.contains("selftest passed"),
            "{what}: {out}\n{}",
            String::from_utf8_lossy(&r.stderr)
        );

        // The private workdirs; a non-root uid's state root
        // (/tmp/runsbx-UID, its discovery cache) stays.
        let left: Vec<_> = fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("runsbx-work"))
            .collect();
        assert!(left.is_empty(), "{what}: left in /tmp: {left:?}");
        node.end(&pod, &id);
    }
    node.assert_clean();
}
