//! The seccomp compiler: any JSON that deserializes as an OCI `LinuxSeccomp`
//! either compiles or is refused with an error; it never panics, and a
//! program it returns fits the kernel's limit of 4096 instructions a filter.
#![no_main]

use libcontainer::oci_spec::runtime::LinuxSeccomp;
use libfuzzer_sys::fuzz_target;
use runsbx_policy::seccomp;

fuzz_target!(|data: &[u8]| {
    let Ok(profile) = serde_json::from_slice::<LinuxSeccomp>(data) else {
        return;
    };
    match seccomp::compile(&profile) {
        Ok(program) => {
            assert!(!program.filters.is_empty(), "no filter for {profile:?}");
            for f in &program.filters {
                assert!(!f.is_empty(), "empty filter");
                assert!(f.len() <= 4096, "filter of {} instructions", f.len());
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
