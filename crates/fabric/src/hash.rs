//! ECMP hashing of the RoCEv2 5-tuple: the hash functions a switch may use and how each switch's
//! seed is chosen.

use crate::sport::mix64;

/// Protocol number of UDP, the fifth element of every RoCEv2 5-tuple.
pub const IPPROTO_UDP: u8 = 17;

/// The fields an ECMP hash sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FiveTuple {
    /// Source IPv4 address.
    pub src_ip: u32,
    /// Destination IPv4 address.
    pub dst_ip: u32,
    /// UDP source port (per QP for RoCEv2).
    pub src_port: u16,
    /// UDP destination port (4791 for RoCEv2).
    pub dst_port: u16,
    /// IP protocol (17).
    pub protocol: u8,
}

impl FiveTuple {
    /// The 13 bytes a switch feeds its hash, in network order.
    pub fn bytes(&self) -> [u8; 13] {
        let mut b = [0u8; 13];
        b[0..4].copy_from_slice(&self.src_ip.to_be_bytes());
        b[4..8].copy_from_slice(&self.dst_ip.to_be_bytes());
        b[8..10].copy_from_slice(&self.src_port.to_be_bytes());
        b[10..12].copy_from_slice(&self.dst_port.to_be_bytes());
        b[12] = self.protocol;
        b
    }
}

/// The hash function every switch applies to the 5-tuple.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HashFn {
    /// CRC-32 (IEEE) with the switch seed as initial value, then a seed-chosen bit offset
    /// (switch ASICs' "hash offset"). Kept as the *correlated* option: CRC is linear, so a
    /// seed only XORs a constant into the result and the offset only picks other bits of the
    /// same linear function; successive tiers' choices stay correlated (hash polarisation),
    /// which lowers ECMP efficiency against independent per-switch hashing.
    Crc32,
    /// XOR of the tuple's 16-bit words and the seed: cheap and weak, shows bad spreading.
    Xor,
    /// A strong 64-bit mixer (SplitMix64 finaliser) of the tuple keyed by the switch's seed:
    /// every switch hashes independently. The default.
    #[default]
    Mix,
}

/// How each switch's hash seed is chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SwitchSeeds {
    /// Every switch mixes its own ID into the seed (what operators configure to avoid
    /// polarisation).
    #[default]
    PerSwitch,
    /// Every switch uses the same seed: choices at successive tiers are correlated
    /// (hash polarisation).
    Same,
}

/// The seed switch `switch` uses, given the fabric-wide seed.
pub fn switch_seed(seeds: SwitchSeeds, seed: u64, switch: u32) -> u32 {
    match seeds {
        SwitchSeeds::Same => (mix64(seed) >> 32) as u32,
        SwitchSeeds::PerSwitch => (mix64(seed ^ mix64(u64::from(switch) + 1)) >> 32) as u32,
    }
}

/// The hash of a 5-tuple under a hash function and a switch seed.
pub fn hash_tuple(f: HashFn, seed: u32, t: &FiveTuple) -> u32 {
    let b = t.bytes();
    match f {
        HashFn::Crc32 => crc32(seed, &b).rotate_right(seed >> 27),
        HashFn::Xor => {
            let mut h: u32 = seed;
            h ^= t.src_ip ^ t.dst_ip;
            h ^= u32::from(t.src_port) | (u32::from(t.dst_port) << 16);
            h ^= u32::from(t.protocol);
            h ^ (h >> 16)
        }
        HashFn::Mix => {
            let a = u64::from(t.src_ip) << 32 | u64::from(t.dst_ip);
            let c =
                u64::from(t.src_port) << 24 | u64::from(t.dst_port) << 8 | u64::from(t.protocol);
            (mix64(mix64(a ^ u64::from(seed)) ^ c) >> 32) as u32
        }
    }
}

/// Pick one of `n` next hops (n ≥ 1) for a tuple.
pub fn choose(f: HashFn, seed: u32, t: &FiveTuple, n: usize) -> usize {
    (hash_tuple(f, seed, t) as usize) % n
}

const CRC_TABLE: [u32; 256] = crc_table();

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

/// CRC-32 (IEEE 802.3, reflected) of `bytes` starting from `init` (0 gives the standard CRC).
pub fn crc32(init: u32, bytes: &[u8]) -> u32 {
    let mut c = !init;
    for &b in bytes {
        c = CRC_TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(0, b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn same_seeds_are_equal_per_switch_seeds_differ() {
        assert_eq!(
            switch_seed(SwitchSeeds::Same, 5, 1),
            switch_seed(SwitchSeeds::Same, 5, 2)
        );
        assert_ne!(
            switch_seed(SwitchSeeds::PerSwitch, 5, 1),
            switch_seed(SwitchSeeds::PerSwitch, 5, 2)
        );
    }

    #[test]
    fn tuple_bytes_are_network_order() {
        let t = FiveTuple {
            src_ip: 0x0A00_0001,
            dst_ip: 0x0A00_0002,
            src_port: 0xC01A,
            dst_port: 4791,
            protocol: IPPROTO_UDP,
        };
        assert_eq!(
            t.bytes(),
            [10, 0, 0, 1, 10, 0, 0, 2, 0xC0, 0x1A, 0x12, 0xB7, 17]
        );
    }
}
