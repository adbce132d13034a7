//! The command line: clap types only, no behaviour. Flags follow runc's
//! spelling so that containerd's shim and podman's conmon can drive runsbx
//! unchanged; see docs/runsbx.1.md for what each one does.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "runsbx",
    about = "An OCI runtime for code nobody vouched for",
    disable_version_flag = true
)]
pub struct Cli {
    /// Directory for container state (default /run/runsbx, or
    /// $XDG_RUNTIME_DIR/runsbx for non-root users).
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Append log lines to FILE instead of stderr.
    #[arg(long, global = true, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Format of the log: text or json (runc's {level, msg, time} lines).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log debug messages, libcontainer's included.
    #[arg(long, global = true)]
    pub debug: bool,
    /// Manage cgroups through systemd.
    #[arg(long, global = true)]
    pub systemd_cgroup: bool,
    /// Rootless mode: true, false or auto (accepted; runsbx decides from its
    /// effective uid). Before the command, as with runc.
    #[arg(long, value_name = "BOOL", default_value = "auto", num_args = 0..=1, default_missing_value = "true", require_equals = true, value_parser = ["true", "false", "auto"])]
    pub rootless: String,
    /// Operator Landlock layer for every container: off, auto,
    /// auto-best-effort, or a JSON policy (overrides /etc/runsbx/config.json).
    #[arg(long, global = true, value_name = "MODE")]
    pub landlock_default: Option<String>,
    /// Print the version and exit.
    #[arg(short = 'v', long)]
    pub version: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a container from a bundle; its process waits for `start`.
    Create(Create),
    /// Start a created container.
    Start(Id),
    /// Create, start and wait for a container, then delete it.
    Run(Run),
    /// Print a container's state as runtime-spec JSON.
    State(Id),
    /// Send a signal (default SIGTERM) to a container's init process.
    Kill(Kill),
    /// Delete a container and its resources.
    Delete(Delete),
    /// List containers.
    List(List),
    /// List the processes of a container.
    Ps(Ps),
    /// Run a new process in a running container.
    Exec(Exec),
    /// Freeze every process of a container.
    Pause(Id),
    /// Thaw a paused container.
    Resume(Id),
    /// Change a container's cgroup limits (memory, CPU, pids, block I/O).
    Update(Update),
    /// Print a container's resource usage and OOM kills as JSON events.
    Events(Events),
    /// Refused: runsbx cannot checkpoint a container (see runsbx(1)).
    Checkpoint(Checkpoint),
    /// Refused: runsbx cannot restore a container (see runsbx(1)).
    Restore(Restore),
    /// Print what this runtime supports, as runtime-spec features JSON.
    Features,
    /// Write a default config.json.
    Spec(SpecCmd),
    /// Run one command in a generated minimal sandbox, in the foreground.
    Sandbox(Sandbox),
    /// Generate the sandbox bundle for a command, without running it.
    Gen(Gen),
    /// Serve warm sandboxed Python REPL sessions on a unix socket.
    Serve(Serve),
    /// An MCP server on stdio whose tools run Python in a sandboxed session.
    Mcp(Mcp),
    /// Run the escape probe in a sandbox and fail unless every escape is blocked.
    Selftest(Selftest),
    /// Validate a bundle as `create` would, without creating anything, and
    /// print the policy it will run under, with its weak spots.
    Check(Check),
    /// Write a Jupyter kernelspec whose kernel runs under `sandbox --jupyter`.
    Kernelspec(Kernelspec),
    /// (internal) What libcontainer runs for a prestart or createRuntime
    /// hook of a `create`: runs the hook told `created` (runtime/hooks.rs).
    #[command(hide = true)]
    HookShim(HookShim),
}

#[derive(Debug, Args)]
pub struct HookShim {
    #[arg(long)]
    pub kind: String,
    #[arg(long)]
    pub index: usize,
    /// The real bundle, which the hook is told.
    #[arg(long)]
    pub bundle: PathBuf,
    /// Where to write why the hook failed.
    #[arg(long)]
    pub report: PathBuf,
    /// The hook, as config.json has it (JSON).
    #[arg(long)]
    pub hook: String,
    /// The directory to run the hook in (createContainer: the rootfs).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct Id {
    pub id: String,
}

