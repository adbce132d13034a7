use super::*;

fn refused(step: Step, errno: Errno) -> NsFacts {
    NsFacts {
        refused: Some((step, errno)),
        ..Default::default()
    }
}

fn ok_landlock() -> LandlockFacts {
    LandlockFacts {
        abi: Some(7),
        seccomp_actions: Some(
            "kill_process kill_thread trap errno user_notif trace log allow\n".into(),
        ),
        no_new_privs: true,
        root_group_of: None,
    }
}

#[test]
fn each_environment_gets_its_own_cause() {
    assert_eq!(diagnose(&NsFacts::default()), None);

    // uid 0 in a default podman/docker container: no CAP_SYS_ADMIN.
    let root = NsFacts {
        root: true,
        seccomp_filtered: true,
        ..refused(Step::RootMountNs, Errno::EPERM)
    };
    assert_eq!(diagnose(&root), Some(Cause::RootWithoutSysAdmin));
    assert!(Cause::RootWithoutSysAdmin
        .line()
        .contains("--cap-add SYS_ADMIN"));

    // A non-root uid there: the user namespace works, the engine's seccomp
    // profile refuses sethostname.
    let user = NsFacts {
        seccomp_filtered: true,
        ..refused(Step::Hostname, Errno::EPERM)
    };
    assert_eq!(diagnose(&user), Some(Cause::EngineSeccomp("sethostname")));
    assert!(diagnose(&user)
        .unwrap()
        .line()
        .contains("seccomp=unconfined"));
    // The same EPERM without a filter is not blamed on seccomp.
    let bare = refused(Step::Hostname, Errno::EPERM);
    assert!(matches!(
        diagnose(&bare),
        Some(Cause::Other("sethostname", _))
    ));

    // Sysctls.
    let mut zero = refused(Step::UserNs, Errno::ENOSPC);
    zero.sysctl.max_user_namespaces = Some(0);
    assert_eq!(diagnose(&zero), Some(Cause::MaxUserNamespacesZero));
    assert!(diagnose(&zero)
        .unwrap()
        .line()
        .contains("sysctl -w user.max_user_namespaces=15000"));
    let mut clone = refused(Step::UserNs, Errno::EPERM);
    clone.sysctl.unprivileged_userns_clone = Some(0);
    assert_eq!(diagnose(&clone), Some(Cause::UnprivilegedUsernsClone));
    assert_eq!(
        diagnose(&refused(Step::UserNs, Errno::ENOSPC)),
        Some(Cause::UserNamespaceLimit)
    );

    // AppArmor (Ubuntu 23.10+): the namespace is made, without capabilities.
    let mut aa = refused(Step::Caps, Errno::EPERM);
    aa.sysctl.apparmor_restrict = Some(1);
    assert_eq!(diagnose(&aa), Some(Cause::AppArmor));
    assert!(Cause::AppArmor.line().contains("hack/apparmor/runsbx"));

    // The masked /proc of an engine with enough capabilities otherwise.
    let proc = NsFacts {
        seccomp_filtered: true,
        ..refused(Step::Proc, Errno::EPERM)
    };
    assert_eq!(diagnose(&proc), Some(Cause::MaskedProc));
    assert!(Cause::MaskedProc.line().contains("unmask=/proc/*"));

    for c in [
        Cause::MaxUserNamespacesZero,
        Cause::UnprivilegedUsernsClone,
        Cause::UserNamespaceLimit,
        Cause::AppArmor,
        Cause::EngineSeccomp("mount"),
        Cause::RootWithoutSysAdmin,
        Cause::MaskedProc,
        Cause::Other("mount", Errno::EACCES),
    ] {
        assert!(!c.line().contains('\n'), "{c:?}");
    }
}

#[test]
fn landlock_mode_needs_abi_6_seccomp_and_no_new_privs() {
    assert_eq!(landlock_gap(&ok_landlock()), None);
    let old = LandlockFacts {
        abi: Some(5),
        ..ok_landlock()
    };
    let gap = landlock_gap(&old).unwrap();
    assert!(
        gap.contains("Landlock ABI 6") && gap.contains("ABI 5"),
        "{gap}"
    );
    let none = LandlockFacts {
        abi: None,
        seccomp_actions: None,
        no_new_privs: false,
        root_group_of: None,
    };
    let gap = landlock_gap(&none).unwrap();
    assert!(gap.contains("Landlock (off"), "{gap}");
    assert!(gap.contains("seccomp filters"), "{gap}");
    assert!(gap.contains("no_new_privs"), "{gap}");
    let no_kill = LandlockFacts {
        seccomp_actions: Some("errno allow".into()),
        ..ok_landlock()
    };
    assert!(landlock_gap(&no_kill).unwrap().contains("seccomp"));
}

