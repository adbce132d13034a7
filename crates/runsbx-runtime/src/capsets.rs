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
//! Why the kept CAP_SETPCAP cannot reach the workload even if that drop
//! were skipped: it is added to neither the bounding, the inheritable nor
//! the ambient set, from which execve computes the new permitted set (as
//! for the CAP_SYS_ADMIN of nnp.rs). Between libcontainer's drop and
//! `validate` only libcontainer's own code runs in init (chdir, cwd check).

use serde_json::Value;

use crate::nnp::Kept;

const SETPCAP: &str = "CAP_SETPCAP";

/// What [`Plan::apply`] changes in a process's capabilities.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Keep CAP_SETPCAP through libcontainer's effective and permitted
    /// drop, for its inheritable capset.
    pub keep_setpcap: bool,
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
        let has_setpcap = effective.is_none_or(|e| e.contains(&SETPCAP));
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
            ambient_out,
        }
    }

    pub fn is_empty(&self) -> bool {
        !self.keep_setpcap && self.ambient_out.is_empty()
    }

    /// runc 1.2's warning for each ambient capability left out.
    pub fn warn(&self) {
        for cap in &self.ambient_out {
            tracing::warn!(
                "can't raise ambient capability {cap}: not in both the permitted and the \
                 inheritable set; left out"
            );
        }
    }

    /// `raw` (a config.json, or `{"process": ...}`) changed as planned;
    /// returns the sets CAP_SETPCAP was added to, for the Executor to drop
    /// it from.
    pub fn apply(&self, raw: &mut Value) -> Option<Kept> {
        if let Some(list) = raw
            .pointer_mut("/process/capabilities/ambient")
            .and_then(Value::as_array_mut)
        {
            list.retain(|c| {
                !c.as_str()
                    .is_some_and(|c| self.ambient_out.iter().any(|o| o == c))
            });
        }
        self.keep_setpcap.then(|| crate::nnp::keep(raw, SETPCAP))
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
                ambient_out: vec![]
            }
        );
        let mut raw = json!({ "process": process });
        let kept = plan.apply(&mut raw);
        assert_eq!(
            kept,
            Some(Kept {
                effective: true,
                permitted: true
            })
        );
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
        assert_eq!(plan.apply(&mut raw), None);
        assert_eq!(
            raw["process"]["capabilities"]["ambient"],
            json!(["CAP_KILL"])
        );
        // Without an inheritable set, no ambient capability can be raised.
        let bare = json!({ "capabilities": { "ambient": ["CAP_KILL"] } });
        assert_eq!(Plan::of(&bare).ambient_out, ["CAP_KILL"]);
    }
}
