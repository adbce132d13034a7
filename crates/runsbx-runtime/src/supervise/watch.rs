use std::time::{Duration, Instant};

use nix::unistd::Pid;

use crate::guard::{self, Limits, Reason};
use crate::monitor::{Finished, Monitor};

/// Waits for `pid`, forwarding signals and enforcing `limits` (calling
/// `kill` once one is exceeded). Returns how it ended, the limit that killed
/// it, and the peak RSS seen.
pub fn watch(
    monitor: &Monitor,
    pid: Pid,
    limits: Limits,
    started_at: Instant,
    kill: impl Fn(),
) -> crate::Result<(Finished, Option<Reason>, u64)> {
    let tick = match (limits.rss_limit, limits.timeout) {
        (Some(_), _) => Some(guard::RSS_POLL),
        (None, Some(t)) => Some(t.min(Duration::from_millis(100))),
        (None, None) => None,
    };
    let mut peak = 0u64;
    let mut killed_for = None;
    let done = monitor.wait(pid, tick, || {
        if let Some(limit) = limits.rss_limit {
            if let Some(rss) = guard::rss(pid.as_raw()) {
                peak = peak.max(rss);
                if rss > limit {
                    killed_for = Some(Reason::RssLimit);
                }
            }
        }
        if limits.timeout.is_some_and(|t| started_at.elapsed() >= t) {
            killed_for.get_or_insert(Reason::Timeout);
        }
        if killed_for.is_some() {
            kill();
            return true;
        }
        false
    })?;
    Ok((done, killed_for, peak))
}
