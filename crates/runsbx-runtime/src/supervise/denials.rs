use crate::denials::{DenialReport, Running, Watch};
use crate::{CreateOptions, Runtime};

/// `--report-denials` over one foreground run.
pub(super) enum Denials {
    Off,
    /// Nothing can be reported on this host; the note says why.
    Unavailable(String),
    Ready(Watch),
    Running(Running),
}

impl Denials {
    /// Subscribes to the audit log before the container exists, and has
    /// its layers log what they refuse.
    pub(super) fn prepare(rt: &Runtime, opts: &mut CreateOptions, wanted: bool) -> Self {
        if !wanted {
            return Self::Off;
        }
        opts.log_denials = true;
        // Which layers there are, for the notes; a bundle that does not
        // validate is refused by create, with its own error.
        let (landlock, seccomp) = match crate::spec::validate(&opts.bundle, &rt.landlock_default) {
            Ok(v) => (!v.policy.landlock.is_empty(), v.seccomp),
            Err(_) => (true, None),
        };
        match Watch::open(landlock, seccomp) {
            Ok(w) => Self::Ready(w),
            Err(note) => Self::Unavailable(note.to_string()),
        }
    }

    /// Starts reading once init exists (`pid`), before it starts.
    pub(super) fn start(&mut self, pid: i32) {
        if let Self::Ready(_) = self {
            if let Self::Ready(w) = std::mem::replace(self, Self::Off) {
                *self = Self::Running(w.start(pid));
            }
        }
    }

    /// Prints the report, one line each, and returns it for `--report`.
    /// Nothing when no container was created.
    pub(super) fn finish(self, ro_hint: bool) -> Option<DenialReport> {
        let report = match self {
            Self::Off | Self::Ready(_) => return None,
            Self::Unavailable(note) => DenialReport {
                denials: Vec::new(),
                notes: vec![note],
            },
            Self::Running(r) => r.finish(),
        };
        for line in report.lines() {
            eprintln!("runsbx: {line}");
        }
        if ro_hint {
            // /proc and /dev are the sandbox's own, not host paths to bind,
            // and `--ro /` would bind the whole host.
            let host = |p: &String| {
                let p = std::path::Path::new(p);
                !p.starts_with("/proc") && !p.starts_with("/dev") && p != std::path::Path::new("/")
            };
            for path in report.unreadable_paths().into_iter().filter(host) {
                eprintln!("runsbx: {path} is not readable in the sandbox: --ro {path} adds it");
            }
        }
        Some(report)
    }
}
