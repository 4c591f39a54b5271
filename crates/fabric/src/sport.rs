//! RoCEv2 UDP source ports and QP numbers.
//!
//! The destination port of RoCEv2 is always 4791, so the source port is the only entropy an ECMP
//! hash sees between two NICs. Linux derives it from the QP numbers of both ends
//! (`rdma_calc_flow_label` + `rdma_flow_label_to_udp_sport`); railyard uses the same formula and
//! derives QP numbers deterministically from a seed, so runs are reproducible.

/// Lowest RoCEv2 source port the kernel uses (`IB_ROCE_UDP_ENCAP_VALID_PORT_MIN`).
pub const SPORT_MIN: u16 = 0xC000;

/// The IPv6 flow label Linux computes for a pair of QP numbers (`rdma_calc_flow_label`).
pub fn flow_label(lqpn: u32, rqpn: u32) -> u32 {
    let mut v = u64::from(lqpn) * u64::from(rqpn);
    v ^= v >> 20;
    v ^= v >> 40;
    (v & 0xF_FFFF) as u32
}

/// The RoCEv2 UDP source port Linux uses for a pair of QP numbers (`rdma_get_udp_sport`):
/// always in 49152..=65535.
pub fn udp_source_port(lqpn: u32, rqpn: u32) -> u16 {
    let fl = flow_label(lqpn, rqpn);
    let low = (fl & 0x3FFF) ^ ((fl & 0xF_C000) >> 14);
    // `low` has 14 bits, so the cast cannot truncate.
    (low as u16) | SPORT_MIN
}

/// A 24-bit QP number (2..=0xFF_FFFF; 0 and 1 are reserved) derived from a seed, a connection
/// and a QP index, for one end of the connection (`side` 0 = sender, 1 = receiver).
pub fn qp_number(seed: u64, connection: u64, qp: u32, side: u32) -> u32 {
    let h = mix64(seed ^ mix64(connection ^ mix64((u64::from(qp) << 1) | u64::from(side & 1))));
    (h % 0xFF_FFFE) as u32 + 2
}

/// SplitMix64's finaliser: a bijective 64-bit mixer.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A small seeded generator (SplitMix64) for simulations; never seeded from the clock.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn design_md_vectors() {
        assert_eq!(flow_label(0x1234, 0x5678), 0x60002);
        assert_eq!(udp_source_port(0x1234, 0x5678), 49178);
        assert_eq!(udp_source_port(0x100, 0x200), 49160);
    }

    #[test]
    fn qp_numbers_are_24_bit_and_not_reserved() {
        for c in 0..1000 {
            let q = qp_number(7, c, (c % 5) as u32, 0);
            assert!((2..=0xFF_FFFF).contains(&q), "{q}");
        }
        assert_ne!(qp_number(1, 2, 3, 0), qp_number(1, 2, 3, 1));
        assert_ne!(qp_number(1, 2, 3, 0), qp_number(1, 2, 4, 0));
    }

    proptest! {
        #[test]
        fn every_port_is_in_the_rocev2_range(l in 0u32..=0xFF_FFFF, r in 0u32..=0xFF_FFFF) {
            let p = udp_source_port(l, r);
            prop_assert!((49152..=65535).contains(&p));
        }
    }
}
