//! OCI `linux.seccomp` -> classic BPF, without libseccomp.
//!
//! [`compile`] turns a profile into a [`SeccompProgram`]: pure code, run before the
//! fork; the container's init only loads the result (`runsbx_runtime::sys::seccomp::load`)
//! right before it execs the workload. Anything the compiler cannot express exactly is
//! refused with a [`SeccompError`] naming the field; nothing is ever skipped silently,
//! except syscall names no table knows in a rule that only grants (see "Unknown names").
//!
//! # Semantics (what a profile means here)
//!
//! The reference is runc 1.1 applying a profile through libseccomp 2.5:
//!
//! - Actions: `SCMP_ACT_KILL` is KILL_THREAD (as runc), `ERRNO` and `TRACE` carry
//!   `errnoRet`, defaulting to EPERM (as runc). `SCMP_ACT_NOTIFY` (and a `listenerPath`
//!   with it; without it, runc and runsbx ignore the path)
//!   are refused: runsbx has no seccomp agent.
//! - A rule whose action (with its errno) equals the default action is dropped, as runc
//!   does (libseccomp refuses such rules). This matters: it can no longer shadow a
//!   conditional rule for the same syscall.
//! - For one syscall, the first unconditional rule decides and every other rule for it
//!   is ignored, as in libseccomp's rule database.
//! - Conditions of one entry are ANDed, unless two of them compare the same argument:
//!   then, as runc does (libseccomp refuses two comparisons of one argument in a rule),
//!   each condition of that entry is a rule of its own, i.e. they are ORed. A profile
//!   written and tested against runc means the same here.
//! - When several conditional rules match one call, the action of highest kernel
//!   precedence wins (KILL_PROCESS > KILL_THREAD > TRAP > ERRNO > TRACE > LOG > ALLOW);
//!   between two ERRNO (or TRACE) rules, the one that comes first in the profile wins.
//!   libseccomp resolves such overlaps by the shape of its decision tree; profiles in
//!   the wild (podman's, Docker's) only use disjoint conditions, where both agree.
//! - No rule matches: the default action.
//!
//! # How it is compiled
//!
//! seccompiler's `SeccompFilter` has one match and one mismatch action. Rules are
//! grouped by action. In each group, the unconditional syscalls become a block of our
//! own, one `jeq` per syscall (seccompiler spends about five instructions on each, too
//! many for podman's default profile), and the conditional ones a seccompiler body
//! whose mismatch action is a sentinel (`ERRNO|0xffff`, never produced otherwise:
//! errno values above 4095 are refused); every sentinel `ret` is then rewritten into a
//! jump to the next group.
//! The groups are laid out in precedence order (ALLOW last), then `ret <default>`. The
//! first group that matches returns, which is the precedence rule above, in a single
//! filter. One filter rather than a stack of filters: a stack is loaded by several
//! `seccomp(2)` calls, and once the first filter is in place it would have to allow
//! `seccomp` for the next ones to load, which the profile may deny.
//!
//! # Architectures
//!
//! The native arch (x86_64) is always filtered. `SCMP_ARCH_X86` (`int 0x80`, audit arch
//! I386) and `SCMP_ARCH_X32` (audit arch X86_64 with bit 30 of the number set) get their
//! own sections, with names resolved in their own tables, only when the profile lists
//! them. Any other arch or unlisted x32 number gets KILL_PROCESS; libseccomp's
//! bad-arch default is KILL (thread): the same for a single-threaded process, and
//! stricter for a threaded one. Non-x86 archs in `architectures` are accepted and have
//! no effect: this kernel cannot deliver their syscalls. On i386 the multiplexers
//! `socketcall` and `ipc` are matched by their own names only: libseccomp's rewriting of
//! `socket` rules into `socketcall` conditions is not emulated.
//!
//! # 32-bit arguments
//!
//! On x86_64 (and x32), an argument the kernel declares 32 bits wide
//! ([`arg32::ARG32_X86_64`]) is compared on its low 32 bits when the rule's value
//! (or mask) fits in 32 bits, because that is all the kernel reads:
//! `ioctl(fd, TIOCSTI | 1 << 32)` matches a rule on TIOCSTI. Other arguments are compared
//! on 64 bits. libseccomp compares all 64 bits on 64-bit arches, so under runc the call
//! above slips past a TIOCSTI rule (CVE-2019-10063 shape); here it does not. On i386 all
//! arguments are 32 bits, as in libseccomp.
//!
//! # clone3 and new syscalls
//!
//! seccomp cannot read clone3's flags (they are behind a pointer), so a profile that
//! filters `clone` by flags must answer `clone3` with ENOSYS for glibc to fall back to
//! `clone`. When the profile does not name `clone3` and its default action denies
//! (not ALLOW/LOG/TRACE), runsbx adds `clone3 -> ERRNO(ENOSYS)`. runc reaches the
//! same answer only when clone3 is newer than every syscall the profile names; this
//! rule does not depend on that. runc's stub that answers ENOSYS to every syscall newer
//! than the newest one the profile names (same default-action condition, and only when
//! `defaultErrnoRet` is not already ENOSYS) is reproduced, per arch.
//!
//! # Unknown names
//!
//! The tables ([`tables`], generated by `hack/gen-syscall-tables` from the kernel's own
//! `syscall_64.tbl` and `syscall_32.tbl`) hold every x86_64, x32 and i386 syscall of
//! the kernel release they name. A name found in none of them (a syscall of another
//! arch, or newer than that release) cannot be filtered, so what happens to its rule
//! depends on what dropping it would do:
//!
//! - The rule denies more strongly than the default action (ERRNO, TRAP, TRACE or KILL
//!   under an ALLOW or LOG default; KILL under an ERRNO default): dropping it would let
//!   the call through to the weaker default, so the profile is refused with one error
//!   naming the field (`syscalls[i].names[j]`) and the name. Fail closed.
//! - Otherwise (the rule only grants, e.g. ALLOW under a deny default, or its action is
//!   no stronger than the default) the name is skipped and reported in
//!   [`SeccompProgram::unknown_syscalls`], as runc skips names libseccomp cannot
//!   resolve (with a debug log): the call still gets the default, which is at least
//!   as strict as the rule.
//!
//! A name that exists on only some of the filtered arches applies to those (on the
//! others no such syscall can be made).
//!
//! What this module does not cover: which syscalls a profile should allow (that is
//! [`crate::profile`]), and loading (runtime `sys::seccomp`).

