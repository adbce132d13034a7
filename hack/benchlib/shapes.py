"""The bundle shapes hack/bench runs, each as its source writes it: `runc spec`, podman's config.json and
containerd's (captured for real through a runtime that copies the bundle at `create`, then runs runc),
and the cgroup-free case. Only process.args, process.terminal and root.path change, plus what cannot
exist outside the engine (the files its bind mounts bring in); every change is listed in Shape.changes
and printed in docs/benchmarks.md."""

import copy
import json
import os
import shutil
import subprocess

from .util import ENGINES, die, log, q, sh, umount_under

ARGS = ["/bin/true"]

# Registered as an engine's runtime. At `create` it keeps the bundle's config.json and a copy of every
# file a bind mount brings in (the engine deletes them with the container), then runs runc, same argv.
CAPTURE = r'''#!/usr/bin/python3
import json, os, shutil, sys
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "captured")
argv = sys.argv[1:]
if "create" in argv and "--bundle" in argv:
    bundle = argv[argv.index("--bundle") + 1]
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(bundle, "config.json"), out)
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    for i, m in enumerate(cfg.get("mounts", [])):
        if os.path.isfile(m.get("source", "")):
            shutil.copy(m["source"], os.path.join(out, f"mount{i}"))
os.execvp("runc", ["runc"] + argv)
'''


class Shape:
    def __init__(self, key, title, bundle, about, changes, goal):
        """goal: issue 22 sets goals against crun on this shape (runc spec's and podman's)."""
        self.key, self.title, self.bundle, self.about = key, title, bundle, about
        self.changes, self.goal = changes, goal


def write_config(bundle, cfg):
    os.makedirs(bundle, exist_ok=True)
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)


def make_rootfs(path):
    """busybox-static with the applets the bundles run, and the files engines bind over."""
    os.makedirs(os.path.join(path, "bin"))
    for d in ("proc", "dev", "sys", "tmp", "etc", "root", "run"):
        os.makedirs(os.path.join(path, d))
    shutil.copy2("/usr/bin/busybox", os.path.join(path, "bin", "busybox"))
    for applet in ("true", "sh", "sleep"):
        os.symlink("busybox", os.path.join(path, "bin", applet))
    for name, text in (("passwd", "root:x:0:0:root:/root:/bin/sh\n"), ("group", "root:x:0:\n"),
                       ("hosts", ""), ("resolv.conf", ""), ("hostname", "")):
        with open(os.path.join(path, "etc", name), "w") as f:
            f.write(text)
    return path


def as_run(cfg, rootfs, was=None):
    """The only changes every shape gets: /bin/true, no terminal, the absolute busybox root. Returns
    what changed, as text."""
    if cfg["process"]["args"] == ARGS:
        changes = [f"`process.args` unchanged (the capture ran {json.dumps(ARGS)})"]
    else:
        changes = [f"`process.args` {json.dumps(cfg['process']['args'])} → {json.dumps(ARGS)}"]
    cfg["process"]["args"] = list(ARGS)
    if cfg["process"].get("terminal"):
        cfg["process"]["terminal"] = False
        changes.append("`process.terminal` true → false")
    changes.append(f"`root.path` {was or '`' + cfg['root']['path'] + '`'} → the busybox rootfs (absolute; "
                   f"`readonly` left {'true' if cfg['root'].get('readonly') else 'unset'})")
    cfg["root"]["path"] = rootfs
    return changes


def runc_spec(tmp, rootfs):
    src = os.path.join(tmp, "runc-spec-src")
    os.makedirs(src)
    sh(["runc", "spec", "--bundle", src])
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    changes = as_run(cfg, rootfs)
    bundle = os.path.join(tmp, "runc-spec")
    write_config(bundle, cfg)
    free = copy.deepcopy(cfg)
    free["linux"].pop("resources", None)
    free["linux"].pop("cgroupsPath", None)
    free_bundle = os.path.join(tmp, "cgroup-free")
    write_config(free_bundle, free)
    return [
        Shape("runc-spec", "`runc spec` as it comes", bundle,
              "`runc spec`'s config.json: its `linux.resources` (one device rule: deny all), the pid, "
              "network, ipc, uts and mount namespaces (no cgroup namespace in runc 1.1's spec), masked "
              "and read-only paths, rlimit NOFILE 1024, three capabilities, noNewPrivileges, a read-only "
              "root, and mounts of proc, a tmpfs /dev, devpts, shm, mqueue, sysfs and a read-only "
              "`cgroup` on /sys/fs/cgroup (on this hybrid host, one mount per v1 hierarchy). No "
              "`cgroupsPath`: each runtime makes a cgroup named after the container id.",
              changes, goal=True),
        Shape("cgroup-free", "cgroup-free (not a headline shape)", free_bundle,
              "The same bundle without `linux.resources` (no `cgroupsPath` either), run in the "
              "foreground: runsbx runs it without a cgroup (see `run` in docs/runsbx.1.md), crun and runc "
              "still make theirs. This was the old benchmark's group 1; no engine writes such a bundle, "
              "so it shows runsbx's cheapest path, never the headline.",
              changes + ["`linux.resources` removed"], goal=False),
    ]


def install_capture(dir_):
    os.makedirs(dir_)
    path = os.path.join(dir_, "capture")
    with open(path, "w") as f:
        f.write(CAPTURE)
    os.chmod(path, 0o755)
    return path


