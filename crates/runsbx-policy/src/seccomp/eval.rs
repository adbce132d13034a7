//! A classic-BPF interpreter for the programs [`compile`](super::compile)
//! emits, applying the kernel's rules (every filter runs, the strongest
//! action wins, the most recently installed wins ties). The compiler's tests
//! run profiles through it; `--report-denials` asks it which errno a denied
//! syscall got, since the kernel's audit record names only the action.
use seccompiler::sock_filter;

use super::{precedence, SeccompProgram};

/// A syscall as a filter sees it (`struct seccomp_data` without the ip).
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub arch: u32,
    pub nr: u32,
    pub args: [u64; 6],
}

impl SeccompProgram {
    /// The value the installed program returns for `call`; `None` for an
    /// instruction this interpreter does not know (the compiler emits none).
    pub fn answer(&self, call: &Call) -> Option<u32> {
        let mut ret = libc::SECCOMP_RET_ALLOW;
        for f in self.filters.iter().rev() {
            let r = run_filter(f, call)?;
            if precedence(r) < precedence(ret) {
                ret = r;
            }
        }
        Some(ret)
    }
}

/// Runs one filter.
pub(super) fn run_filter(prog: &[sock_filter], c: &Call) -> Option<u32> {
    let load = |off: u32| -> Option<u32> {
        Some(match off {
            0 => c.nr,
            4 => c.arch,
            8 | 12 => 0,
            o if (16..64).contains(&o) && o % 4 == 0 => {
                let a = c.args[((o - 16) / 8) as usize];
                if (o - 16) % 8 == 0 {
                    a as u32
                } else {
                    (a >> 32) as u32
                }
            }
            _ => return None,
        })
    };
    let (mut acc, mut pc) = (0u32, 0usize);
    loop {
        let i = prog.get(pc)?;
        pc += 1;
        match i.code {
            0x20 => acc = load(i.k)?,
            0x54 => acc &= i.k,
            0x06 => return Some(i.k),
            0x05 => pc += i.k as usize,
            0x15 | 0x25 | 0x35 | 0x45 => {
                let t = match i.code {
                    0x15 => acc == i.k,
                    0x25 => acc > i.k,
                    0x35 => acc >= i.k,
                    _ => acc & i.k != 0,
                };
                pc += if t { i.jt } else { i.jf } as usize;
            }
            _ => return None,
        }
    }
}