mod arg32;
mod eval;
mod tables;

pub use eval::Call;

use std::collections::BTreeMap;

use oci_spec::runtime::{
    Arch, LinuxSeccomp, LinuxSeccompAction, LinuxSeccompArg, LinuxSeccompFilterFlag,
    LinuxSeccompOperator,
};
use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};
use serde::Serialize;

/// A compiled profile: the filters to install, in order, and the
/// SECCOMP_FILTER_FLAG_* bits to pass when installing each.
#[derive(Debug, Clone)]
pub struct SeccompProgram {
    pub filters: Vec<BpfProgram>,
    pub flags: u32,
    /// Names in the profile that no syscall table knows, in rules that only grant;
    /// skipped, as runc does (a denying rule naming one is refused).
    pub unknown_syscalls: Vec<String>,
}

impl SeccompProgram {
    /// Each filter as the kernel reads it: `struct sock_filter`s (code,
    /// jt, jf, k) in the host's byte order, for a process that loads it
    /// itself (`serve --fork-server`'s sessions).
    pub fn filter_bytes(&self) -> Vec<Vec<u8>> {
        self.filters
            .iter()
            .map(|f| {
                f.iter()
                    .flat_map(|i| {
                        let mut b = Vec::with_capacity(8);
                        b.extend(i.code.to_ne_bytes());
                        b.extend([i.jt, i.jf]);
                        b.extend(i.k.to_ne_bytes());
                        b
                    })
                    .collect()
            })
            .collect()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SeccompError {
    #[error("linux.seccomp: {0}")]
    Unsupported(String),
    #[error("linux.seccomp: {field}: {reason}")]
    Invalid { field: String, reason: String },
    #[error(
        "linux.seccomp: the compiled filter has {0} instructions, more than the kernel's 4096"
    )]
    TooLarge(usize),
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> SeccompError {
    SeccompError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

/// What [`compile`] supports, in OCI spelling, for `runsbx features`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeccompFeatures {
    pub actions: Vec<String>,
    pub operators: Vec<String>,
    pub archs: Vec<String>,
    pub flags: Vec<String>,
}

pub fn features() -> SeccompFeatures {
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    SeccompFeatures {
        actions: s(&[
            "SCMP_ACT_ALLOW",
            "SCMP_ACT_ERRNO",
            "SCMP_ACT_KILL",
            "SCMP_ACT_KILL_PROCESS",
            "SCMP_ACT_KILL_THREAD",
            "SCMP_ACT_LOG",
            "SCMP_ACT_TRACE",
            "SCMP_ACT_TRAP",
        ]),
        operators: s(&[
            "SCMP_CMP_EQ",
            "SCMP_CMP_GE",
            "SCMP_CMP_GT",
            "SCMP_CMP_LE",
            "SCMP_CMP_LT",
            "SCMP_CMP_MASKED_EQ",
            "SCMP_CMP_NE",
        ]),
        archs: s(&["SCMP_ARCH_X86", "SCMP_ARCH_X86_64", "SCMP_ARCH_X32"]),
        flags: s(&[
            "SECCOMP_FILTER_FLAG_LOG",
            "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
            "SECCOMP_FILTER_FLAG_TSYNC",
        ]),
    }
}

const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const AUDIT_ARCH_I386: u32 = 0x4000_0003;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// Mismatch action of a group body, rewritten into "try the next group".
const SENTINEL: u32 = libc::SECCOMP_RET_ERRNO | 0xffff;
const MAX_ERRNO: u32 = 4095;
const BPF_MAX_LEN: usize = 4096;

// Classic BPF opcodes (linux/bpf_common.h).
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JA: u16 = 0x05;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_JMP_JGT_K: u16 = 0x25;
const BPF_JMP_JGE_K: u16 = 0x35;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// The arches this compiler can emit a section for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum X86Arch {
    X86_64,
    X32,
    I386,
}