def adapt(captured, engine_dir, bundle, rootfs, engine):
    """The captured config with args/terminal/root changed and the engine's own files replaced by copies
    that outlive the container."""
    with open(os.path.join(captured, "config.json")) as f:
        cfg = json.load(f)
    original = copy.deepcopy(cfg)
    was = f"{engine}'s image layer in its storage" if cfg["root"]["path"].startswith(engine_dir) else None
    changes = as_run(cfg, rootfs, was)
    files = os.path.join(bundle, "files")
    os.makedirs(files)
    for i, m in enumerate(cfg.get("mounts", [])):
        src = m.get("source", "")
        if not src.startswith(engine_dir + "/"):
            continue
        kept = os.path.join(captured, f"mount{i}")
        dst = m["destination"]
        if os.path.isfile(kept):
            m["source"] = os.path.join(files, dst.strip("/").replace("/", "_"))
            shutil.copy(kept, m["source"])
            changes.append(f"`{dst}` bind source: {engine}'s per-container file → a copy of it in the "
                           f"bench's temp dir")
        elif dst == "/dev/shm":
            # podman mounts a tmpfs for each container's /dev/shm (shm_size 64m) and binds it.
            m["source"] = os.path.join(files, "shm")
            os.makedirs(m["source"])
            sh(["mount", "-t", "tmpfs", "-o", "nosuid,noexec,nodev,mode=1777,size=65536k", "shm",
                m["source"]])
            changes.append(f"`/dev/shm` bind source: {engine}'s per-container tmpfs → a tmpfs of the same "
                           "size and options mounted in the bench's temp dir")
        else:
            die(f"{engine}'s config binds {src} onto {dst}, which is gone with the container and which "
                "this script does not know how to replace: teach benchlib/shapes.py:adapt")
    write_config(bundle, cfg)
    with open(os.path.join(bundle, "captured.json"), "w") as f:
        json.dump(original, f, indent=1)
    return changes


def capture_podman(tmp, runsbx, rootfs):
    """podman run once with the capture runtime, in hack/engines/setup-podman's private configuration."""
    engine = os.path.join(tmp, "podman")
    cap = install_capture(os.path.join(tmp, "capture-podman"))
    out = subprocess.run([os.path.join(ENGINES, "setup-podman"), engine, runsbx], check=True,
                         capture_output=True, text=True).stdout
    env = dict(os.environ)
    for line in out.splitlines():  # export VAR='value'
        k, _, v = line.removeprefix("export ").partition("=")
        env[k] = v.strip("'")
    argv = ["podman", "run", "--rm", "--runtime", cap, "localhost/busybox", "/bin/true"]
    log("capturing podman's config.json: " + q(argv))
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        die(f"podman run with the capture runtime failed ({p.returncode}): {p.stderr.strip()}")
    bundle = os.path.join(tmp, "podman-bundle")
    changes = adapt(os.path.join(os.path.dirname(cap), "captured"), engine, bundle, rootfs, "podman")
    umount_under(engine)
    return Shape("podman", "podman's config.json", bundle,
                 "What podman 4 writes for `podman run --rm localhost/busybox` with "
                 "hack/engines/setup-podman's configuration (cgroupfs manager, netns none, "
                 "default_ulimits): its seccomp profile (containers-common's, converted), 14 capabilities, "
                 "rlimits NOFILE and NPROC, `linux.resources` (deny-all device rule, pids limit 2048), "
                 "`cgroupsPath` /libpod_parent/libpod-ID, a cgroup mount, bind mounts for /etc/hosts, "
                 "/etc/hostname, /run/.containerenv and /dev/shm, a read-write root. The original is kept "
                 "as `captured.json` beside the bundle (with `--keep`).", changes, goal=True)


def capture_containerd(tmp, rootfs):
    """ctr run once with the capture runtime as the runc v2 shim's binary, on a private containerd."""
    engine = os.path.join(tmp, "containerd")
    cap = install_capture(os.path.join(tmp, "capture-containerd"))
    sock = subprocess.run([os.path.join(ENGINES, "setup-containerd"), engine], check=True,
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]
    try:
        argv = ["ctr", "--address", sock, "run", "--rm", "--runc-binary", cap, "--runc-root",
                os.path.join(engine, "runc-root"), "docker.io/library/busybox:latest", "bench-capture",
                "/bin/true"]
        log("capturing containerd's config.json: " + q(argv))
        p = subprocess.run(argv, capture_output=True, text=True)
        if p.returncode != 0:
            die(f"ctr run with the capture runtime failed ({p.returncode}): {p.stderr.strip()}")
    finally:
        sh([os.path.join(ENGINES, "stop-containerd"), engine], check=False)
    bundle = os.path.join(tmp, "containerd-bundle")
    changes = adapt(os.path.join(os.path.dirname(cap), "captured"), engine, bundle, rootfs, "containerd")
    return Shape("containerd", "containerd's config.json", bundle,
                 "What containerd 1.6's `io.containerd.runc.v2` shim hands its runtime for `ctr run "
                 "docker.io/library/busybox:latest` (hack/engines/setup-containerd): no seccomp (ctr adds "
                 "none unless `--seccomp`), 14 capabilities, noNewPrivileges, `linux.resources` (a device "
                 "allow-list, cpu shares 1024), `cgroupsPath` /default/ID, a tmpfs on /run, no `cgroup` "
                 "mount, a read-write root. The original is kept as `captured.json` beside the bundle "
                 "(with `--keep`). Issue 22 sets no goal on it.", changes, goal=False)
