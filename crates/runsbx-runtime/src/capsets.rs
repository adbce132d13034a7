//! Pure: a process's capability sets changed so that libcontainer 0.7
//! applies them as runc does.
//!
//! runc drops the bounding set, then sets effective, permitted and
//! inheritable in one capset(2), then raises each ambient capability,
//! warning about (and skipping) one it cannot raise. libcontainer sets
//! bounding, effective, permitted, inheritable and ambient one capset each,
//! and a failure fails the container. Two specs runc runs fail under it:
//! - an inheritable capability outside the permitted set (runc's suite:
//!   inheritable CAP_SYSLOG, permitted CAP_KILL and CAP_CHOWN). The kernel
//!   lets a process raise it only with CAP_SETPCAP in its effective set,
//!   which libcontainer has dropped by then (EPERM). runsbx shows
//!   libcontainer effective and permitted sets that keep CAP_SETPCAP
//!   ([`Plan::apply`]), and the Executor drops it again first thing in
//!   `validate`, before init reports ready ([`crate::nnp::Kept`]).
//! - an ambient capability not in both the permitted and the inheritable
//!   set: left out, with runc 1.2's warning (runc 1.1 skipped it silently).
//!
//! And one runc does that libcontainer does not: before it changes to a
//! non-root uid, runc gives the process's stdio to that uid (its
//! `fixStdioPermissions`), so a pty made for the container belongs to the
//! user in it. runsbx does it in `validate` ([`fix_stdio_owner`]), after
//! libcontainer's drop, so init keeps CAP_CHOWN for it where the spec does
//! not give it, and drops it right after. Only for a `process.terminal`
//! process, whose stdio is the pty made for it: runc also gives away the
//! caller's own pipes or terminal passed in, which would hand a host file
//! of the caller's to the container's uid (another host user's, without a
//! user namespace); runsbx leaves those alone.
//!
//! Why a kept capability cannot reach the workload even if that drop were
//! skipped: it is added to neither the bounding, the inheritable nor the
//! ambient set, from which execve computes the new permitted set (as
//! for the CAP_SYS_ADMIN of nnp.rs). Between libcontainer's drop and
//! `validate` only libcontainer's own code runs in init (chdir, cwd check).

use serde_json::Value;

use crate::nnp::Kept;

const SETPCAP: &str = "CAP_SETPCAP";
const CHOWN: &str = "CAP_CHOWN";

/// Where [`Plan::apply`] added each kept capability, for the Executor to
/// take it back from ([`Applied::give_back`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    pub setpcap: Option<Kept>,
    pub chown: Option<Kept>,
}

impl Applied {
    pub fn give_back(self) -> Result<(), String> {
        for (kept, cap, what) in [
            (
                self.chown,
                caps::Capability::CAP_CHOWN,
                "to give stdio to the process's uid",
            ),
            (
                self.setpcap,
                caps::Capability::CAP_SETPCAP,
                "to set the inheritable set",
            ),
        ] {
            if let Some(kept) = kept {
                kept.give_back_cap(cap)
                    .map_err(|e| format!("capabilities: dropping the {cap} kept {what}: {e}"))?;
            }
        }
        Ok(())
    }
}

/// runc's `fixStdioPermissions`: each of fds 0-2 not owned by `uid` (and
/// not /dev/null) given to it, its group kept; a refusal (EINVAL: a group
/// not mapped; EPERM: an owner not mapped; EROFS) leaves it, as runc does.
/// Nothing for uid 0.
pub fn fix_stdio_owner(uid: u32) -> Result<(), String> {
    use nix::errno::Errno;
    use nix::sys::stat::{fstat, major, minor, SFlag};
    if uid == 0 {
        return Ok(());
    }
    for fd in 0..=2 {
        let st = fstat(fd).map_err(|e| format!("stdio: fstat fd {fd}: {e}"))?;
        let chr = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFCHR;
        let dev_null = chr && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3;
        if st.st_uid == uid || dev_null {
            continue;
        }
        match nix::unistd::fchown(fd, Some(nix::unistd::Uid::from_raw(uid)), None) {
            Ok(()) | Err(Errno::EINVAL | Errno::EPERM | Errno::EROFS) => {}
            Err(e) => return Err(format!("stdio: fchown fd {fd} to uid {uid}: {e}")),
        }
    }
    Ok(())
}

