use super::*;

const ID: &str = "c1";
const UID: u32 = 1000;

fn lock() -> LockName<'static> {
    LockName {
        name: ".c1.create",
        ino: 42,
    }
}

fn fd(target: &str, flags: i32, ino: u64) -> (String, Option<FdInfo>) {
    (target.to_string(), Some(FdInfo { flags, ino }))
}

fn fds(list: Vec<(String, Option<FdInfo>)>) -> Holds {
    decide(&Seen::Fds(list), &lock(), UID, ID)
}

#[test]
fn a_fork_of_the_create_holds_both_descriptors() {
    let (w, r) = (libc::O_WRONLY | libc::O_CLOEXEC, libc::O_RDONLY);
    let both = vec![
        fd("/dev/null", libc::O_RDWR, 1),
        fd("/run/runsbx/.c1.create", w, 42),
        fd("/run/runsbx/.c1.create", r, 42),
    ];
    assert_eq!(fds(both), Holds::Both);
    // The file unlinked by the dying create's clean-up.
    let deleted = vec![
        fd("/run/runsbx/.c1.create (deleted)", w, 42),
        fd("/run/runsbx/.c1.create (deleted)", r, 42),
    ];
    assert_eq!(fds(deleted), Holds::Both);
}

#[test]
fn one_descriptor_or_another_file_is_not_enough() {
    let (w, r) = (libc::O_WRONLY, libc::O_RDONLY);
    let cases = [
        // A file-access monitor: read-only alone.
        vec![fd("/run/runsbx/.c1.create", r, 42)],
        // Another runsbx trying the lock: write-only alone.
        vec![fd("/run/runsbx/.c1.create", w, 42)],
        // Another file of that name (another root): other inode.
        vec![fd("/other/.c1.create", w, 7), fd("/other/.c1.create", r, 7)],
        // O_PATH handles do not hold the file open.
        vec![
            fd("/run/runsbx/.c1.create", w | libc::O_PATH, 42),
            fd("/run/runsbx/.c1.create", r | libc::O_PATH, 42),
        ],
        // Read-write is neither descriptor the create leaves.
        vec![fd("/run/runsbx/.c1.create", libc::O_RDWR, 42)],
        // Another id's lock file.
        vec![
            fd("/run/runsbx/.c10.create", w, 42),
            fd("/run/runsbx/.xc1.create", r, 42),
        ],
        // fdinfo unreadable (closed meanwhile).
        vec![
            ("/run/runsbx/.c1.create".into(), None),
            fd("/run/runsbx/.c1.create", r, 42),
        ],
        vec![],
    ];
    for case in cases {
        assert_eq!(fds(case.clone()), Holds::Neither, "{case:?}");
    }
}

#[test]
fn an_unreadable_process_is_unsure_only_if_it_is_our_runsbx_of_this_id() {
    let seen = |uid: Option<u32>, argv: Option<&[u8]>| Seen::Unreadable {
        uid,
        argv: argv.map(<[u8]>::to_vec),
    };
    let cases: [(Seen, Holds); 7] = [
        (
            seen(Some(UID), Some(b"runsbx\0create\0c1\0")),
            Holds::Unsure,
        ),
        (
            seen(Some(UID), Some(b"/usr/bin/runsbx\0delete\0--force\0c1\0")),
            Holds::Unsure,
        ),
        (seen(Some(0), Some(b"runsbx\0create\0c1\0")), Holds::Neither),
        (seen(None, Some(b"runsbx\0create\0c1\0")), Holds::Neither),
        (
            seen(Some(UID), Some(b"runsbx\0create\0c2\0")),
            Holds::Neither,
        ),
        (seen(Some(UID), Some(b"sh\0-c\0c1\0")), Holds::Neither),
        (seen(Some(UID), None), Holds::Neither),
    ];
    for (seen, want) in cases {
        assert_eq!(decide(&seen, &lock(), UID, ID), want, "{seen:?}");
    }
}

#[test]
fn fdinfo_fields() {
    let text = "pos:\t0\nflags:\t02100001\nmnt_id:\t25\nino:\t42\n";
    let info = FdInfo::parse(text).unwrap();
    assert_eq!(
        (info.flags & libc::O_ACCMODE, info.ino),
        (libc::O_WRONLY, 42)
    );
    assert!(
        FdInfo::parse("pos:\t0\nflags:\t0\n").is_none(),
        "no ino line"
    );
    assert!(FdInfo::parse("flags:\tzz\nino:\t1\n").is_none());
}
