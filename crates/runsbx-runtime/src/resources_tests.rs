use super::*;
use serde_json::json;

fn resources(v: serde_json::Value) -> LinuxResources {
    serde_json::from_value(v).unwrap()
}

fn merged(base: serde_json::Value, u: &ResourceUpdate) -> serde_json::Value {
    serde_json::to_value(merge(Some(&resources(base)), u)).unwrap()
}

#[test]
fn a_given_field_replaces_and_the_rest_stays() {
    let base = json!({
        "memory": { "limit": 100, "reservation": 50 },
        "cpu": { "shares": 512, "quota": 1000, "period": 100000, "cpus": "0" },
        "pids": { "limit": 64 },
        "devices": [{ "allow": false, "access": "rwm" }]
    });
    let u = ResourceUpdate {
        memory: Some(200),
        cpu_quota: Some(5000),
        pids_limit: Some(10),
        ..Default::default()
    };
    assert_eq!(
        merged(base, &u),
        json!({
            "memory": { "limit": 200, "reservation": 50 },
            "cpu": { "shares": 512, "quota": 5000, "period": 100000, "cpus": "0" },
            "pids": { "limit": 10 },
            "devices": [{ "allow": false, "access": "rwm" }]
        })
    );
}

#[test]
fn zero_keeps_as_in_runc() {
    let base =
        json!({ "memory": { "limit": 100 }, "cpu": { "shares": 2 }, "pids": { "limit": 64 } });
    let u = ResourceUpdate {
        memory: Some(0),
        cpu_shares: Some(0),
        pids_limit: Some(0),
        cpuset_cpus: Some(String::new()),
        blkio_weight: Some(0),
        ..Default::default()
    };
    assert_eq!(merged(base.clone(), &u), base);
}

#[test]
fn unlimited_memory_lifts_swap_unless_swap_is_given() {
    let base = json!({ "memory": { "limit": 100, "swap": 200 } });
    let lift = ResourceUpdate {
        memory: Some(-1),
        ..Default::default()
    };
    assert_eq!(
        merged(base.clone(), &lift),
        json!({ "memory": { "limit": -1, "swap": -1 } })
    );
    let both = ResourceUpdate {
        memory: Some(-1),
        memory_swap: Some(300),
        ..Default::default()
    };
    assert_eq!(
        merged(base, &both),
        json!({ "memory": { "limit": -1, "swap": 300 } })
    );
}

#[test]
fn sections_appear_only_when_set() {
    assert_eq!(
        serde_json::to_value(merge(None, &ResourceUpdate::default())).unwrap(),
        json!({})
    );
    let u = ResourceUpdate {
        blkio_weight: Some(300),
        pids_limit: Some(-1),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(merge(None, &u)).unwrap(),
        json!({ "blockIO": { "weight": 300 }, "pids": { "limit": -1 } })
    );
}

#[test]
fn json_takes_what_runc_takes() {
    let text = br#"{
        "memory": { "limit": 1048576, "swap": 2097152, "swappiness": 10, "disableOOMKiller": true },
        "cpu": { "shares": 100, "quota": 20000, "period": 100000, "cpus": "0-1", "mems": "0" },
        "blockIO": { "weight": 500 },
        "pids": { "limit": 32 },
        "devices": [{ "allow": true, "access": "rwm" }],
        "unified": { "memory.high": "1000000" }
    }"#;
    let u = ResourceUpdate::from_json(text).unwrap();
    assert_eq!(
        u,
        ResourceUpdate {
            memory: Some(1048576),
            memory_swap: Some(2097152),
            cpu_shares: Some(100),
            cpu_quota: Some(20000),
            cpu_period: Some(100000),
            cpuset_cpus: Some("0-1".into()),
            cpuset_mems: Some("0".into()),
            blkio_weight: Some(500),
            pids_limit: Some(32),
            unified: Some([("memory.high".to_string(), "1000000".to_string())].into()),
            ..Default::default()
        }
    );
    // What containerd writes for a container with no limits.
    assert_eq!(
        ResourceUpdate::from_json(b"{}").unwrap(),
        ResourceUpdate::default()
    );
}

#[test]
fn bad_json_names_the_field() {
    let err = ResourceUpdate::from_json(br#"{"memory":{"limit":"1G"}}"#).unwrap_err();
    assert!(err.starts_with("memory.limit: invalid type"), "{err}");
    for bad in [&b""[..], b"{", b"[]", b"{} x"] {
        assert!(ResourceUpdate::from_json(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn devices_are_never_rewritten() {
    let r = resources(json!({
        "devices": [{ "allow": false, "access": "rwm" }],
        "hugepageLimits": [{ "pageSize": "2MB", "limit": 0 }],
        "memory": { "limit": 5 },
        "pids": { "limit": 3 }
    }));
    assert_eq!(
        serde_json::to_value(to_apply(&r)).unwrap(),
        json!({ "memory": { "limit": 5 }, "pids": { "limit": 3 } })
    );
}

#[test]
fn cpu_idle_is_zero_or_one_and_zero_is_a_value() {
    assert_eq!(check_idle(0), Ok(()));
    assert_eq!(check_idle(1), Ok(()));
    assert_eq!(check_idle(-1).unwrap_err(), "-1: must be 0 or 1");
    assert_eq!(
        ResourceUpdate::from_json(br#"{"cpu": {"idle": 2}}"#).unwrap_err(),
        "cpu.idle 2: must be 0 or 1"
    );
    let off = ResourceUpdate::from_json(br#"{"cpu": {"idle": 0}}"#).unwrap();
    assert_eq!(
        merged(json!({ "cpu": { "idle": 1 } }), &off)["cpu"]["idle"],
        0
    );
}

#[test]
fn a_cpu_burst_of_zero_is_a_value_and_none_keeps_it() {
    let base = json!({ "cpu": { "quota": 500000, "period": 1000000, "burst": 500000 } });
    let off = ResourceUpdate {
        cpu_burst: Some(0),
        ..Default::default()
    };
    assert_eq!(merged(base.clone(), &off)["cpu"]["burst"], 0);
    let other = ResourceUpdate {
        pids_limit: Some(5),
        ..Default::default()
    };
    assert_eq!(merged(base, &other)["cpu"]["burst"], 500000);
}
