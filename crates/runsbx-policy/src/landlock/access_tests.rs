use std::path::{Path, PathBuf};

use super::*;

fn read_only_layer(paths: &[&str]) -> LandlockPolicy {
    let p: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    LandlockPolicy::sandbox(&p, &[])
}

fn names(rights: &[FsRight]) -> Vec<String> {
    rights.iter().map(|r| r.name().to_string()).collect()
}

#[test]
fn access_is_inherited_down_the_tree_and_layers_intersect() {
    let ro = read_only_layer(&["/usr"]);
    let read_exec = names(&[FsRight::Execute, FsRight::ReadFile, FsRight::ReadDir]);
    let at = |layers: &[LandlockPolicy], p: &str| {
        effective_access(layers, Some(7), Path::new(p)).map(right_names)
    };
    assert_eq!(
        at(std::slice::from_ref(&ro), "/usr"),
        Some(read_exec.clone())
    );
    assert_eq!(
        at(std::slice::from_ref(&ro), "/usr/bin/sh"),
        Some(read_exec.clone())
    );
    assert_eq!(
        at(std::slice::from_ref(&ro), "/usrx"),
        Some(vec![]),
        "a sibling is not beneath"
    );
    assert_eq!(at(std::slice::from_ref(&ro), "/"), Some(vec![]));
    assert_eq!(at(&[], "/usr"), None, "no layer, no Landlock");

    // A read-write grant on /data, and a second layer that grants only read
    // there: the intersection is read.
    let rw = LandlockPolicy::sandbox(&[], &[PathBuf::from("/data")]);
    let read_only = read_only_layer(&["/data"]);
    let both = at(&[rw.clone(), read_only], "/data/x").unwrap();
    assert_eq!(both, names(&[FsRight::ReadFile, FsRight::ReadDir]));
    let one = at(&[rw], "/data").unwrap();
    assert!(one.contains(&"write_file".to_string()) && !one.contains(&"execute".to_string()));
}

#[test]
fn unhandled_rights_stay_allowed_and_later_abis_are_not_listed() {
    // A policy handling only write_file leaves everything else.
    let mut p = read_only_layer(&["/"]);
    p.handled_fs = [FsRight::WriteFile].into_iter().collect();
    p.path_beneath.clear();
    p.handled_net.clear();
    let got = layer_access(&p, Some(3), Path::new("/etc"));
    let want: BTreeSet<FsRight> = FsRight::up_to_abi(3)
        .filter(|r| *r != FsRight::WriteFile)
        .collect();
    assert_eq!(got, want, "truncate (ABI 3) known, ioctl_dev (ABI 5) not");
}

#[test]
fn best_effort_drops_what_the_kernel_lacks() {
    let mut p = read_only_layer(&["/usr"]);
    p.best_effort = true;
    // ABI 2: truncate and ioctl_dev cannot be handled, so they are not
    // restricted; execute outside /usr still is.
    let got = layer_access(&p, Some(2), Path::new("/home"));
    assert!(got.is_empty(), "{got:?}");
    let got = layer_access(&p, Some(3), Path::new("/home"));
    assert!(got.is_empty(), "{got:?}");

    // Without Landlock in the kernel, a best-effort layer restricts nothing.
    let got = layer_access(&p, None, Path::new("/home"));
    assert_eq!(got.len(), FsRight::ALL.len());
}

#[test]
fn rights_in_words() {
    let all: Vec<String> = FsRight::up_to_abi(5)
        .map(|r| r.name().to_string())
        .collect();
    assert_eq!(describe_rights(&all, Some(5)), "all");
    assert_eq!(describe_rights(&[], Some(5)), "none");
    let rx = names(&[FsRight::Execute, FsRight::ReadFile, FsRight::ReadDir]);
    assert_eq!(describe_rights(&rx, Some(5)), "read, execute");
    let w = names(&[FsRight::WriteFile, FsRight::ReadFile]);
    assert_eq!(describe_rights(&w, Some(5)), "write_file, read_file");
}
