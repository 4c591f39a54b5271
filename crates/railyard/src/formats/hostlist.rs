//! Slurm hostlist expressions: `gpu-[000-031,040]` compression and expansion.

/// Largest number of names one expression may expand to.
pub const MAX_EXPANSION: usize = 10_000_000;

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

/// Expand a hostlist expression (one bracket group per element).
pub fn expand(expr: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
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
            return Err(format!("unbalanced brackets in `{expr}`"));
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced brackets in `{expr}`"));
    }
    elements.push(&expr[start..]);
    for el in elements {
        if el.is_empty() {
            return Err(format!("empty name in `{expr}`"));
        }
        let Some(open) = el.find('[') else {
            out.push(el.to_owned());
            continue;
        };
        let close = el
            .find(']')
            .ok_or_else(|| format!("unbalanced brackets in `{el}`"))?;
        let (prefix, suffix) = (&el[..open], &el[close + 1..]);
        for range in el[open + 1..close].split(',') {
            let (a, b) = range.split_once('-').unwrap_or((range, range));
            let width = a.len();
            let (lo, hi): (u64, u64) = match (a.parse(), b.parse()) {
                (Ok(lo), Ok(hi)) if lo <= hi => (lo, hi),
                _ => return Err(format!("bad range `{range}` in `{el}`")),
            };
            if (hi - lo) as usize >= MAX_EXPANSION
                || out.len() + (hi - lo) as usize >= MAX_EXPANSION
            {
                return Err(format!("range `{range}` expands to too many names"));
            }
            for n in lo..=hi {
                out.push(format!("{prefix}{n:0width$}{suffix}"));
            }
        }
    }
    Ok(out)
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
