//! The Landlock policy parser (`process.landlock`, the annotation, the
//! operator's `landlockDefault`): never panics; what it accepts validates,
//! and survives a round trip through its JSON form unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use runsbx_policy::landlock::{LandlockDefault, LandlockPolicy};

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let _ = LandlockDefault::from_json(&value, "landlockDefault");
    let Ok(policy) = LandlockPolicy::from_json(&value, "process.landlock") else {
        return;
    };
    policy.validate().expect("a parsed policy validates");
    let _ = policy.required_abi();
    let _ = policy.beyond_abi(1);
    let _ = policy.widened();
    let back = LandlockPolicy::from_json(&policy.to_json(), "process.landlock")
        .expect("to_json output parses");
    assert_eq!(back, policy, "round trip changed the policy");
});
