//! Terminal ioctls nix has no safe call for: a terminal's window size and
//! a pty master's number. (termios itself goes through nix's safe
//! tcgetattr/tcsetattr.)

use std::os::fd::{AsRawFd, BorrowedFd};

pub use libc::winsize as WindowSize;

/// The window size of the terminal behind `fd` (TIOCGWINSZ).
pub fn window_size(fd: BorrowedFd<'_>) -> std::io::Result<WindowSize> {
    let mut ws = WindowSize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `struct winsize` to the pointer, which
    // points at one that lives across the call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut ws as *mut WindowSize) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(ws)
}

/// Sets the window size of the terminal behind `fd` (TIOCSWINSZ); for a
/// pty master, the kernel then signals SIGWINCH to the foreground process
/// group of its slave.
pub fn set_window_size(fd: BorrowedFd<'_>, ws: &WindowSize) -> std::io::Result<()> {
    // SAFETY: TIOCSWINSZ reads one `struct winsize` from the pointer, which
    // points at one that lives across the call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSWINSZ, ws as *const WindowSize) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The number of the pty whose master `fd` is (TIOCGPTN); fails (ENOTTY)
/// for anything but a pty master.
pub fn pty_number(fd: BorrowedFd<'_>) -> std::io::Result<u32> {
    let mut n: libc::c_uint = 0;
    // SAFETY: TIOCGPTN writes one unsigned int to the pointer, which points
    // at one that lives across the call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGPTN, &mut n as *mut libc::c_uint) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n)
}