impl X86Arch {
    fn table(self) -> &'static [(&'static str, u32)] {
        match self {
            X86Arch::X86_64 => tables::X86_64,
            X86Arch::X32 => tables::X32,
            X86Arch::I386 => tables::X86,
        }
    }

    fn resolve(self, name: &str) -> Option<u32> {
        let t = self.table();
        t.binary_search_by(|(n, _)| (*n).cmp(name))
            .ok()
            .map(|i| t[i].1)
    }

    /// Whether argument `index` of syscall `name` is compared on its low 32 bits only.
    fn arg_is_32bit(self, name: &str, index: u8) -> bool {
        match self {
            X86Arch::I386 => true,
            X86Arch::X86_64 | X86Arch::X32 => arg32::ARG32_X86_64
                .iter()
                .find(|(n, _)| *n == name)
                .is_some_and(|(_, args)| args.contains(&index)),
        }
    }
}

/// A native x86_64 call of syscall `name`, for asking a program what it answers.
pub fn x86_64_call(name: &str, args: [u64; 6]) -> Option<Call> {
    Some(Call {
        arch: AUDIT_ARCH_X86_64,
        nr: X86Arch::X86_64.resolve(name)?,
        args,
    })
}

/// The name of syscall `nr` as the kernel's audit records give it: an
/// `AUDIT_ARCH_*` value and the number (x32 numbers carry their bit, as in
/// the x32 table).
pub fn syscall_name(audit_arch: u32, nr: u32) -> Option<&'static str> {
    let arch = match audit_arch {
        AUDIT_ARCH_X86_64 if nr & X32_SYSCALL_BIT != 0 => X86Arch::X32,
        AUDIT_ARCH_X86_64 => X86Arch::X86_64,
        AUDIT_ARCH_I386 => X86Arch::I386,
        _ => return None,
    };
    arch.table()
        .iter()
        .find(|(_, n)| *n == nr)
        .map(|(name, _)| *name)
}

fn known_anywhere(name: &str) -> bool {
    [X86Arch::X86_64, X86Arch::X32, X86Arch::I386]
        .iter()
        .any(|a| a.resolve(name).is_some())
}

