//! `process.noNewPrivileges: false` with a seccomp profile, as runc does it.
//!
//! seccomp(2) without no_new_privs needs CAP_SYS_ADMIN in the caller's user
//! namespace. runc loads the filter while init still holds it; libcontainer
//! 0.7 runs runsbx's Executor only after its capability drop. So runsbx shows
//! libcontainer a config whose effective and permitted sets keep
//! CAP_SYS_ADMIN ([`keep_admin`]), and the Executor, once the filter is
//! loaded, drops it again from the sets it was added to ([`Kept::give_back`])
//! before execve.
//!
//! Why the kept capability cannot reach the workload even if that drop were
//! skipped: execve computes the new permitted set from the inheritable,
//! bounding and ambient sets (and the file's capabilities), never from the old
//! permitted one, and runsbx adds CAP_SYS_ADMIN to neither of those. Between
//! the capability drop and execve only libcontainer's and runsbx's own code
//! runs in init (plus startContainer hooks, which runsbx runs after giving
//! it back, and which are exec'd and so get the same recomputed sets as the
//! workload anyway).
//!
//! no_new_privs stays forced wherever runsbx itself adds a layer that needs
//! it: any Landlock policy (the bundle's or the operator default) and
//! `runsbx sandbox`'s bundles, which ask for it. `exec` applies the same rule
//! to the process it adds (its process file gets the same treatment).

use libcontainer::oci_spec::runtime::Spec;
use serde_json::Value;

const ADMIN: &str = "CAP_SYS_ADMIN";

/// Whether a container's process (init, or one `exec` adds) must load its
/// seccomp filter without no_new_privs: a filter to load, no Landlock layer
/// (which needs no_new_privs anyway), and a process that does not `ask` for
/// no_new_privs.
pub fn seccomp_without_nnp(asked: bool, has_seccomp: bool, has_landlock: bool) -> bool {
    has_seccomp && !has_landlock && !asked
}

/// Whether `spec`'s process asks for no_new_privs (absent: no).
pub fn asks(spec: &Spec) -> bool {
    spec.process()
        .as_ref()
        .and_then(|p| p.no_new_privileges())
        .unwrap_or(false)
}

/// The capability sets runsbx added a capability to (CAP_SYS_ADMIN here,
/// CAP_SETPCAP in capsets.rs), for the Executor to take it back from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Kept {
    pub effective: bool,
    pub permitted: bool,
}

/// `raw` (a config.json) with CAP_SYS_ADMIN added to
/// `process.capabilities.effective` and `.permitted` where they are listed
/// without it (see [`keep`]).
pub fn keep_admin(raw: &mut Value) -> Kept {
    keep(raw, ADMIN)
}

/// `raw` (a config.json) with `cap` added to `process.capabilities.effective`
/// and `.permitted` where they are listed without it. A set that is not
/// listed is left as libcontainer leaves it (effective: all of permitted;
/// permitted: unchanged), which holds every capability of init already; so
/// does a process without `capabilities`.
pub fn keep(raw: &mut Value, cap: &str) -> Kept {
    let Some(caps) = raw
        .get_mut("process")
        .and_then(|p| p.get_mut("capabilities"))
        .and_then(Value::as_object_mut)
    else {
        return Kept::default();
    };
    let mut add = |set: &str| match caps.get_mut(set).and_then(Value::as_array_mut) {
        Some(list) if !list.iter().any(|c| c.as_str() == Some(cap)) => {
            list.push(Value::String(cap.into()));
            true
        }
        _ => false,
    };
    Kept {
        effective: add("effective"),
        permitted: add("permitted"),
    }
}

impl Kept {
    /// In init, after the filter is loaded: CAP_SYS_ADMIN out of the sets
    /// runsbx put it in. The loaded profile must allow capset, as runc's
    /// order requires too (it sets uids and capabilities after loading).
    pub fn give_back(self) -> Result<(), caps::errors::CapsError> {
        self.give_back_cap(caps::Capability::CAP_SYS_ADMIN)
    }

    /// `cap` out of the sets runsbx put it in. Effective first: it must
    /// stay a subset of permitted.
    pub fn give_back_cap(self, cap: caps::Capability) -> Result<(), caps::errors::CapsError> {
        if self.effective {
            caps::drop(None, caps::CapSet::Effective, cap)?;
        }
        if self.permitted {
            caps::drop(None, caps::CapSet::Permitted, cap)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(process: Value) -> Spec {
        serde_json::from_value(json!({"ociVersion": "1.0.2", "process": process})).unwrap()
    }

    #[test]
    fn only_a_filter_without_landlock_or_nnp_loads_without_it() {
        let user = json!({"uid": 0, "gid": 0});
        let plain = asks(&spec(json!({"cwd": "/", "user": user})));
        let off = asks(&spec(
            json!({"cwd": "/", "user": user, "noNewPrivileges": false}),
        ));
        let on = asks(&spec(
            json!({"cwd": "/", "user": user, "noNewPrivileges": true}),
        ));
        assert!(seccomp_without_nnp(plain, true, false));
        assert!(seccomp_without_nnp(off, true, false));
        assert!(!seccomp_without_nnp(on, true, false));
        assert!(!seccomp_without_nnp(off, false, false));
        assert!(!seccomp_without_nnp(off, true, true));
    }

    #[test]
    fn admin_is_added_only_to_listed_sets_that_lack_it() {
        let mut raw = json!({"process": {"capabilities": {
            "bounding": ["CAP_KILL"],
            "effective": ["CAP_KILL"],
            "permitted": ["CAP_KILL", "CAP_SYS_ADMIN"],
        }}});
        let kept = keep_admin(&mut raw);
        assert_eq!(
            kept,
            Kept {
                effective: true,
                permitted: false
            }
        );
        let caps = &raw["process"]["capabilities"];
        assert_eq!(caps["effective"], json!(["CAP_KILL", "CAP_SYS_ADMIN"]));
        assert_eq!(caps["permitted"], json!(["CAP_KILL", "CAP_SYS_ADMIN"]));
        // Stops: the kept capability surviving execve through a set that
        // feeds the new permitted set.
        assert_eq!(caps["bounding"], json!(["CAP_KILL"]));
        assert!(caps.get("inheritable").is_none() && caps.get("ambient").is_none());
    }

    #[test]
    fn nothing_is_added_without_capabilities_or_listed_sets() {
        for mut raw in [
            json!({"process": {"args": ["true"]}}),
            json!({"process": {"capabilities": {"bounding": []}}}),
            json!({}),
        ] {
            let before = raw.clone();
            assert_eq!(keep_admin(&mut raw), Kept::default());
            assert_eq!(raw, before);
        }
        let mut empty = json!({"process": {"capabilities": {"effective": [], "permitted": []}}});
        assert_eq!(
            keep_admin(&mut empty),
            Kept {
                effective: true,
                permitted: true
            }
        );
    }
}
