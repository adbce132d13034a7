//! Loading compiled seccomp programs. (Being written.)
