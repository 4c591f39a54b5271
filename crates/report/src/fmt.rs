//! Numbers for people: bandwidths with units, trimmed decimals, thousands separators.

/// Format a bandwidth given in Gb/s with a readable unit.
pub fn fmt_gbps(gbps: f64) -> String {
    let (v, unit) = if gbps >= 1.0e6 {
        (gbps / 1.0e6, "Pb/s")
    } else if gbps >= 1.0e3 {
        (gbps / 1.0e3, "Tb/s")
    } else {
        (gbps, "Gb/s")
    };
    format!("{} {unit}", trim_float(v))
}

/// A number with at most three significant decimals and no trailing zeros.
pub fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_owned()
}

/// An integer with thousands separators.
pub fn fmt_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Three significant figures, no exponent (1.23, 12.3, 123, 1,234).
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        fmt_count(v.round() as u64)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}