/// The names no x86 table knows, in profile order. Stops: an OCI profile that denies
/// a syscall newer than the tables (`mseal` under an ALLOW default) running without
/// that denial. Skipping a name is only safe when the rule could only grant; a rule
/// that denies more strongly than the default is refused instead.
fn unknown_names(entries: &[Entry], default_ret: u32) -> Result<Vec<String>, SeccompError> {
    let mut unknown: Vec<String> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let grants = matches!(
            e.ret & libc::SECCOMP_RET_ACTION_FULL,
            libc::SECCOMP_RET_ALLOW | libc::SECCOMP_RET_LOG
        );
        let stricter = !grants && precedence(e.ret) < precedence(default_ret);
        for (j, n) in e.names.iter().enumerate() {
            if known_anywhere(n) {
                continue;
            }
            if stricter {
                return Err(invalid(
                    format!("syscalls[{i}].names[{j}]"),
                    format!(
                        "unknown syscall {n:?} (runsbx's x86 tables are from Linux {}); \
                         skipping it would let it through to the weaker defaultAction",
                        tables::KERNEL
                    ),
                ));
            }
            if !unknown.contains(n) {
                unknown.push(n.clone());
            }
        }
    }
    Ok(unknown)
}

/// Kernel precedence class of a return value: lower is stronger (seccomp_run_filters
/// compares `(s32)(ret & SECCOMP_RET_ACTION_FULL)`).
fn precedence(ret: u32) -> i32 {
    (ret & libc::SECCOMP_RET_ACTION_FULL) as i32
}

/// runc's `getAction`: OCI action + errnoRet -> seccomp return value.
fn action_ret(
    field: &str,
    action: LinuxSeccompAction,
    errno: Option<u32>,
) -> Result<u32, SeccompError> {
    let data = |errno: Option<u32>| -> Result<u32, SeccompError> {
        let e = errno.unwrap_or(libc::EPERM as u32);
        if e > MAX_ERRNO {
            return Err(invalid(
                field,
                format!("errno {e} is out of range (0-{MAX_ERRNO})"),
            ));
        }
        Ok(e)
    };
    Ok(match action {
        LinuxSeccompAction::ScmpActAllow => libc::SECCOMP_RET_ALLOW,
        LinuxSeccompAction::ScmpActErrno => libc::SECCOMP_RET_ERRNO | data(errno)?,
        LinuxSeccompAction::ScmpActTrace => libc::SECCOMP_RET_TRACE | data(errno)?,
        LinuxSeccompAction::ScmpActKill | LinuxSeccompAction::ScmpActKillThread => {
            libc::SECCOMP_RET_KILL_THREAD
        }
        LinuxSeccompAction::ScmpActKillProcess => libc::SECCOMP_RET_KILL_PROCESS,
        LinuxSeccompAction::ScmpActTrap => libc::SECCOMP_RET_TRAP,
        LinuxSeccompAction::ScmpActLog => libc::SECCOMP_RET_LOG,
        LinuxSeccompAction::ScmpActNotify => {
            return Err(invalid(
                field,
                "SCMP_ACT_NOTIFY needs a seccomp agent, which runsbx does not support",
            ))
        }
    })
}

fn seccompiler_action(ret: u32) -> SeccompAction {
    let data = ret & libc::SECCOMP_RET_DATA;
    match ret & libc::SECCOMP_RET_ACTION_FULL {
        libc::SECCOMP_RET_KILL_PROCESS => SeccompAction::KillProcess,
        libc::SECCOMP_RET_KILL_THREAD => SeccompAction::KillThread,
        libc::SECCOMP_RET_TRAP => SeccompAction::Trap,
        libc::SECCOMP_RET_ERRNO => SeccompAction::Errno(data),
        libc::SECCOMP_RET_TRACE => SeccompAction::Trace(data),
        libc::SECCOMP_RET_LOG => SeccompAction::Log,
        _ => SeccompAction::Allow,
    }
}

/// One validated argument comparison.
#[derive(Debug, Clone, Copy)]
struct Cond {
    index: u8,
    op: LinuxSeccompOperator,
    value: u64,
    value_two: u64,
}

