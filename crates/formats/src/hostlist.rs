//! Slurm hostlist expressions: `gpu-[000-031,040]` compression and expansion.

/// Largest number of names one expression (or one `topology.conf`) may expand to: a hostlist
/// names nodes or switches, and a cluster has at most [`topology::MAX_NODES`] nodes.
pub const MAX_EXPANSION: usize = topology::MAX_NODES;

/// Largest total length of the names one expression may expand to, bytes (a 1,000,000-node
/// cluster's names at 64 characters each). Checked before the names are made, so a range with
/// a zero-padded width of thousands of digits is refused instead of allocating gigabytes.
pub const MAX_EXPANSION_BYTES: usize = 64 * 1024 * 1024;

/// Split a name into its prefix and trailing decimal digits.
fn split_number(name: &str) -> (&str, Option<&str>) {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 18 {
        (name, None)
    } else {
        let (p, d) = name.split_at(name.len() - digits);
        (p, Some(d))
    }
}

/// A run of names sharing a prefix and digit width: (prefix, width, inclusive ranges).
type Group = (String, usize, Vec<(u64, u64)>);

/// Compress names (in the given order) into a hostlist expression.
pub fn compress<S: AsRef<str>>(names: &[S]) -> String {
    // Groups of (prefix, width, ranges), in order; a new group starts when the prefix or width
    // changes.
    let mut parts: Vec<String> = Vec::new();
    let mut group: Option<Group> = None;
    let flush = |g: &mut Option<Group>, parts: &mut Vec<String>| {
        if let Some((prefix, width, ranges)) = g.take() {
            let body: Vec<String> = ranges
                .iter()
                .map(|&(a, b)| {
                    if a == b {
                        format!("{a:0width$}")
                    } else {
                        format!("{a:0width$}-{b:0width$}")
                    }
                })
                .collect();
            if ranges.len() == 1 && ranges[0].0 == ranges[0].1 {
                parts.push(format!("{prefix}{}", body[0]));
            } else {
                parts.push(format!("{prefix}[{}]", body.join(",")));
            }
        }
    };
    for name in names {
        let name = name.as_ref();
        match split_number(name) {
            (prefix, Some(digits)) => {
                let n: u64 = digits.parse().expect("digits parse");
                let width = digits.len();
                match &mut group {
                    Some((p, w, ranges)) if p == prefix && *w == width => {
                        let last = ranges.last_mut().expect("non-empty group");
                        if n == last.1 + 1 {
                            last.1 = n;
                        } else {
                            ranges.push((n, n));
                        }
                    }
                    _ => {
                        flush(&mut group, &mut parts);
                        group = Some((prefix.to_owned(), width, vec![(n, n)]));
                    }
                }
            }
            (plain, None) => {
                flush(&mut group, &mut parts);
                parts.push(plain.to_owned());
            }
        }
    }
    flush(&mut group, &mut parts);
    parts.join(",")
}

/// Expand a hostlist expression (one bracket group per element), refusing more than
/// [`MAX_EXPANSION`] names or [`MAX_EXPANSION_BYTES`] bytes of names.
pub fn expand(expr: &str) -> Result<Vec<String>, String> {
    expand_within(expr, MAX_EXPANSION)
}

/// [`expand`] with a smaller budget of names (what a file's earlier lines left over).
pub fn expand_within(expr: &str, max_names: usize) -> Result<Vec<String>, String> {
    let max_names = max_names.min(MAX_EXPANSION);
    let mut out = Vec::new();
    let mut bytes_out = 0usize;
    let mut depth = 0i32;
    let mut start = 0;
    let bytes = expr.as_bytes();
    let mut elements = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => depth -= 1,
            b',' if depth == 0 => {
                elements.push(&expr[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("unbalanced brackets in `{}`", shorten(expr)));
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced brackets in `{}`", shorten(expr)));
    }
    elements.push(&expr[start..]);
    for el in elements {
        if el.is_empty() {
            return Err(format!("empty name in `{}`", shorten(expr)));
        }
        let Some(open) = el.find('[') else {
            if out.len() >= max_names {
                return Err(format!(
                    "`{}` expands to more than {max_names} names",
                    shorten(expr)
                ));
            }
            bytes_out += el.len();
            out.push(el.to_owned());
            continue;
        };
        let close = el
            .find(']')
            .ok_or_else(|| format!("unbalanced brackets in `{}`", shorten(el)))?;
        let (prefix, suffix) = (&el[..open], &el[close + 1..]);
        for range in el[open + 1..close].split(',') {
            let (a, b) = range.split_once('-').unwrap_or((range, range));
            let width = a.len();
            let (lo, hi): (u64, u64) = match (a.parse(), b.parse()) {
                (Ok(lo), Ok(hi)) if lo <= hi => (lo, hi),
                _ => {
                    return Err(format!(
                        "bad range `{}` in `{}`",
                        shorten(range),
                        shorten(el)
                    ))
                }
            };
            // Counted in u64 before anything is made: `hi - lo + 1` can be 2^64 − 1 names.
            let count = (hi - lo).saturating_add(1);
            let name_len = prefix.len() + width.max(b.trim_start_matches('0').len()) + suffix.len();
            let too_many = count > (max_names - out.len().min(max_names)) as u64;
            let too_long = count.saturating_mul(name_len as u64)
                > (MAX_EXPANSION_BYTES - bytes_out.min(MAX_EXPANSION_BYTES)) as u64;
            if too_many || too_long {
                return Err(format!(
                    "range `{}` expands to too many names (at most {max_names} names and {MAX_EXPANSION_BYTES} bytes)",
                    shorten(range)
                ));
            }
            bytes_out += count as usize * name_len;
            for n in lo..=hi {
                out.push(format!("{prefix}{n:0width$}{suffix}"));
            }
        }
    }
    Ok(out)
}

/// A piece of user input for an error message ([`crate::excerpt`]).
fn shorten(s: &str) -> String {
    crate::excerpt(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compress_runs_and_singletons() {
        let names = ["gpu-000", "gpu-001", "gpu-002", "gpu-007", "login", "gpu-9"];
        assert_eq!(compress(&names), "gpu-[000-002,007],login,gpu-9");
    }

    #[test]
    fn expand_inverts_compress() {
        let names: Vec<String> = (0..40)
            .filter(|i| i % 7 != 3)
            .map(|i| format!("n{i:03}"))
            .collect();
        assert_eq!(expand(&compress(&names)).unwrap(), names);
    }

    #[test]
    fn expand_rejects_bad_ranges() {
        assert!(expand("n[5-2]").is_err());
        assert!(expand("n[1-2").is_err());
        assert!(expand("n[0-99999999999]").is_err());
    }
}
