//! The sandbox's user database: `/etc/passwd` and `/etc/group` of one entry
//! each, for the workload's own user, written into the generated rootfs.
//!
//! Why: glibc's getpwuid and getgrgid find nothing without them, so Python's
//! `pwd.getpwuid(os.getuid())` raised KeyError, and with it
//! `getpass.getuser()` and `Path.home()` without HOME. With no
//! `/etc/nsswitch.conf` (none is bound), glibc looks users and groups up with
//! `compat [NOTFOUND=return] files`, and both read `/etc/passwd` and
//! `/etc/group`. The entries are made from the config alone (its user, its
//! HOME or cwd): nothing of the host's database is shown.
use oci_spec::runtime::Spec;

/// The files written, as container paths. Landlock grants reading them.
pub const USER_DB: &[&str] = &["/etc/passwd", "/etc/group"];

/// The name given to the workload's user and group: `root` for id 0 (which
/// the sandbox's workload is: container root, host nobody or the caller),
/// as every program expects of uid 0; `sandbox` otherwise.
fn name(id: u64) -> &'static str {
    if id == 0 {
        "root"
    } else {
        "sandbox"
    }
}

/// A field of a passwd line: no `:` or newline, which would split or add
/// entries.
fn field(text: &str) -> Option<&str> {
    (!text.is_empty() && !text.contains([':', '\n'])).then_some(text)
}

/// `(container path, contents)` of [`USER_DB`] for `config`: the process's
/// uid and gid, home its `HOME` (else its cwd, else `/`). Empty when the
/// config has no `process`.
pub fn user_db(spec: &Spec) -> Vec<(&'static str, String)> {
    let Some(process) = spec.process() else {
        return Vec::new();
    };
    let (uid, gid) = (process.user().uid() as u64, process.user().gid() as u64);
    let home_env = process
        .env()
        .iter()
        .flatten()
        .filter_map(|e| e.strip_prefix("HOME="))
        .next_back();
    let home = home_env
        .into_iter()
        .chain(process.cwd().to_str())
        .filter(|h| h.starts_with('/'))
        .find_map(field)
        .unwrap_or("/");
    let (user, group) = (name(uid), name(gid));
    vec![
        (
            USER_DB[0],
            format!("{user}:x:{uid}:{gid}:{user}:{home}:/usr/sbin/nologin\n"),
        ),
        (USER_DB[1], format!("{group}:x:{gid}:\n")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> Spec {
        let mut v = v;
        v["ociVersion"] = "1.0.2".into();
        serde_json::from_value(v).unwrap()
    }

    fn config(env: &[&str], cwd: &str) -> Spec {
        spec(json!({"process": {"user": {"uid": 0, "gid": 0}, "env": env, "cwd": cwd}}))
    }

    #[test]
    fn one_entry_for_the_workloads_user_with_its_home() {
        let db = user_db(&config(&["PATH=/usr/bin", "HOME=/tmp/w"], "/tmp/w"));
        assert_eq!(
            db,
            vec![
                (
                    "/etc/passwd",
                    "root:x:0:0:root:/tmp/w:/usr/sbin/nologin\n".into()
                ),
                ("/etc/group", "root:x:0:\n".into()),
            ]
        );
    }

    #[test]
    fn home_falls_back_to_cwd_then_slash() {
        let home = |env: &[&str], cwd: &str| {
            let db = user_db(&config(env, cwd));
            db[0].1.split(':').nth(5).unwrap().to_string()
        };
        assert_eq!(home(&[], "/work"), "/work");
        // The last HOME wins, as in the environment the workload gets.
        assert_eq!(home(&["HOME=/a", "HOME=/b"], "/work"), "/b");
        // A HOME that would break the line, or is relative, is not used.
        assert_eq!(home(&["HOME=/a:0:0"], "/work"), "/work");
        assert_eq!(home(&["HOME=/a\nevil::0:0::/:"], "/work"), "/work");
        assert_eq!(home(&["HOME=rel"], "/work"), "/work");
        assert_eq!(home(&["HOME=/x:y"], "/w:z"), "/");
    }

    #[test]
    fn other_ids_are_named_sandbox_and_no_user_means_no_files() {
        let db = user_db(&spec(
            json!({"process": {"user": {"uid": 1000, "gid": 100}, "cwd": "/"}}),
        ));
        assert_eq!(db[0].1, "sandbox:x:1000:100:sandbox:/:/usr/sbin/nologin\n");
        assert_eq!(db[1].1, "sandbox:x:100:\n");
        assert!(user_db(&spec(json!({}))).is_empty());
    }
}
