"""Rows (one command each), the wrapper detection, and what is measured of a row: wall and CPU through
hyperfine in A-B, B-A, B-A, A-B blocks, CPU per run from wait4, peak RSS, syscall counts."""

import json
import os
import re
import statistics
import subprocess

from .util import attempt, die, log, q, sh

# A private mount namespace without the cgroup2 mount, for a runtime that refuses this hybrid host
# (crun 1.8: "cgroups in hybrid mode not supported, drop all controllers from cgroupv2" while hugetlb
# sits on cgroup2). Nothing changes on the host.
WRAP = ["unshare", "-m", "sh", "-c", 'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"', "sh"]


class Row:
    """One command of a group. `cmd` is the command itself; `prefix` is the wrapper or nothing, and a
    measuring tool (time, strace) goes between the two, so it measures the runtime, not the wrapper."""

    def __init__(self, name, cmd, prefix=(), wrapped=None, cleanup=None):
        self.name, self.cmd, self.prefix, self.wrapped = name, list(cmd), list(prefix), wrapped
        self.cleanup = cleanup  # argv that removes a container a failed run left

    def argv(self, tool=()):
        return self.prefix + list(tool) + self.cmd


def oci_row(name, binary, root, bundle, cid):
    """`BINARY run` of the bundle, tried once as it is; only if that fails, once inside WRAP. The
    direct attempt's error is the row's `wrapped` reason. Both failing stops the script."""
    cmd = [binary, "--root", root, "run", "--bundle", bundle, cid]
    cleanup = [binary, "--root", root, "delete", "--force", cid]
    rc, err = attempt(cmd)
    if rc == 0:
        return Row(name, cmd, cleanup=cleanup)
    attempt(cleanup)
    rc2, err2 = attempt(WRAP + cmd)
    attempt(WRAP + cleanup)
    if rc2 != 0:
        die(f"{name} fails on {bundle}, directly (exit {rc}: {err}) and in the cgroup2-less mount "
            f"namespace (exit {rc2}: {err2}): {q(cmd)}")
    reason = (err.splitlines() or [f"exit {rc}"])[-1]
    log(f"{name} needs the wrapper on {os.path.basename(bundle)}: {reason}")
    return Row(name, cmd, WRAP, wrapped=reason, cleanup=cleanup)


def check(row):
    rc, err = attempt(row.argv())
    if rc != 0:
        die(f"{row.name} fails (exit {rc}): {q(row.argv())}\n{err}")


def abba(rows):
    """The orders A-B, B-A, B-A, A-B: a steady drift during a group favours no command."""
    return [rows, rows[::-1], rows[::-1], rows]


def hyperfine(tmp, key, rows, runs, warmup):
    """Wall (hyperfine) and CPU per run (wait4) of each row: four hyperfine invocations of a quarter of
    the runs each in the ABBA orders, pooled (hyperfine runs each command's runs in one block, so a
    drift during the group would favour whichever came first), then the CPU runs in the same orders."""
    n = -(-runs // 4)
    pooled = {r.name: {"times": [], "cpu": 0.0} for r in rows}
    for i, order in enumerate(abba(rows)):
        out = os.path.join(tmp, f"{key}.{i}.json")
        cmd = ["hyperfine", "-N", "--style", "basic", "-w", str(warmup), "-r", str(n), "--export-json", out]
        for r in order:
            cmd += ["-n", r.name]
        cmd += [q(r.argv()) for r in order]
        log(f"{key}: " + ", ".join(r.name for r in order))
        sh(cmd, stdout=subprocess.DEVNULL)
        with open(out) as f:
            for r, res in zip(order, json.load(f)["results"]):
                pooled[r.name]["times"] += res["times"]
                pooled[r.name]["cpu"] += (res["user"] + res["system"]) * len(res["times"])
    cpu = cpu_per_run(rows, n)
    out = {}
    for r in rows:
        t = pooled[r.name]["times"]
        out[r.name] = {"median": statistics.median(t), "stddev": statistics.stdev(t) if len(t) > 1 else 0.0,
                       "min": min(t), "times": t, "cpu_mean": pooled[r.name]["cpu"] / len(t),
                       "cpu_runs": cpu[r.name], "cpu_median": statistics.median(cpu[r.name]),
                       "wrapped": r.wrapped}
    return out


def cpu_per_run(rows, n):
    """user+sys of each command's whole tree from wait4(2)'s rusage, n runs per ABBA block, the first
    of each block not counted. hyperfine's JSON has only the mean CPU, which one slow run moves."""
    per = {r.name: [] for r in rows}
    for order in abba(rows):
        for r in order:
            for i in range(n + 1):
                p = subprocess.Popen(r.argv(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                _, status, ru = os.wait4(p.pid, 0)
                if status != 0:
                    die(f"{r.name} failed (wait status {status}): {q(r.argv())}")
                if i:
                    per[r.name].append(ru.ru_utime + ru.ru_stime)
    return per


def peak_rss(tmp, row, runs):
    """/usr/bin/time -f %M around the command (inside the wrapper): the largest RSS of it and of the
    children it reaped, KiB, `runs` times."""
    out = os.path.join(tmp, "rss")
    vals = []
    for _ in range(runs):
        sh(row.argv(["/usr/bin/time", "-f", "%M", "-o", out]), stdout=subprocess.DEVNULL,
           stderr=subprocess.DEVNULL)
        with open(out) as f:
            vals.append(int(f.read().split()[-1]))
    return {"median_kib": statistics.median(vals), "kib": vals}


def syscalls(tmp, row):
    """`strace -f -c` of one run (inside the wrapper): total calls and per-syscall counts. Deterministic
    but for a few retries (futex, wait4) where processes race."""
    out = os.path.join(tmp, "strace")
    sh(row.argv(["strace", "-f", "-c", "-o", out]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    calls = {}
    total = 0
    with open(out) as f:
        for line in f:
            parts = line.split()
            # % time, seconds, usecs/call, calls, [errors], syscall; the total line ends in "total".
            if len(parts) < 5 or not parts[3].isdigit():
                continue
            if parts[-1] == "total":
                total = int(parts[3])
            else:
                calls[parts[-1]] = int(parts[3])
    if not total:
        die(f"no strace summary for {row.name}: {q(row.argv())}")
    top = sorted(calls.items(), key=lambda kv: -kv[1])[:5]
    return {"total": total, "top": top, "per_process": per_process(tmp, row)}


def per_process(tmp, row):
    """Syscalls per process of one more run (`strace -f -o`), in the order the processes appear: for
    runsbx its own process, libcontainer's intermediate, the container's init (then the workload)."""
    out = os.path.join(tmp, "strace-ff")
    sh(row.argv(["strace", "-f", "-o", out]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    counts = {}
    with open(out) as f:
        for line in f:
            m = re.match(r"(\d+) +[a-z_0-9]+\(", line)  # a call, or its unfinished half; not "<... resumed>"
            if m:
                counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return list(counts.values())


def evict(paths):
    """Drops executables from the page cache, so every one is measured as exec reads it on a host: a file
    just written (cp, cargo) sits in large folios, which moves its CPU per run by several percent."""
    os.sync()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
