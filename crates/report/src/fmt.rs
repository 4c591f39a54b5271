//! Numbers for people: bandwidths and sizes with units, trimmed decimals, thousands separators,
//! singular or plural nouns.

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

/// `""` for one, `"s"` otherwise: `format!("{n} pod{}", plural(n))`.
pub fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A count and its noun, singular or plural: `1 pod`, `2 pods`, `1,024 GPUs`.
pub fn count_of(n: usize, noun: &str) -> String {
    format!("{} {noun}{}", fmt_count(n as u64), plural(n))
}

/// A size in bytes with a binary unit and three significant figures: `512 B`, `1 KiB`,
/// `1.50 MiB`, `1 GiB` (an exact power of 1024 prints without decimals).
pub fn fmt_bytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut unit = 0;
    let mut whole = bytes;
    while whole >= 1024 && unit + 1 < UNITS.len() {
        whole /= 1024;
        unit += 1;
    }
    let scale = 1024f64.powi(unit as i32);
    let exact = bytes as f64 == whole as f64 * scale;
    let value = if exact {
        whole.to_string()
    } else {
        sig3(bytes as f64 / scale)
    };
    format!("{value} {}", UNITS[unit])
}

/// A command line as one string a shell would split back into the same words.
pub fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_in_binary_units() {
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(1023), "1023 B");
        assert_eq!(fmt_bytes(1024), "1 KiB");
        assert_eq!(fmt_bytes(1536), "1.50 KiB");
        assert_eq!(fmt_bytes(1 << 30), "1 GiB");
        assert_eq!(fmt_bytes(8 << 30), "8 GiB");
        assert_eq!(fmt_bytes(1_000_000_000), "954 MiB");
        assert_eq!(fmt_bytes(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn counts_singular_and_plural() {
        assert_eq!(count_of(0, "pod"), "0 pods");
        assert_eq!(count_of(1, "pod"), "1 pod");
        assert_eq!(count_of(2, "QP"), "2 QPs");
        assert_eq!(count_of(1024, "GPU"), "1,024 GPUs");
    }

    #[test]
    fn shell_words_quote_what_a_shell_would_split() {
        let words = [
            "railyard",
            "--policy",
            "fifo+required:tier0",
            "a b",
            "it's",
            "",
        ];
        let words: Vec<String> = words.map(str::to_owned).to_vec();
        assert_eq!(
            shell_words(&words),
            r#"railyard --policy fifo+required:tier0 'a b' 'it'\''s' ''"#
        );
    }
}