/// What [`Plan::apply`] changes in a process's capabilities.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Keep CAP_SETPCAP through libcontainer's effective and permitted
    /// drop, for its inheritable capset.
    pub keep_setpcap: bool,
    /// Keep CAP_CHOWN likewise, for [`fix_stdio_owner`]: a terminal
    /// process of a non-root uid whose effective set lacks it.
    pub keep_chown: bool,
    /// Ambient capabilities neither runc nor libcontainer can raise: left
    /// out of the ambient set.
    pub ambient_out: Vec<String>,
}

impl Plan {
    /// The plan for `process` (a runtime-spec process object).
    pub fn of(process: &Value) -> Self {
        let caps = &process["capabilities"];
        let set = |name: &str| -> Option<Vec<&str>> {
            caps.get(name)?
                .as_array()
                .map(|l| l.iter().filter_map(Value::as_str).collect())
        };
        let (permitted, inheritable) = (set("permitted"), set("inheritable"));
        // An unlisted permitted set is left as init has it: all of root's.
        let in_permitted = |c: &str| permitted.as_ref().is_none_or(|p| p.contains(&c));
        // Unlisted effective: libcontainer makes it the permitted set.
        let effective = set("effective").or_else(|| permitted.clone());
        let has_setpcap = effective.as_ref().is_none_or(|e| e.contains(&SETPCAP));
        let has_chown = effective.as_ref().is_none_or(|e| e.contains(&CHOWN));
        let uid = process["user"]["uid"].as_u64().unwrap_or(0);
        let terminal = process["terminal"] == true;
        let outside = inheritable.iter().flatten().any(|c| !in_permitted(c));
        // An unlisted inheritable set: runc applies an empty one; init's
        // (libcontainer leaves it) is empty under a root caller too.
        let ambient_out = set("ambient")
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !(in_permitted(c) && inheritable.as_ref().is_some_and(|i| i.contains(c))))
            .map(str::to_string)
            .collect();
        Self {
            keep_setpcap: outside && !has_setpcap,
            keep_chown: terminal && uid != 0 && !has_chown,
            ambient_out,
        }
    }

    pub fn is_empty(&self) -> bool {
        !self.keep_setpcap && !self.keep_chown && self.ambient_out.is_empty()
    }

    /// Each ambient capability left out, at debug level: silent as runc 1.1
    /// (and Debian's runc) is. runc 1.2 warns, but `runsbx spec` writes
    /// runc 1.1's default, which lists three ambient capabilities and no
    /// inheritable set: a warning would open every run of it, and the
    /// tools that read a container's first line of output (runc's own
    /// suite among them) would read the warning.
    pub fn warn(&self) {
        for cap in &self.ambient_out {
            tracing::debug!(
                "can't raise ambient capability {cap}: not in both the permitted and the \
                 inheritable set; left out"
            );
        }
    }

    /// `raw` (a config.json, or `{"process": ...}`) changed as planned;
    /// returns the sets each kept capability was added to, for the
    /// Executor to drop it from.
    pub fn apply(&self, raw: &mut Value) -> Applied {
        if let Some(list) = raw
            .pointer_mut("/process/capabilities/ambient")
            .and_then(Value::as_array_mut)
        {
            list.retain(|c| {
                !c.as_str()
                    .is_some_and(|c| self.ambient_out.iter().any(|o| o == c))
            });
        }
        Applied {
            setpcap: self.keep_setpcap.then(|| crate::nnp::keep(raw, SETPCAP)),
            chown: self.keep_chown.then(|| crate::nnp::keep(raw, CHOWN)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// runc's "exec --cap [ambient is set from spec]".
    fn runcs_suite() -> Value {
        json!({ "capabilities": {
            "inheritable": ["CAP_CHOWN", "CAP_SYSLOG"],
            "permitted": ["CAP_KILL", "CAP_CHOWN"],
            "effective": ["CAP_KILL"],
            "bounding": ["CAP_KILL", "CAP_CHOWN", "CAP_SYSLOG"],
            "ambient": ["CAP_CHOWN"]
        }})
    }

    #[test]
    fn an_inheritable_capability_outside_permitted_keeps_setpcap() {
        let process = runcs_suite();
        let plan = Plan::of(&process);
        assert_eq!(
            plan,
            Plan {
                keep_setpcap: true,
                ..Plan::default()
            }
        );
        let mut raw = json!({ "process": process });
        let kept = plan.apply(&mut raw);
        assert_eq!(
            kept.setpcap,
            Some(Kept {
                effective: true,
                permitted: true
            })
        );
        assert_eq!(kept.chown, None);
        let caps = &raw["process"]["capabilities"];
        assert_eq!(caps["effective"], json!(["CAP_KILL", "CAP_SETPCAP"]));
        assert_eq!(
            caps["permitted"],
            json!(["CAP_KILL", "CAP_CHOWN", "CAP_SETPCAP"])
        );
        // Stops: the kept capability surviving execve through a set that
        // feeds the new permitted set.
        for set in ["bounding", "inheritable", "ambient"] {
            assert_eq!(caps[set], process["capabilities"][set], "{set}");
        }
    }

    #[test]
    fn nothing_changes_where_libcontainer_applies_it_as_runc() {
        for process in [
            json!({}),
            json!({ "capabilities": {} }),
            // Inheritable within permitted.
            json!({ "capabilities": {
                "permitted": ["CAP_KILL", "CAP_CHOWN"], "inheritable": ["CAP_CHOWN"],
                "ambient": ["CAP_CHOWN"] } }),
            // CAP_SETPCAP effective already, listed or as all of permitted.
            json!({ "capabilities": {
                "permitted": ["CAP_SETPCAP"], "effective": ["CAP_SETPCAP"],
                "inheritable": ["CAP_KILL"] } }),
            json!({ "capabilities": { "permitted": ["CAP_SETPCAP"], "inheritable": ["CAP_KILL"] } }),
            // No permitted set listed: init's, which holds them all.
            json!({ "capabilities": { "inheritable": ["CAP_KILL"], "ambient": ["CAP_KILL"] } }),
        ] {
            assert!(Plan::of(&process).is_empty(), "{process}");
        }
    }

    #[test]
    fn an_ambient_capability_runc_cannot_raise_is_left_out() {
        // runc's "ambient caps not set in inheritable result in a warning".
        let process = json!({ "capabilities": {
            "permitted": ["CAP_KILL", "CAP_CHOWN"],
            "inheritable": ["CAP_KILL"],
            "ambient": ["CAP_KILL", "CAP_CHOWN", "CAP_SYSLOG"]
        }});
        let plan = Plan::of(&process);
        assert_eq!(plan.ambient_out, ["CAP_CHOWN", "CAP_SYSLOG"]);
        assert!(!plan.keep_setpcap);
        let mut raw = json!({ "process": process });
        assert_eq!(plan.apply(&mut raw), Applied::default());
        assert_eq!(
            raw["process"]["capabilities"]["ambient"],
            json!(["CAP_KILL"])
        );
        // Without an inheritable set, no ambient capability can be raised.
        let bare = json!({ "capabilities": { "ambient": ["CAP_KILL"] } });
        assert_eq!(Plan::of(&bare).ambient_out, ["CAP_KILL"]);
    }

    /// runc's "[tty owner] ({u,g}id != 0)": a non-root process without
    /// CAP_CHOWN keeps it until its stdio is its own.
    #[test]
    fn a_non_root_process_keeps_chown_until_its_stdio_is_given_to_it() {
        let user = |uid: u32, effective: Value| {
            json!({ "terminal": true, "user": { "uid": uid, "gid": 100 },
                    "capabilities": { "effective": effective, "permitted": ["CAP_KILL"] } })
        };
        assert!(Plan::of(&user(1000, json!(["CAP_KILL"]))).keep_chown);
        assert!(!Plan::of(&user(0, json!(["CAP_KILL"]))).keep_chown);
        assert!(!Plan::of(&user(1000, json!(["CAP_CHOWN"]))).keep_chown);
        let mut raw = json!({ "process": user(1000, json!([])) });
        let kept = Plan::of(&raw["process"]).apply(&mut raw);
        assert_eq!(
            kept.chown,
            Some(Kept {
                effective: true,
                permitted: true
            })
        );
        assert_eq!(
            raw["process"]["capabilities"]["effective"],
            json!(["CAP_CHOWN"])
        );
        // No capabilities listed: libcontainer leaves init's, CAP_CHOWN among them.
        let bare = json!({ "terminal": true, "user": { "uid": 1000, "gid": 1 } });
        assert!(!Plan::of(&bare).keep_chown);
        // No terminal: stdio is the caller's, left alone.
        let mut piped = user(1000, json!([]));
        piped["terminal"] = false.into();
        assert!(!Plan::of(&piped).keep_chown);
    }
}