impl Cond {
    fn parse(field: &str, arg: &LinuxSeccompArg) -> Result<Self, SeccompError> {
        let index = arg.index();
        if index > 5 {
            return Err(invalid(
                format!("{field}.index"),
                format!("{index} is out of range (0-5)"),
            ));
        }
        Ok(Cond {
            index: index as u8,
            op: arg.op(),
            value: arg.value(),
            value_two: arg.value_two().unwrap_or(0),
        })
    }

    fn to_seccompiler(self, arch: X86Arch, name: &str) -> SeccompCondition {
        use LinuxSeccompOperator::*;
        let (op, value, wide) = match self.op {
            ScmpCmpEq => (SeccompCmpOp::Eq, self.value, self.value),
            ScmpCmpNe => (SeccompCmpOp::Ne, self.value, self.value),
            ScmpCmpLt => (SeccompCmpOp::Lt, self.value, self.value),
            ScmpCmpLe => (SeccompCmpOp::Le, self.value, self.value),
            ScmpCmpGt => (SeccompCmpOp::Gt, self.value, self.value),
            ScmpCmpGe => (SeccompCmpOp::Ge, self.value, self.value),
            // OCI: value is the mask, valueTwo the datum; (arg & mask) == (datum & mask).
            ScmpCmpMaskedEq => (
                SeccompCmpOp::MaskedEq(self.value),
                self.value_two,
                self.value,
            ),
        };
        let len = if arch == X86Arch::I386
            || (arch.arg_is_32bit(name, self.index) && wide <= u64::from(u32::MAX))
        {
            SeccompCmpArgLen::Dword
        } else {
            SeccompCmpArgLen::Qword
        };
        // Cannot fail: the index was checked in `parse`.
        SeccompCondition::new(self.index, len, op, value).expect("argument index checked")
    }
}

/// One profile entry after validation.
struct Entry {
    names: Vec<String>,
    ret: u32,
    conds: Vec<Cond>,
}

/// Rules of one action group, by syscall number (with the name, for 32-bit args).
type GroupRules<'a> = BTreeMap<u32, (String, Vec<&'a Rule>)>;

/// A rule for one syscall on one arch.
struct Rule {
    ret: u32,
    conds: Vec<Cond>,
    /// Index of the profile entry it comes from (ties between equal-precedence groups).
    order: usize,
}

fn parse_entries(profile: &LinuxSeccomp) -> Result<Vec<Entry>, SeccompError> {
    let mut entries = Vec::new();
    for (i, sc) in profile.syscalls().iter().flatten().enumerate() {
        let field = format!("syscalls[{i}]");
        if sc.names().is_empty() {
            return Err(invalid(&field, "names is empty"));
        }
        for (j, n) in sc.names().iter().enumerate() {
            if n.is_empty() {
                return Err(invalid(format!("{field}.names[{j}]"), "is an empty string"));
            }
        }
        let ret = action_ret(&format!("{field}.action"), sc.action(), sc.errno_ret())?;
        let conds = sc
            .args()
            .iter()
            .flatten()
            .enumerate()
            .map(|(k, a)| Cond::parse(&format!("{field}.args[{k}]"), a))
            .collect::<Result<Vec<_>, _>>()?;
        entries.push(Entry {
            names: sc.names().clone(),
            ret,
            conds,
        });
    }
    Ok(entries)
}

fn parse_flags(profile: &LinuxSeccomp) -> Result<u32, SeccompError> {
    let mut flags = 0;
    for (i, f) in profile.flags().iter().flatten().enumerate() {
        flags |= match f {
            LinuxSeccompFilterFlag::SeccompFilterFlagLog => libc::SECCOMP_FILTER_FLAG_LOG,
            LinuxSeccompFilterFlag::SeccompFilterFlagSpecAllow => {
                libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW
            }
            LinuxSeccompFilterFlag::SeccompFilterFlagTsync => libc::SECCOMP_FILTER_FLAG_TSYNC,
            LinuxSeccompFilterFlag::SeccompFilterFlagWaitKillableRecv => {
                return Err(invalid(
                    format!("flags[{i}]"),
                    "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV only applies to SCMP_ACT_NOTIFY, which runsbx does not support",
                ))
            }
        } as u32;
    }
    Ok(flags)
}