#[test]
fn auto_prefers_namespaces_steps_down_loudly_or_refuses() {
    let none = || None;
    let cause = || Some(Cause::RootWithoutSysAdmin);
    let gap = || Some("the landlock mode needs Landlock ABI 6 from the kernel".to_string());
    let lands = || -> Option<String> { None };

    let d = decide(Pin::Auto, none, || panic!("not asked")).unwrap();
    assert_eq!((d.mode, d.announce), (Mode::Namespaces, None));

    let d = decide(Pin::Auto, cause, lands).unwrap();
    assert_eq!(d.mode, Mode::Landlock);
    let line = d.announce.unwrap();
    assert!(
        line.contains("CAP_SYS_ADMIN") && line.contains("--isolation landlock"),
        "{line}"
    );
    assert!(!line.contains('\n'));

    let e = decide(Pin::Auto, cause, gap).unwrap_err().0;
    assert!(e.starts_with("no isolation mode can run here"), "{e}");
    assert!(e.contains("CAP_SYS_ADMIN") && e.contains("ABI 6"), "{e}");

    // Pinned: never the other mode, never announced.
    let e = decide(Pin::Namespaces, cause, lands).unwrap_err().0;
    assert!(
        e.starts_with("--isolation namespaces: namespaces are unavailable here"),
        "{e}"
    );
    let d = decide(Pin::Namespaces, none, gap).unwrap();
    assert_eq!(d.mode, Mode::Namespaces);
    let d = decide(Pin::Landlock, || panic!("not probed"), lands).unwrap();
    assert_eq!((d.mode, d.announce), (Mode::Landlock, None));
    let e = decide(Pin::Landlock, none, gap).unwrap_err().0;
    assert!(
        e.starts_with("--isolation landlock: the landlock mode needs"),
        "{e}"
    );
}

#[test]
fn only_an_unconfined_root_skips_the_probe() {
    let host_root = NsFacts {
        root: true,
        cap_sys_admin: true,
        initial_userns: true,
        ..Default::default()
    };
    assert!(!needs_probe(&host_root));
    for f in [
        NsFacts {
            root: false,
            ..host_root.clone()
        },
        NsFacts {
            cap_sys_admin: false,
            ..host_root.clone()
        },
        NsFacts {
            initial_userns: false,
            ..host_root.clone()
        },
        NsFacts {
            seccomp_filtered: true,
            ..host_root.clone()
        },
        NsFacts {
            proc_covered: true,
            ..host_root.clone()
        },
    ] {
        assert!(needs_probe(&f), "{f:?}");
    }
}

#[test]
fn masks_over_proc_are_seen_binfmt_misc_is_not() {
    let line = |m: &str| format!("36 25 0:32 / {m} rw,relatime - proc proc rw\n");
    let host = line("/proc") + &line("/proc/sys/fs/binfmt_misc") + &line("/sys");
    assert!(!proc_covered(&host));
    assert!(proc_covered(&(host + &line("/proc/kcore"))));
}

/// A pod with `runAsUser` and no `runAsGroup`: uid 65534, gid 0. The
/// landlock mode refuses up front, naming the fix; a pinned namespace mode
/// is not concerned.
#[test]
fn group_zero_without_privileges_is_a_landlock_gap() {
    let pod = LandlockFacts {
        root_group_of: Some(65534),
        ..ok_landlock()
    };
    let gap = landlock_gap(&pod).unwrap();
    assert!(
        gap.contains("uid 65534 with gid 0") && gap.contains("runAsGroup"),
        "{gap}"
    );
    assert!(!gap.contains("from the kernel"), "{gap}");
    let both = LandlockFacts {
        no_new_privs: false,
        ..pod
    };
    let gap = landlock_gap(&both).unwrap();
    assert!(
        gap.contains("no_new_privs from the kernel; the landlock mode cannot run with group id 0"),
        "{gap}"
    );
}
