"""Processes, logging and the tools hack/bench needs."""

import os
import shlex
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINES = os.path.join(REPO, "hack", "engines")

# tool -> the Debian package that has it (all in hack/setup-ci's list). A missing one stops the script
# before anything runs: a row is never skipped.
TOOLS = {
    "hyperfine": "hyperfine", "crun": "crun", "runc": "runc", "bwrap": "bubblewrap",
    "podman": "podman", "conmon": "conmon", "containerd": "containerd", "ctr": "containerd",
    "umoci": "umoci", "strace": "strace", "unshare": "util-linux",
}
FILES = {"/usr/bin/busybox": "busybox-static", "/usr/bin/time": "time", "/usr/bin/python3": "python3"}


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def die(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def q(argv):
    return shlex.join(argv)


def sh(argv, check=True, **kw):
    return subprocess.run(argv, check=check, **kw)


def attempt(argv):
    """Runs argv once, output discarded but stderr kept: (exit status, stderr)."""
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stderr.strip()


def preflight():
    """Dies naming every missing tool and its package."""
    missing = [f"{t} (Debian's {pkg})" for t, pkg in TOOLS.items() if not shutil.which(t)]
    missing += [f"{f} (Debian's {pkg})" for f, pkg in FILES.items() if not os.path.exists(f)]
    if missing:
        die("missing: " + ", ".join(missing) + "; run hack/setup-ci (as root), then rerun")


def version(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    out = (p.stdout or p.stderr).strip().splitlines()
    return out[0] if p.returncode == 0 and out else "?"


def umount_under(path):
    """Unmounts whatever is mounted under path, deepest first (tmpfs for podman's /dev/shm)."""
    path = os.path.realpath(path) + "/"
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for m in sorted((m for m in points if m.startswith(path)), reverse=True):
        subprocess.run(["umount", "-l", m], check=False)