/// The extra arches the profile asks for (x86_64 is always filtered).
fn parse_archs(profile: &LinuxSeccomp) -> Vec<X86Arch> {
    let mut archs = vec![X86Arch::X86_64];
    for a in profile.architectures().iter().flatten() {
        let x = match a {
            Arch::ScmpArchX86 => X86Arch::I386,
            Arch::ScmpArchX32 => X86Arch::X32,
            // Native, X86_64, and arches this kernel cannot deliver: nothing to add.
            _ => continue,
        };
        if !archs.contains(&x) {
            archs.push(x);
        }
    }
    archs.sort();
    archs
}

/// Per-syscall rules for one arch, with runc's and libseccomp's adjustments applied.
fn rules_for_arch(
    arch: X86Arch,
    entries: &[Entry],
    default_ret: u32,
) -> BTreeMap<u32, (String, Vec<Rule>)> {
    let mut by_nr: BTreeMap<u32, (String, Vec<Rule>)> = BTreeMap::new();
    for (order, e) in entries.iter().enumerate() {
        if e.ret == default_ret {
            continue; // runc: "This rule is redundant, silently skip it".
        }
        // runc: an entry comparing one argument twice becomes one rule per
        // condition.
        let repeats = e
            .conds
            .iter()
            .enumerate()
            .any(|(i, c)| e.conds[..i].iter().any(|d| d.index == c.index));
        let split: Vec<Vec<Cond>> = match repeats {
            true => e.conds.iter().map(|c| vec![*c]).collect(),
            false => vec![e.conds.clone()],
        };
        for name in &e.names {
            let Some(nr) = arch.resolve(name) else {
                continue;
            };
            let rules = &mut by_nr
                .entry(nr)
                .or_insert_with(|| (name.clone(), Vec::new()))
                .1;
            rules.extend(split.iter().map(|conds| Rule {
                ret: e.ret,
                conds: conds.clone(),
                order,
            }));
        }
    }
    // libseccomp: the first unconditional rule for a syscall replaces all others.
    for (_, rules) in by_nr.values_mut() {
        if let Some(i) = rules.iter().position(|r| r.conds.is_empty()) {
            let r = rules.swap_remove(i);
            *rules = vec![r];
        }
    }
    by_nr
}

/// Whether the default action denies (runc's `!isAllowAction`).
fn default_denies(ret: u32) -> bool {
    !matches!(
        ret & libc::SECCOMP_RET_ACTION_FULL,
        libc::SECCOMP_RET_ALLOW | libc::SECCOMP_RET_LOG | libc::SECCOMP_RET_TRACE
    )
}