#[derive(Debug, Args)]
pub struct CreateFlags {
    /// Bundle directory (holding config.json).
    #[arg(short, long, default_value = ".", value_name = "DIR")]
    pub bundle: PathBuf,
    /// Write the container process's PID here.
    #[arg(long, value_name = "FILE")]
    pub pid_file: Option<PathBuf>,
    /// Unix socket that receives the pty master when process.terminal is set.
    #[arg(long, value_name = "SOCKET")]
    pub console_socket: Option<PathBuf>,
    /// Use MS_MOVE instead of pivot_root (for a rootfs on ramfs).
    #[arg(long)]
    pub no_pivot: bool,
    /// Accepted for runc compatibility: runsbx never creates a session keyring.
    #[arg(long)]
    pub no_new_keyring: bool,
    /// Pass N extra descriptors (3 .. 3+N-1) to the container process.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub preserve_fds: i32,
    /// Send a pidfd of the container process to this unix socket.
    #[arg(long, value_name = "SOCKET")]
    pub pidfd_socket: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct Create {
    #[command(flatten)]
    pub flags: CreateFlags,
    /// Accepted for runc compatibility: create always detaches.
    #[arg(short, long, hide = true)]
    pub detach: bool,
    pub id: String,
}

/// Supervision of a foreground run (`run`, `sandbox`); see docs/supervising.md.
#[derive(Debug, Args, Default)]
pub struct GuardFlags {
    /// Kill the container when it has run this long (10s, 500ms, 2m).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Kill the container when the workload's RSS exceeds SIZE (512M, 1G),
    /// polled every 10 ms.
    #[arg(long, value_name = "SIZE")]
    pub rss_limit: Option<String>,
    /// Write JSON lines to this inherited descriptor: the workload's PID
    /// once started, then the outcome.
    #[arg(long, value_name = "FD")]
    pub status_fd: Option<i32>,
    /// Write the outcome as JSON to FILE when the run ends.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// After the run, print what seccomp and Landlock denied, one line
    /// each, from the kernel's audit records (needs root).
    #[arg(long)]
    pub report_denials: bool,
}

#[derive(Debug, Args)]
pub struct Run {
    #[command(flatten)]
    pub flags: CreateFlags,
    #[command(flatten)]
    pub guard: GuardFlags,
    /// Start the container and return without waiting for it.
    #[arg(short, long)]
    pub detach: bool,
    /// Keep the container's state after it exits.
    #[arg(long)]
    pub keep: bool,
    pub id: String,
}

#[derive(Debug, Args)]
pub struct Kill {
    /// Signal every process of the container, not only init.
    #[arg(short, long)]
    pub all: bool,
    pub id: String,
    /// Signal name (KILL, SIGKILL) or number; default SIGTERM.
    pub signal: Option<String>,
}

#[derive(Debug, Args)]
pub struct Delete {
    /// Kill the container first if it is still running.
    #[arg(short, long)]
    pub force: bool,
    pub id: String,
}

#[derive(Debug, Args)]
pub struct List {
    #[arg(short, long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    /// Print only container ids.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct Ps {
    #[arg(short, long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    pub id: String,
    /// Options passed to ps(1) for the table format (default -ef).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub ps_args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct Exec {
    /// JSON file with a runtime-spec process to run.
    #[arg(short, long, value_name = "FILE")]
    pub process: Option<PathBuf>,
    /// Return once the process is started.
    #[arg(short, long)]
    pub detach: bool,
    #[arg(long, value_name = "FILE")]
    pub pid_file: Option<PathBuf>,
    /// Allocate a pty, relayed by runsbx in the foreground (with
    /// --console-socket when detached).
    #[arg(short, long)]
    pub tty: bool,
    #[arg(long, value_name = "SOCKET")]
    pub console_socket: Option<PathBuf>,
    /// Set an environment variable (KEY=VALUE); repeatable.
    #[arg(short, long, value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Working directory inside the container.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// UID[:GID] to run as.
    #[arg(short, long, value_name = "UID[:GID]")]
    pub user: Option<String>,
    /// Additional group ids; repeatable.
    #[arg(short = 'g', long, value_name = "GID")]
    pub additional_gids: Vec<u32>,
    /// Add a capability (CAP_...); repeatable.
    #[arg(short, long, value_name = "CAP")]
    pub cap: Vec<String>,
    /// Set no_new_privs for the process.
    #[arg(long)]
    pub no_new_privs: bool,
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub preserve_fds: i32,
    /// Accepted for runc compatibility; SELinux labels are not supported.
    #[arg(long, value_name = "LABEL", hide = true)]
    pub process_label: Option<String>,
    /// Accepted for runc compatibility; AppArmor is not supported.
    #[arg(long, value_name = "PROFILE", hide = true)]
    pub apparmor: Option<String>,
    /// Send a pidfd of the new process to this unix socket.
    #[arg(long, value_name = "SOCKET")]
    pub pidfd_socket: Option<PathBuf>,
    /// Allow exec into a paused container (the process is frozen until resume).
    #[arg(long)]
    pub ignore_paused: bool,
    /// Run the process in an existing sub-cgroup of the container's cgroup:
    /// PATH, or CONTROLLER[,CONTROLLER]:PATH (repeatable).
    #[arg(long, value_name = "[CONTROLLER:]PATH")]
    pub cgroup: Vec<String>,
    pub id: String,
    /// Command and arguments (when no --process is given).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// The flags that `update` reads from `--resources` instead.
const UPDATE_FLAGS: [&str; 18] = [
    "blkio_weight",
    "cpu_period",
    "cpu_quota",
    "cpu_burst",
    "cpu_idle",
    "cpu_share",
    "cpu_rt_period",
    "cpu_rt_runtime",
    "cpuset_cpus",
    "cpuset_mems",
    "kernel_memory",
    "kernel_memory_tcp",
    "memory",
    "memory_reservation",
    "memory_swap",
    "pids_limit",
    "l3_cache_schema",
    "mem_bw_schema",
];

#[derive(Debug, Args)]
pub struct Update {
    /// A runtime-spec linux.resources JSON file to apply, or - for stdin
    /// (what containerd sends); not combined with the flags below.
    #[arg(short, long, value_name = "FILE", conflicts_with_all = UPDATE_FLAGS)]
    pub resources: Option<PathBuf>,
    /// Block I/O weight, 10 to 1000.
    #[arg(long, value_name = "N")]
    pub blkio_weight: Option<u16>,
    /// CPU CFS period, in microseconds.
    #[arg(long, value_name = "USEC")]
    pub cpu_period: Option<u64>,
    /// CPU CFS quota per period, in microseconds (-1: none).
    #[arg(long, value_name = "USEC", allow_negative_numbers = true)]
    pub cpu_quota: Option<i64>,
    /// CPU CFS burst per period, in microseconds.
    #[arg(long, value_name = "USEC")]
    pub cpu_burst: Option<u64>,
    /// The cgroup's SCHED_IDLE: 1 on, 0 off.
    #[arg(long, value_name = "0|1", allow_negative_numbers = true)]
    pub cpu_idle: Option<i64>,
    /// CPU shares (relative weight).
    #[arg(long, alias = "cpu-shares", value_name = "N")]
    pub cpu_share: Option<u64>,
    /// CPU realtime period, in microseconds.
    #[arg(long, value_name = "USEC")]
    pub cpu_rt_period: Option<u64>,
    /// CPU realtime runtime per period, in microseconds.
    #[arg(long, value_name = "USEC", allow_negative_numbers = true)]
    pub cpu_rt_runtime: Option<i64>,
    /// CPUs the container may run on (0-3, 0,2).
    #[arg(long, value_name = "CPUS")]
    pub cpuset_cpus: Option<String>,
    /// Memory nodes the container may use.
    #[arg(long, value_name = "MEMS")]
    pub cpuset_mems: Option<String>,
    /// Kernel memory limit (cgroup v1; obsolete in the kernel).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub kernel_memory: Option<String>,
    /// Kernel TCP buffer memory limit (cgroup v1).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub kernel_memory_tcp: Option<String>,
    /// Memory limit (100M, 1G, 1.5g; -1: none).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub memory: Option<String>,
    /// Memory soft limit.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub memory_reservation: Option<String>,
    /// Memory plus swap limit (-1: unlimited swap).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub memory_swap: Option<String>,
    /// Maximum number of processes and threads (-1: none).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub pids_limit: Option<i64>,
    /// Intel RDT L3 cache schema: refused, Intel RDT is not supported.
    #[arg(long, value_name = "SCHEMA")]
    pub l3_cache_schema: Option<String>,
    /// Intel RDT memory bandwidth schema: refused, as --l3-cache-schema.
    #[arg(long, value_name = "SCHEMA")]
    pub mem_bw_schema: Option<String>,
    pub id: String,
}

#[derive(Debug, Args)]
pub struct Events {
    /// Print one stats event and exit.
    #[arg(long)]
    pub stats: bool,
    /// Time between stats events (5s, 500ms, 1m).
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub interval: String,
    pub id: String,
}

/// The CRIU flags runc's `checkpoint` and `restore` share. All of them are
/// accepted, hidden, so that podman's and conmon's argv parses and the
/// refusal, not a usage error, is what they see (commands/checkpoint.rs).
#[derive(Debug, Args)]
pub struct CriuFlags {
    #[arg(long, hide = true)]
    pub image_path: Option<PathBuf>,
    #[arg(long, hide = true)]
    pub work_path: Option<PathBuf>,
    #[arg(long, hide = true)]
    pub tcp_established: bool,
    #[arg(long, hide = true)]
    pub ext_unix_sk: bool,
    #[arg(long, hide = true)]
    pub shell_job: bool,
    #[arg(long, hide = true)]
    pub file_locks: bool,
    #[arg(long, hide = true)]
    pub manage_cgroups_mode: Option<String>,
    #[arg(long, hide = true)]
    pub empty_ns: Vec<String>,
    #[arg(long, hide = true)]
    pub auto_dedup: bool,
    #[arg(long, hide = true)]
    pub lazy_pages: bool,
}

#[derive(Debug, Args)]
pub struct Checkpoint {
    #[command(flatten)]
    pub criu: CriuFlags,
    #[arg(long, hide = true)]
    pub parent_path: Option<PathBuf>,
    #[arg(long, hide = true)]
    pub leave_running: bool,
    #[arg(long, hide = true, allow_negative_numbers = true)]
    pub status_fd: Option<i32>,
    #[arg(long, hide = true)]
    pub page_server: Option<String>,
    #[arg(long, hide = true)]
    pub pre_dump: bool,
    pub id: String,
}

#[derive(Debug, Args)]
pub struct Restore {
    #[command(flatten)]
    pub criu: CriuFlags,
    #[arg(long, hide = true)]
    pub console_socket: Option<PathBuf>,
    #[arg(short, long, hide = true)]
    pub bundle: Option<PathBuf>,
    #[arg(short, long, hide = true)]
    pub detach: bool,
    #[arg(long, hide = true)]
    pub pid_file: Option<PathBuf>,
    #[arg(long, hide = true)]
    pub no_subreaper: bool,
    #[arg(long, hide = true)]
    pub no_pivot: bool,
    #[arg(long, hide = true)]
    pub lsm_profile: Option<String>,
    #[arg(long, hide = true)]
    pub lsm_mount_context: Option<String>,
    pub id: String,
}

#[derive(Debug, Args)]
pub struct SpecCmd {
    /// Where to write config.json.
    #[arg(short, long, default_value = ".", value_name = "DIR")]
    pub bundle: PathBuf,
    /// Write a spec for a rootless container of the invoking user.
    #[arg(long)]
    pub rootless: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Profile {
    Default,
    Jupyter,
    /// `serve --fork-server`'s fork server (runsbx_policy::profile::fork_server_seccomp).
    #[value(hide = true)]
    ForkServer,
}

/// What a generated sandbox holds besides CMD (`sandbox`, `gen`, and each
/// session of `serve`).
#[derive(Debug, Args)]
pub struct InsideFlags {
    /// Also bind PATH read-only (and readable under Landlock); repeatable.
    #[arg(long, value_name = "PATH")]
    pub ro: Vec<PathBuf>,
    /// Set an environment variable inside (KEY=VALUE); repeatable.
    #[arg(short, long, value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Set a resource limit, NAME=SOFT[:HARD] (e.g. NOFILE=256, AS=1G);
    /// repeatable. Defaults: NOFILE=1024, CORE=0.
    #[arg(long, value_name = "NAME=SOFT[:HARD]")]
    pub rlimit: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SandboxFlags {
    /// The one read-write directory (absolute; default: a fresh private
    /// directory, removed afterwards). Also HOME, TMPDIR and the cwd.
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    #[command(flatten)]
    pub inside: InsideFlags,
    /// The policy: `default`, or `jupyter` (unix stream sockets in the
    /// workdir, for a Jupyter kernel; see docs/sandbox.md).
    #[arg(long, value_enum, default_value_t = Profile::Default, value_name = "NAME")]
    pub profile: Profile,
    /// Give the sandbox an HTTP proxy run by runsbx (HTTP_PROXY and its kin
    /// set inside) that connects only to HOST[:PORT] (`*.SUFFIX` for its
    /// subdomains, an IP address, `[IPV6]`; ports 80 and 443 when none);
    /// repeatable. See docs/sandbox.md, "Network".
    #[arg(long, value_name = "HOST[:PORT]")]
    pub allow_net: Vec<String>,
    /// Let the proxy connect to addresses in CIDR (`127.0.0.0/8`, `fd00::/8`)
    /// although they are not public; repeatable. Needs --allow-net.
    #[arg(long, value_name = "CIDR")]
    pub allow_net_range: Vec<String>,
    /// The command and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct Sandbox {
    #[command(flatten)]
    pub flags: SandboxFlags,
    #[command(flatten)]
    pub guard: GuardFlags,
    /// Serve a Jupyter kernel for this connection file (a kernelspec's
    /// `{connection_file}`): implies `--profile jupyter`, relays the file's
    /// endpoints to the kernel's sockets in the workdir and appends the
    /// kernel's own `-f FILE` to CMD.
    #[arg(long, value_name = "FILE")]
    pub jupyter: Option<PathBuf>,
    /// Memory limit of the container's cgroup (the kernel OOM-kills above it).
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// Limit on the number of processes/threads in the container's cgroup.
    #[arg(long, value_name = "N")]
    pub pids_limit: Option<i64>,
    /// Before running CMD, run `selftest` (the escape probe under the same
    /// policy) and refuse to go on unless every escape is blocked.
    #[arg(long)]
    pub self_test: bool,
    /// Skip the check, after start, that the workload runs with no_new_privs,
    /// seccomp, no capabilities, not as host root, in its own namespaces,
    /// with only stdio open.
    #[arg(long)]
    pub no_posture_check: bool,
    /// Write the workload's host PID here once it is known.
    #[arg(long, value_name = "FILE")]
    pub pid_file: Option<PathBuf>,
    /// Container id (default: sandbox-<runsbx's pid>).
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// The isolation: `auto` (the default: namespaces where the host allows
    /// them, else `landlock` if the kernel can give it, announced on
    /// stderr, else refused), `namespaces` (the container; refused with the
    /// cause where unavailable) or `landlock` (no namespaces: Landlock,
    /// seccomp and no_new_privs; see docs/where.md).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = Isolation::Auto)]
    pub isolation: Isolation,
    /// Alias of `--isolation landlock`.
    #[arg(long, conflicts_with_all = ["memory", "pids_limit", "self_test", "id", "report_denials", "isolation"])]
    pub no_userns: bool,
}

#[derive(Debug, Args)]
pub struct Serve {
    /// The unix stream socket to listen on (made mode 0600, removed when
    /// the server ends; must not exist).
    #[arg(long, value_name = "PATH")]
    pub listen: PathBuf,
    /// Python code each session runs before it is handed out (e.g.
    /// `import numpy, pandas`); a session whose preload fails is not used.
    #[arg(long, value_name = "CODE")]
    pub preload: Option<String>,
    /// Sessions kept started and preloaded, ready for the next clients.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub warm: usize,
    /// Most sessions handed out at once, clients waiting for one counted;
    /// a client beyond them gets one `refused` line.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_sessions: usize,
    /// End a session this long after it is handed out (10s, 2m).
    #[arg(long, value_name = "DURATION")]
    pub session_timeout: Option<String>,
    #[command(flatten)]
    pub session: SessionFlags,
}

/// How each REPL session of `serve` and `mcp` is sandboxed.
#[derive(Debug, Args)]
pub struct SessionFlags {
    /// Fork each session from one sandboxed interpreter that ran the
    /// preload once, instead of starting a sandbox per session (see
    /// docs/sandbox.md, "Warm sessions", for what sessions then share).
    #[arg(long)]
    pub fork_server: bool,
    /// End a session whose interpreter's RSS exceeds SIZE (512M, 1G).
    #[arg(long, value_name = "SIZE")]
    pub rss_limit: Option<String>,
    /// As `sandbox`'s, for every session.
    #[command(flatten)]
    pub inside: InsideFlags,
    /// Memory limit of each session's cgroup.
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// Limit on the processes/threads in each session's cgroup.
    #[arg(long, value_name = "N")]
    pub pids_limit: Option<i64>,
    /// Each session's isolation, as `sandbox --isolation`.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = Isolation::Auto)]
    pub isolation: Isolation,
    /// The interpreter and its arguments; runsbx appends `-I` and the REPL
    /// driver.
    #[arg(required = true, last = true, value_name = "PYTHON")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct Mcp {
    /// Python code the session runs when it starts (e.g. `import numpy,
    /// pandas`).
    #[arg(long, value_name = "CODE")]
    pub preload: Option<String>,
    /// End a call, and its session, that runs longer than this (10s, 2m).
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub call_timeout: String,
    #[command(flatten)]
    pub session: SessionFlags,
}

/// `--isolation` (see runsbx_runtime::isolation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Isolation {
    Auto,
    Namespaces,
    Landlock,
}

#[derive(Debug, Args)]
pub struct Gen {
    #[command(flatten)]
    pub flags: SandboxFlags,
    /// Bundle directory to write (must not exist or be empty).
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// Then print the bundle's effective policy, as `runsbx check` does
    /// (FORMAT: text, the default, or json).
    #[arg(long, value_enum, value_name = "FORMAT", num_args = 0..=1,
          default_missing_value = "text", require_equals = true)]
    pub explain: Option<LogFormat>,
}

#[derive(Debug, Args)]
pub struct Selftest {
    /// The static runsbx-probe binary (default: next to runsbx, then PATH).
    #[arg(long, value_name = "FILE")]
    pub probe: Option<PathBuf>,
    /// Test this bundle's policy instead of the default sandbox's: the probe
    /// is bound into a copy of its config and run as its process.
    #[arg(long, value_name = "DIR")]
    pub bundle: Option<PathBuf>,
    /// The isolation to test, as `sandbox --isolation` chooses it (default:
    /// auto, what `sandbox` would get here).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = Isolation::Auto)]
    pub isolation: Isolation,
    /// Alias of `--isolation landlock`.
    #[arg(long, conflicts_with_all = ["bundle", "isolation"])]
    pub no_userns: bool,
    /// Test this `--profile` of the generated sandbox (see `sandbox`).
    #[arg(long, value_enum, default_value_t = Profile::Default, value_name = "NAME",
          conflicts_with_all = ["bundle", "no_userns"])]
    pub profile: Profile,
    /// Test the sandbox as `sandbox --allow-net` makes it: its proxy's port
    /// must be reachable, and nothing else (other ports, UDP, DNS, raw,
    /// IPv6, MPTCP sockets, TCP bind).
    #[arg(long, conflicts_with_all = ["bundle", "no_userns", "profile"])]
    pub allow_net: bool,
}

#[derive(Debug, Args)]
pub struct Kernelspec {
    /// The kernel's display name, as clients list it.
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// The kernel's Python; it must import ipykernel (looked up on PATH
    /// unless it has a slash).
    #[arg(long, value_name = "PY", default_value = "python3")]
    pub python: PathBuf,
    /// The kernelspec directory to write kernel.json into; its last
    /// component is the kernel's name for `jupyter kernelspec install`.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// `sandbox` flags for every start of the kernel (`--ro`, `--timeout`,
    /// `--rss-limit`, `--memory`, `--root` ...), after `--`.
    #[arg(last = true, value_name = "SANDBOX-FLAGS")]
    pub sandbox_flags: Vec<String>,
}

#[derive(Debug, Args)]
pub struct Check {
    /// Output: text (the policy in words) or json.
    #[arg(short, long, value_enum, default_value_t = LogFormat::Text)]
    pub format: LogFormat,
    /// Bundle directory (holding config.json).
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,
}
