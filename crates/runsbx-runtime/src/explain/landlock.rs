//! The Landlock layers of an explanation, as this kernel will apply them.
use runsbx_policy::landlock::LandlockPolicy;

use super::LandlockLayer;

pub(super) fn landlock_layers(
    layers: &[LandlockPolicy],
    operator_layer: bool,
    kernel_abi: Option<u8>,
) -> Vec<LandlockLayer> {
    layers
        .iter()
        .enumerate()
        .map(|(i, l)| LandlockLayer {
            source: if operator_layer && i == 0 {
                "operator default"
            } else {
                "bundle"
            },
            required_abi: l.required_abi(),
            best_effort: l.best_effort,
            handled_fs: l.handled_fs.iter().map(|r| r.name().into()).collect(),
            handled_net: l.handled_net.iter().map(|r| r.name().into()).collect(),
            scoped: l.scoped.iter().map(|r| r.name().into()).collect(),
            tcp_ports: l.net_port.iter().flat_map(|r| r.ports.clone()).collect(),
            dropped: if l.best_effort {
                l.beyond_abi(kernel_abi.unwrap_or(0))
                    .into_iter()
                    .map(|(n, a)| (n.to_string(), a))
                    .collect()
            } else {
                Vec::new()
            },
        })
        .collect()
}
