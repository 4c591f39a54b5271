//! RoCE facts the fabric, the doctor and the launcher share: the active RoCE MTU a netdev MTU
//! allows (Linux `iboe_get_mtu`: the IB MTU plus 96 bytes of RoCEv2/IP/UDP/BTH/ICRC overhead must
//! fit), and the RoCEv2 UDP destination port.

/// RoCEv2's UDP destination port (IANA).
pub const ROCE_V2_UDP_PORT: u16 = 4791;

/// Bytes of headers and trailer the kernel reserves on top of the IB MTU (`iboe_get_mtu`).
pub const ROCE_OVERHEAD_BYTES: u32 = 96;

/// The IB MTUs RoCE can run, smallest first.
pub const IB_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

/// The largest IB MTU whose frame fits a netdev MTU, or `None` below 256 + 96 bytes.
/// 4200 → 4096, 4191 → 2048, 9000 → 4096, 1500 → 1024.
pub fn active_mtu(netdev_mtu: u32) -> Option<u32> {
    IB_MTUS
        .iter()
        .rev()
        .copied()
        .find(|&m| netdev_mtu >= m + ROCE_OVERHEAD_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn design_md_examples() {
        assert_eq!(active_mtu(4200), Some(4096));
        assert_eq!(active_mtu(4192), Some(4096));
        assert_eq!(active_mtu(4191), Some(2048));
        assert_eq!(active_mtu(9000), Some(4096));
        assert_eq!(active_mtu(1500), Some(1024));
        assert_eq!(active_mtu(351), None);
        assert_eq!(active_mtu(352), Some(256));
    }
}
