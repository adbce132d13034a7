//! config.json as create reads it: bytes -> JSON value -> oci-spec `Spec`
//! (through serde_path_to_error, as runsbx-runtime's `Bundle::load` does),
//! then everything runsbx-policy derives from a config: the bundle's Landlock
//! policy, the operator's `auto` policy, and the seccomp program.
//! Must never panic, whatever the bytes.
#![no_main]

use libcontainer::oci_spec::runtime::Spec;
use libfuzzer_sys::fuzz_target;
use runsbx_policy::landlock::{self, LandlockDefault};
use runsbx_policy::seccomp;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    // The bundle's own policy is read from the raw value (oci-spec drops
    // `process.landlock`), so it is parsed whether or not the Spec is valid.
    let own = landlock::from_config(&raw);
    if let Ok(Some(p)) = &own {
        p.validate().expect("a parsed policy validates");
    }
    let spec: Spec = match serde_path_to_error::deserialize(&raw) {
        Ok(s) => s,
        Err(e) => {
            // The error text is what the user sees: building it must not panic.
            let _ = (e.path().to_string(), e.into_inner().to_string());
            return;
        }
    };
    let own = own.ok().flatten();
    for default in [
        LandlockDefault::Off,
        LandlockDefault::Auto { best_effort: false },
        LandlockDefault::Auto { best_effort: true },
    ] {
        for layer in default.layers(&spec, own.clone()) {
            let _ = layer.required_abi();
            let _ = layer.widened();
        }
    }
    if let Some(profile) = spec.linux().as_ref().and_then(|l| l.seccomp().as_ref()) {
        if let Ok(program) = seccomp::compile(profile) {
            for f in &program.filters {
                assert!(f.len() <= 4096, "filter of {} instructions", f.len());
            }
        }
    }
});
