//! The names Landlock gives to what it can restrict, and the ABI that brought each.
//!
//! Names are the kernel's constants without their prefix, lower-cased
//! (`LANDLOCK_ACCESS_FS_WRITE_FILE` -> `write_file`), as runtime-spec PR #1241
//! spells them. ABI numbers follow the kernel's UAPI history as the `landlock`
//! crate 0.4.8 records it; rights above the running kernel's ABI are refused
//! at enforcement unless the policy asks for best effort.
use std::fmt;

/// Declares a right enum with its JSON name and the ABI that introduced it.
/// The declaration order is the kernel's bit order, which `Ord` follows, so
/// sets serialize in a stable order.
macro_rules! rights {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal @ $abi:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name { $($variant,)+ }

        impl $name {
            /// Every variant, in kernel bit order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The name used in the JSON format and in messages.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)+ }
            }

            /// The first Landlock ABI that can restrict this.
            pub fn abi(self) -> u8 {
                match self { $($name::$variant => $abi,)+ }
            }

            /// Parses a JSON name; `None` for anything else (names are case-sensitive).
            pub fn from_name(text: &str) -> Option<Self> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

rights! {
    /// A filesystem access right (`LANDLOCK_ACCESS_FS_*`).
    FsRight {
        Execute = "execute" @ 1,
        WriteFile = "write_file" @ 1,
        ReadFile = "read_file" @ 1,
        ReadDir = "read_dir" @ 1,
        RemoveDir = "remove_dir" @ 1,
        RemoveFile = "remove_file" @ 1,
        MakeChar = "make_char" @ 1,
        MakeDir = "make_dir" @ 1,
        MakeReg = "make_reg" @ 1,
        MakeSock = "make_sock" @ 1,
        MakeFifo = "make_fifo" @ 1,
        MakeBlock = "make_block" @ 1,
        MakeSym = "make_sym" @ 1,
        Refer = "refer" @ 2,
        Truncate = "truncate" @ 3,
        IoctlDev = "ioctl_dev" @ 5,
        ResolveUnix = "resolve_unix" @ 9,
    }
}

rights! {
    /// A network access right (`LANDLOCK_ACCESS_NET_*`).
    NetRight {
        BindTcp = "bind_tcp" @ 4,
        ConnectTcp = "connect_tcp" @ 4,
        BindUdp = "bind_udp" @ 10,
        ConnectSendUdp = "connect_send_udp" @ 10,
    }
}

rights! {
    /// An IPC scope (`LANDLOCK_SCOPE_*`): the domain cannot reach what was
    /// created outside it.
    ScopeRight {
        AbstractUnixSocket = "abstract_unix_socket" @ 6,
        Signal = "signal" @ 6,
    }
}

impl FsRight {
    /// Whether the right means anything on a non-directory. The kernel rejects
    /// a rule on a file that grants directory-only rights, so enforcement keeps
    /// only these on a file (dropping the others grants nothing less).
    pub fn applies_to_files(self) -> bool {
        matches!(
            self,
            FsRight::Execute
                | FsRight::WriteFile
                | FsRight::ReadFile
                | FsRight::Truncate
                | FsRight::IoctlDev
                | FsRight::ResolveUnix
        )
    }

    /// Every filesystem right up to and including `abi`.
    pub fn up_to_abi(abi: u8) -> impl Iterator<Item = FsRight> {
        FsRight::ALL.iter().copied().filter(move |r| r.abi() <= abi)
    }
}

/// The Landlock ABI whose kernels write audit records of denials and can
/// keep logging them past exec (Linux 6.15).
pub const AUDIT_ABI: u8 = 7;

/// Whether a kernel of `kernel_abi` can log Landlock denials past exec.
pub fn can_log(kernel_abi: Option<u8>) -> bool {
    kernel_abi.is_some_and(|abi| abi >= AUDIT_ABI)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logging_needs_the_audit_abi() {
        assert!(!can_log(None));
        assert!(!can_log(Some(AUDIT_ABI - 1)));
        assert!(can_log(Some(AUDIT_ABI)));
        assert!(can_log(Some(AUDIT_ABI + 1)));
    }

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for r in FsRight::ALL {
            assert_eq!(FsRight::from_name(r.name()), Some(*r));
            assert!(seen.insert(r.name()));
        }
        for r in NetRight::ALL {
            assert_eq!(NetRight::from_name(r.name()), Some(*r));
            assert!(seen.insert(r.name()));
        }
        for r in ScopeRight::ALL {
            assert_eq!(ScopeRight::from_name(r.name()), Some(*r));
            assert!(seen.insert(r.name()));
        }
        assert_eq!(FsRight::from_name("WRITE_FILE"), None);
        assert_eq!(FsRight::from_name("write_fil"), None);
    }

    #[test]
    fn abi_table() {
        let rows: &[(&str, u8)] = &[
            ("execute", 1),
            ("make_sym", 1),
            ("refer", 2),
            ("truncate", 3),
            ("ioctl_dev", 5),
            ("resolve_unix", 9),
        ];
        for (name, abi) in rows {
            assert_eq!(FsRight::from_name(name).unwrap().abi(), *abi, "{name}");
        }
        assert_eq!(NetRight::BindTcp.abi(), 4);
        assert_eq!(NetRight::BindUdp.abi(), 10);
        assert_eq!(ScopeRight::Signal.abi(), 6);
        assert_eq!(FsRight::up_to_abi(1).count(), 13);
        assert_eq!(FsRight::up_to_abi(5).count(), 16);
    }
}
