//! Landlock access arithmetic: what a stack of layers leaves at a path on a
//! kernel of a given ABI. Pure: `runsbx check` explains with it, nothing is
//! enforced here (enforcement is `runsbx-runtime::landlock`).
use std::collections::BTreeSet;
use std::path::Path;

use super::{FsRight, LandlockPolicy};

/// Rights a layer really handles on this kernel: with best effort, what the
/// kernel's ABI lacks is dropped (and so allowed); without, preflight has
/// already refused a policy the kernel cannot enforce.
fn handled_here(layer: &LandlockPolicy, kernel_abi: Option<u8>) -> BTreeSet<FsRight> {
    let abi = kernel_abi.unwrap_or(0);
    layer
        .handled_fs
        .iter()
        .copied()
        .filter(|r| !layer.best_effort || r.abi() <= abi)
        .collect()
}

/// The filesystem rights this kernel's Landlock knows (every right without
/// Landlock, where nothing is restricted). Rights of later ABIs are left out
/// of what [`layer_access`] reports: no layer can restrict them here.
fn known_rights(kernel_abi: Option<u8>) -> BTreeSet<FsRight> {
    FsRight::up_to_abi(kernel_abi.unwrap_or(u8::MAX)).collect()
}

/// The filesystem rights one layer leaves at `path`: what it does not handle,
/// plus what a rule on `path` or an ancestor grants (grants are inherited
/// down the tree), among the rights this kernel knows.
pub fn layer_access(
    layer: &LandlockPolicy,
    kernel_abi: Option<u8>,
    path: &Path,
) -> BTreeSet<FsRight> {
    let handled = handled_here(layer, kernel_abi);
    let known = known_rights(kernel_abi);
    let mut rights: BTreeSet<FsRight> = known
        .iter()
        .copied()
        .filter(|r| !handled.contains(r))
        .collect();
    for rule in &layer.path_beneath {
        if rule.paths.iter().any(|p| path.starts_with(p)) {
            rights.extend(rule.allowed.iter().copied().filter(|r| known.contains(r)));
        }
    }
    rights
}

/// What all layers together leave at `path` (layers intersect); `None`
/// when there is no layer.
pub fn effective_access(
    layers: &[LandlockPolicy],
    kernel_abi: Option<u8>,
    path: &Path,
) -> Option<BTreeSet<FsRight>> {
    layers
        .iter()
        .map(|l| layer_access(l, kernel_abi, path))
        .reduce(|a, b| &a & &b)
}

pub fn right_names(rights: BTreeSet<FsRight>) -> Vec<String> {
    rights.iter().map(|r| r.name().to_string()).collect()
}

/// Rights in words: `all` (every right of ABI `kernel_abi`), `none`, or the
/// names with `read_file read_dir` shortened to `read` and the seven
/// `make_*` to `make_*`.
pub fn describe_rights(names: &[String], kernel_abi: Option<u8>) -> String {
    let known = known_rights(kernel_abi);
    if names.len() >= known.len() && known.iter().all(|r| names.iter().any(|n| n == r.name())) {
        return "all".into();
    }
    if names.is_empty() {
        return "none".into();
    }
    let has = |n: &str| names.iter().any(|x| x == n);
    let mut out: Vec<&str> = Vec::new();
    let read = has("read_file") && has("read_dir");
    let makes = [
        "make_char",
        "make_dir",
        "make_reg",
        "make_sock",
        "make_fifo",
        "make_block",
        "make_sym",
    ];
    let all_make = makes.iter().all(|m| has(m));
    if read {
        out.push("read");
    }
    for n in names {
        let n = n.as_str();
        if (read && (n == "read_file" || n == "read_dir")) || (all_make && makes.contains(&n)) {
            continue;
        }
        out.push(n);
    }
    if all_make {
        out.push("make_*");
    }
    out.join(", ")
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
