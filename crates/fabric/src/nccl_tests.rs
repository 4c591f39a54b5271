//! A measured nccl-tests result row (`all_reduce_perf` and friends) as data, so measured
//! figures can be compared with the model's ([`crate::compare`]). Reading nccl-tests' printed
//! output is a wire format and lives in `formats::nccl_tests`.

/// One half (out-of-place or in-place) of a result row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    /// Time, µs.
    pub time_us: f64,
    /// Algorithm bandwidth, GB/s.
    pub algbw_gb_s: f64,
    /// Bus bandwidth, GB/s.
    pub busbw_gb_s: f64,
}

/// One result row of nccl-tests.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// 1-based line number in the text.
    pub line: usize,
    /// Buffer size, bytes.
    pub size_bytes: u64,
    /// Element count.
    pub count: u64,
    /// Data type (`float`, `half`, …).
    pub dtype: String,
    /// Out-of-place figures.
    pub out_of_place: Timing,
    /// In-place figures.
    pub in_place: Timing,
}
