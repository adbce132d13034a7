//! The one Landlock call the `landlock` crate does not expose: asking the
//! kernel for its ABI version. Rulesets and restriction go through the
//! crate's safe API (`crate::landlock`).

/// `LANDLOCK_CREATE_RULESET_VERSION` from `<linux/landlock.h>`.
const CREATE_RULESET_VERSION: libc::c_uint = 1 << 0;

/// The kernel's Landlock ABI version, or the errno of
/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`:
/// `ENOSYS` when Landlock is not built in, `EOPNOTSUPP` when it is disabled
/// at boot.
pub fn abi_version() -> Result<u32, nix::errno::Errno> {
    // SAFETY: with the VERSION flag, attr must be NULL and size 0: the kernel
    // reads no memory and creates no file descriptor, it only returns a number.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if ret < 0 {
        Err(nix::errno::Errno::last())
    } else {
        Ok(u32::try_from(ret).unwrap_or(u32::MAX))
    }
}
