//! Raw descriptor helpers.
use std::os::fd::{BorrowedFd, RawFd};

/// Borrows a descriptor number that the caller knows to be open for the
/// rest of the process's life (an fd inherited across fork until exec).
pub fn borrow(fd: RawFd) -> BorrowedFd<'static> {
    // SAFETY: callers pass only descriptors they hold open until exec or
    // exit; a closed number would make writes fail with EBADF, not UB.
    unsafe { BorrowedFd::borrow_raw(fd) }
}