/// The body of one group: its unconditional syscalls as a compact block of our own
/// (one `jeq` each, see [`unconditional_block`]), then its conditional ones through
/// seccompiler (match -> `ret`, mismatch -> SENTINEL), with seccompiler's own arch
/// check removed (the prologue does it) and every sentinel `ret` turned into a jump
/// past the end of the body. A call that matches nothing falls out of the end.
fn group_body(
    arch: X86Arch,
    rules: &GroupRules<'_>,
    ret: u32,
) -> Result<Vec<sock_filter>, SeccompError> {
    let mut map: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut unconditional: Vec<u32> = Vec::new();
    for (nr, (name, rs)) in rules {
        if rs.iter().any(|r| r.conds.is_empty()) {
            unconditional.push(*nr);
            continue;
        }
        let out = rs
            .iter()
            .map(|r| {
                let conds = r
                    .conds
                    .iter()
                    .map(|c| c.to_seccompiler(arch, name))
                    .collect();
                SeccompRule::new(conds).expect("conditions are not empty")
            })
            .collect();
        map.insert(i64::from(*nr), out);
    }
    let mut body = unconditional_block(&unconditional, ret);
    if map.is_empty() {
        return Ok(body);
    }
    let filter = SeccompFilter::new(
        map,
        seccompiler_action(SENTINEL),
        seccompiler_action(ret),
        TargetArch::x86_64,
    )
    .map_err(|e| SeccompError::Unsupported(format!("seccompiler: {e}")))?;
    let prog: BpfProgram = filter.try_into().map_err(|e| match e {
        seccompiler::BackendError::FilterTooLarge(n) => SeccompError::TooLarge(n),
        e => SeccompError::Unsupported(format!("seccompiler: {e}")),
    })?;
    // seccompiler starts with: ld arch; jeq AUDIT_ARCH_X86_64, 1, 0; ret KILL_PROCESS.
    let expected = [
        stmt(BPF_LD_W_ABS, SECCOMP_DATA_ARCH),
        jump(BPF_JMP_JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        stmt(BPF_RET_K, libc::SECCOMP_RET_KILL_PROCESS),
    ];
    if prog.len() < 3 || prog[..3] != expected {
        return Err(SeccompError::Unsupported(
            "seccompiler emitted an unexpected arch check; refusing to guess".into(),
        ));
    }
    let mut conditional: Vec<sock_filter> = prog[3..].to_vec();
    let len = conditional.len();
    for (pc, ins) in conditional.iter_mut().enumerate() {
        if ins.code == BPF_RET_K && ins.k == SENTINEL {
            *ins = stmt(BPF_JMP_JA, (len - pc - 1) as u32);
        }
    }
    body.extend(conditional);
    Ok(body)
}

/// `ld nr; jeq a; jeq b; ...; ja +1; ret <ret>`, in chunks of at most 255 numbers so
/// that every `jeq` reaches its chunk's `ret` with an 8-bit offset; a number in no
/// chunk falls through. One instruction per syscall: seccompiler spends about five
/// on an unconditional rule, which put podman's default profile (about 380 names on
/// three arches) over the kernel's 4096-instruction limit.
fn unconditional_block(nrs: &[u32], ret: u32) -> Vec<sock_filter> {
    if nrs.is_empty() {
        return Vec::new();
    }
    let mut out = vec![stmt(BPF_LD_W_ABS, SECCOMP_DATA_NR)];
    for chunk in nrs.chunks(usize::from(u8::MAX)) {
        let k = chunk.len();
        for (i, nr) in chunk.iter().enumerate() {
            // From instruction i of the chunk to its ret at k + 1: skip k - i.
            out.push(jump(BPF_JMP_JEQ_K, *nr, (k - i) as u8, 0));
        }
        out.push(stmt(BPF_JMP_JA, 1));
        out.push(stmt(BPF_RET_K, ret));
    }
    out
}

/// The section of the program that judges syscalls of one arch.
fn arch_section(
    arch: X86Arch,
    entries: &[Entry],
    default_ret: u32,
    stub_max: Option<u32>,
) -> Result<Vec<sock_filter>, SeccompError> {
    let by_nr = rules_for_arch(arch, entries, default_ret);
    let mut out = Vec::new();
    // runc's ENOSYS stub: syscalls newer than any the profile names.
    if let Some(max) = stub_max {
        out.push(stmt(BPF_LD_W_ABS, SECCOMP_DATA_NR));
        out.push(jump(BPF_JMP_JGT_K, max, 0, 1));
        out.push(stmt(
            BPF_RET_K,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        ));
    }
    // Groups by return value, strongest first; ties: first in the profile first.
    let mut groups: BTreeMap<(i32, usize, u32), GroupRules<'_>> = BTreeMap::new();
    let mut first_order: BTreeMap<u32, usize> = BTreeMap::new();
    for (_, rules) in by_nr.values() {
        for r in rules {
            let o = first_order.entry(r.ret).or_insert(r.order);
            *o = (*o).min(r.order);
        }
    }
    for (nr, (name, rules)) in &by_nr {
        for r in rules {
            let key = (precedence(r.ret), first_order[&r.ret], r.ret);
            groups
                .entry(key)
                .or_default()
                .entry(*nr)
                .or_insert_with(|| (name.clone(), Vec::new()))
                .1
                .push(r);
        }
    }
    for ((_, _, ret), rules) in &groups {
        out.extend(group_body(arch, rules, *ret)?);
    }
    out.push(stmt(BPF_RET_K, default_ret));
    Ok(out)
}

/// Dispatch on arch: x86_64 / x32 / i386 sections, anything else KILL_PROCESS.
fn assemble(
    x86_64: Vec<sock_filter>,
    x32: Option<Vec<sock_filter>>,
    i386: Option<Vec<sock_filter>>,
) -> Vec<sock_filter> {
    const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;
    // Layout: 0 ld arch; 1 jeq X86_64; 2 ld nr; 3 jge X32 bit; 4 ja x86_64; 5 ja x32|kill;
    // 6 jeq I386; 7 ja i386; 8 ret KILL; 9.. sections.
    let start64 = 9usize;
    let startx32 = start64 + x86_64.len();
    let start32 = startx32 + x32.as_ref().map_or(0, Vec::len);
    let ja = |from: usize, to: usize| stmt(BPF_JMP_JA, (to - from - 1) as u32);
    let mut p = vec![
        stmt(BPF_LD_W_ABS, SECCOMP_DATA_ARCH),
        jump(BPF_JMP_JEQ_K, AUDIT_ARCH_X86_64, 0, 4),
        stmt(BPF_LD_W_ABS, SECCOMP_DATA_NR),
        jump(BPF_JMP_JGE_K, X32_SYSCALL_BIT, 1, 0),
        ja(4, start64),
        ja(5, if x32.is_some() { startx32 } else { 8 }),
        jump(BPF_JMP_JEQ_K, AUDIT_ARCH_I386, 0, 1),
        ja(7, if i386.is_some() { start32 } else { 8 }),
        stmt(BPF_RET_K, KILL),
    ];
    p.extend(x86_64);
    p.extend(x32.into_iter().flatten());
    p.extend(i386.into_iter().flatten());
    p
}

/// Compiles an OCI seccomp profile for this (x86_64) host.
pub fn compile(profile: &LinuxSeccomp) -> Result<SeccompProgram, SeccompError> {
    if !cfg!(target_arch = "x86_64") {
        return Err(SeccompError::Unsupported(
            "runsbx compiles seccomp profiles only on x86_64 hosts".into(),
        ));
    }
    // As runc: a listenerPath is only used by SCMP_ACT_NOTIFY; without one
    // it is ignored (no agent is ever contacted).
    let notifies = profile.default_action() == LinuxSeccompAction::ScmpActNotify
        || profile
            .syscalls()
            .iter()
            .flatten()
            .any(|s| s.action() == LinuxSeccompAction::ScmpActNotify);
    if profile.listener_path().is_some() && notifies {
        return Err(invalid(
            "listenerPath",
            "seccomp agents (SCMP_ACT_NOTIFY) are not supported by runsbx",
        ));
    }
    let default_ret = action_ret(
        "defaultAction",
        profile.default_action(),
        profile.default_errno_ret(),
    )?;
    let flags = parse_flags(profile)?;
    let archs = parse_archs(profile);
    let mut entries = parse_entries(profile)?;

    let unknown_syscalls = unknown_names(&entries, default_ret)?;

    let denies = default_denies(default_ret);
    let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    // runc's stub, computed from the profile's own names (before the clone3 rule).
    let enosys_stub = denies && default_ret != enosys;
    let stub_max = |arch: X86Arch| {
        enosys_stub
            .then(|| {
                entries
                    .iter()
                    .flat_map(|e| &e.names)
                    .filter_map(|n| arch.resolve(n))
                    .max()
            })
            .flatten()
    };
    let stub = [X86Arch::X86_64, X86Arch::X32, X86Arch::I386].map(stub_max);
    if denies
        && !entries
            .iter()
            .any(|e| e.names.iter().any(|n| n == "clone3"))
    {
        entries.push(Entry {
            names: vec!["clone3".into()],
            ret: enosys,
            conds: Vec::new(),
        });
    }
    let section = |arch: X86Arch, max| arch_section(arch, &entries, default_ret, max);
    let x86_64 = section(X86Arch::X86_64, stub[0])?;
    let x32 = archs
        .contains(&X86Arch::X32)
        .then(|| section(X86Arch::X32, stub[1]))
        .transpose()?;
    let i386 = archs
        .contains(&X86Arch::I386)
        .then(|| section(X86Arch::I386, stub[2]))
        .transpose()?;
    let prog = assemble(x86_64, x32, i386);
    if prog.len() > BPF_MAX_LEN {
        return Err(SeccompError::TooLarge(prog.len()));
    }
    Ok(SeccompProgram {
        filters: vec![prog],
        flags,
        unknown_syscalls,
    })
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
