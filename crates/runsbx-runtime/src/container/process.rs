//! Pure: the process `exec` runs when no `--process` file is given.
//! libcontainer builds an exec's process from flags alone (no terminal, no
//! umask, rlimits or ioPriority of the container's), so runsbx writes the
//! process itself, as runc builds it: the container's `process` with
//! COMMAND, `--cwd`, `--env`, `--user`, `--additional-gids`, `--cap`,
//! `--no-new-privs` applied, and `terminal` as `--tty` says.

use serde_json::{json, Value};

use super::ExecOptions;

/// The user an exec runs as, as runc decides it: the container's
/// `process.user`, its uid (and gid, when given) replaced by `--user`, its
/// additionalGids followed by `--additional-gids`. (libcontainer's own
/// default, when told none, is uid 0 and gid 0.)
pub(super) fn user(spec_process: &Value, opts: &ExecOptions) -> Value {
    let mut u = match &spec_process["user"] {
        Value::Object(_) => spec_process["user"].clone(),
        _ => json!({ "uid": 0, "gid": 0 }),
    };
    if let Some((uid, gid)) = opts.user {
        u["uid"] = uid.into();
        if let Some(gid) = gid {
            u["gid"] = gid.into();
        }
    }
    if !opts.additional_gids.is_empty() {
        let mut gids = u["additionalGids"].as_array().cloned().unwrap_or_default();
        gids.extend(opts.additional_gids.iter().map(|g| json!(g)));
        u["additionalGids"] = Value::Array(gids);
    }
    u
}

pub(super) fn exec_process(spec_process: &Value, opts: &ExecOptions) -> Value {
    let mut p = match spec_process {
        Value::Object(_) => spec_process.clone(),
        _ => json!({}),
    };
    p["terminal"] = opts.tty.into();
    p["args"] = json!(opts.args);
    if let Some(cwd) = &opts.cwd {
        p["cwd"] = json!(cwd);
    }
    // The container's environment, less what --env sets, then --env (a
    // name set twice would leave the first one to getenv).
    let key = |kv: &str| kv.split_once('=').map_or(kv, |(k, _)| k).to_string();
    let set: Vec<String> = opts.env.iter().map(|kv| key(kv)).collect();
    let mut env: Vec<Value> = p["env"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|kv| !kv.as_str().is_some_and(|kv| set.contains(&key(kv))))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    env.extend(opts.env.iter().map(|kv| json!(kv)));
    p["env"] = Value::Array(env);
    p["user"] = user(spec_process, opts);
    if !opts.cap.is_empty() {
        if !p["capabilities"].is_object() {
            p["capabilities"] = json!({});
        }
        // Ambient only where the spec has an inheritable set: an ambient
        // capability needs an inheritable one, which --cap does not add.
        let mut sets = vec!["bounding", "effective", "permitted"];
        if p["capabilities"]["inheritable"].is_array() {
            sets.push("ambient");
        }
        for set in sets {
            let mut list = p["capabilities"][set]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for cap in &opts.cap {
                if !list.iter().any(|c| c == cap) {
                    list.push(json!(cap));
                }
            }
            p["capabilities"][set] = Value::Array(list);
        }
    }
    if opts.no_new_privs {
        p["noNewPrivileges"] = true.into();
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_containers_process_with_the_flags_applied() {
        let spec = json!({
            "terminal": false,
            "user": { "uid": 1000, "gid": 1000 },
            "args": ["sleep", "100"],
            "env": ["PATH=/bin", "A=1", "B=2"],
            "cwd": "/home",
            "capabilities": { "bounding": ["CAP_KILL"], "effective": ["CAP_KILL"] },
            "rlimits": [{ "type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024 }],
            "noNewPrivileges": false
        });
        let opts = ExecOptions {
            args: vec!["sh".into()],
            env: vec!["A=3".into(), "C=4".into()],
            user: Some((0, None)),
            additional_gids: vec![5],
            cap: vec!["CAP_CHOWN".into(), "CAP_KILL".into()],
            no_new_privs: true,
            tty: true,
            ..Default::default()
        };
        let p = exec_process(&spec, &opts);
        assert_eq!(p["terminal"], true);
        assert_eq!(p["args"], json!(["sh"]));
        assert_eq!(p["env"], json!(["PATH=/bin", "B=2", "A=3", "C=4"]));
        assert_eq!(p["cwd"], "/home");
        assert_eq!(
            p["user"],
            json!({ "uid": 0, "gid": 1000, "additionalGids": [5] })
        );
        assert_eq!(
            p["capabilities"]["bounding"],
            json!(["CAP_KILL", "CAP_CHOWN"])
        );
        assert_eq!(
            p["capabilities"]["permitted"],
            json!(["CAP_CHOWN", "CAP_KILL"])
        );
        assert!(p["capabilities"].get("ambient").is_none());
        assert_eq!(p["noNewPrivileges"], true);
        assert_eq!(p["rlimits"], spec["rlimits"]);
    }

    #[test]
    fn the_user_is_the_containers_unless_a_flag_says_otherwise() {
        let spec = json!({ "user": { "uid": 1000, "gid": 100, "additionalGids": [5] } });
        let opts = |user, additional_gids| ExecOptions {
            user,
            additional_gids,
            ..Default::default()
        };
        assert_eq!(user(&spec, &opts(None, vec![])), spec["user"]);
        assert_eq!(
            user(&spec, &opts(Some((0, None)), vec![7])),
            json!({ "uid": 0, "gid": 100, "additionalGids": [5, 7] })
        );
        assert_eq!(
            user(&spec, &opts(Some((2, Some(3))), vec![])),
            json!({ "uid": 2, "gid": 3, "additionalGids": [5] })
        );
        assert_eq!(
            user(&json!({}), &opts(None, vec![])),
            json!({ "uid": 0, "gid": 0 })
        );
    }

    #[test]
    fn a_spec_without_a_process_gives_the_flags_alone() {
        let opts = ExecOptions {
            args: vec!["id".into()],
            cwd: Some("/tmp".into()),
            tty: true,
            ..Default::default()
        };
        let p = exec_process(&Value::Null, &opts);
        assert_eq!(
            p,
            json!({ "terminal": true, "args": ["id"], "cwd": "/tmp", "env": [],
                    "user": { "uid": 0, "gid": 0 } })
        );
    }
}
