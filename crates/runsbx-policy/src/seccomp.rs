//! OCI `linux.seccomp` -> seccompiler BPF. (Being written; API agreed below.)
use libcontainer::oci_spec::runtime::LinuxSeccomp;

/// A compiled profile: the filters to install, in order, and the
/// SECCOMP_FILTER_FLAG_* bits to pass when installing each.
#[derive(Debug, Clone)]
pub struct SeccompProgram {
    pub filters: Vec<seccompiler::BpfProgram>,
    pub flags: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("linux.seccomp: {0}")]
    Unsupported(String),
}

pub fn compile(_profile: &LinuxSeccomp) -> Result<SeccompProgram, SeccompError> {
    Err(SeccompError::Unsupported(
        "seccomp compilation is not implemented yet".into(),
    ))
}
