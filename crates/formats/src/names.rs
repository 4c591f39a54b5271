//! Identifiers on their way out: the rules of each destination (RFC 1123 names, Kubernetes label
//! values, Slurm host names) and shell quoting. Every generator that writes a name into a
//! script, a label or a manifest checks it here first or quotes it.

/// Most bytes of any Kubernetes name (an RFC 1123 subdomain; Kubernetes' validation counts
/// bytes).
pub const MAX_KUBERNETES_NAME_BYTES: usize = 253;

/// Why `name` can never be a Kubernetes name of any kind (`is empty`, `is N bytes, …`,
/// `holds a control character`), or `None`: the rules no object passes, whatever its kind's
/// stricter ones (for job and queue names, which the peers check per kind, and the names of
/// trace rows, which reach reports, JSON and scripts).
pub fn never_a_kubernetes_name(name: &str) -> Option<String> {
    never_a_kubernetes_name_parts("", name)
}

/// [`never_a_kubernetes_name`] of `prefix` followed by `value`, without putting them together.
fn never_a_kubernetes_name_parts(prefix: &str, value: &str) -> Option<String> {
    let bytes = prefix.len() + value.len();
    if bytes == 0 {
        Some("is empty".to_owned())
    } else if bytes > MAX_KUBERNETES_NAME_BYTES {
        Some(format!(
            "is {bytes} bytes, more than the {MAX_KUBERNETES_NAME_BYTES} of any Kubernetes name"
        ))
    } else if prefix.chars().chain(value.chars()).any(char::is_control) {
        Some("holds a control character".to_owned())
    } else {
        None
    }
}

/// [`never_a_kubernetes_name`] as a message about the `what` (`job name`, `queue name`):
/// "the job name `…` is empty; it can never be a Kubernetes name" (the name cut by
/// [`crate::excerpt`]).
pub fn check_kubernetes_name(what: &str, name: &str) -> Result<(), String> {
    check_prefixed_kubernetes_name(what, "", name)
}

/// [`check_kubernetes_name`] of the name `prefix` + `value` (a trace row's `vc-` + its
/// cluster), allocating only for the message of a bad one.
pub fn check_prefixed_kubernetes_name(what: &str, prefix: &str, value: &str) -> Result<(), String> {
    match never_a_kubernetes_name_parts(prefix, value) {
        None => Ok(()),
        Some(why) => Err(format!(
            "the {what} `{}` {why}; it can never be a Kubernetes name",
            crate::excerpt(&format!("{prefix}{value}"))
        )),
    }
}

/// Check an RFC 1123 DNS subdomain (a Kubernetes object or Node name): at most 253 characters,
/// dot-separated labels of lowercase letters, digits and `-`, each 1..=63 characters, starting
/// and ending with a letter or digit. Returns why not.
pub fn check_dns_subdomain(name: &str) -> Result<(), String> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(
            "not an RFC 1123 name (lowercase letters, digits, `-` and `.`, at most 253 characters)"
                .to_owned(),
        );
    }
    Ok(())
}

/// Check an RFC 1123 DNS label (a Kubernetes container name, a Service name): 1..=63
/// lowercase letters, digits and `-`, starting and ending with a letter or digit. Returns why
/// not.
pub fn check_dns_label(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not an RFC 1123 label (1..=63 lowercase letters, digits and `-`, starting and ending with a letter or digit)",
            crate::excerpt(name)
        ))
    }
}

/// Check a Kubernetes label value: empty, or at most 63 characters of letters, digits, `-`,
/// `_` and `.`, starting and ending with a letter or digit. Returns why not.
pub fn check_label_value(value: &str) -> Result<(), String> {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if value.is_empty() {
        return Ok(());
    }
    if value.len() > 63
        || !value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        || !alnum(value.chars().next())
        || !alnum(value.chars().last())
    {
        return Err(format!(
            "label value `{}` must be at most 63 characters, letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit",
            crate::excerpt(value)
        ));
    }
    Ok(())
}

/// Check a host name for files other tools parse by words (Slurm `topology.conf`, hostfiles):
/// 1..=253 characters of ASCII letters, digits, `-`, `_` and `.`. Returns why not.
pub fn check_host_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 253
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!(
            "node name `{}` is not a host name (letters, digits, `-`, `_`, `.`)",
            crate::excerpt(name)
        ));
    }
    Ok(())
}

/// A word for `sh`: bare when it holds only characters the shell takes literally, else
/// single-quoted (a `'` inside becomes `'\''`). Newlines, `$(…)`, backquotes and quotes are then
/// data, never syntax.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:,=@%+[]".contains(c));
    if safe && !s.starts_with('=') {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Text for a `#` comment line of a generated file: control characters (a newline would end
/// the comment and start a command) shown as escapes.
pub fn comment_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_are_refused_or_quoted() {
        for bad in ["a\nrm -rf /", "$(id)", "a b", "A", "-a", "a..b", "a\0b", ""] {
            assert!(check_dns_subdomain(bad).is_err(), "{bad:?}");
        }
        for good in ["gpu-0001", "node-1.rack-2", "a"] {
            assert!(check_dns_subdomain(good).is_ok(), "{good:?}");
        }
        for bad in ["has space", "x\0", "`id`", "'q'", "-lead", &"v".repeat(64)] {
            assert!(check_label_value(bad).is_err(), "{bad:?}");
        }
        assert!(check_label_value("lb-3").is_ok());
        for bad in [
            "",
            "Trainer",
            "my_trainer",
            "-a",
            "a-",
            &"a".repeat(64),
            "a.b",
        ] {
            assert!(check_dns_label(bad).is_err(), "{bad:?}");
        }
        assert!(check_dns_label("trainer-0").is_ok());
        assert!(check_host_name("a;b").is_err());
        assert_eq!(shell_quote("$(id)"), "'$(id)'");
        assert_eq!(shell_quote("a\nb"), "'a\nb'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("gpu-1"), "gpu-1");
        assert_eq!(comment_text("a\nkill"), "a\\nkill");
    }

    #[test]
    fn names_no_kubernetes_object_can_have() {
        for (name, why) in [
            ("", Some("is empty")),
            ("a".repeat(253).as_str(), None),
            (
                "a".repeat(254).as_str(),
                Some("is 254 bytes, more than the 253 of any Kubernetes name"),
            ),
            // 127 two-byte characters: 254 bytes, as Kubernetes counts.
            (
                "\u{e9}".repeat(127).as_str(),
                Some("is 254 bytes, more than the 253 of any Kubernetes name"),
            ),
            ("team\ta", Some("holds a control character")),
            ("a\nb", Some("holds a control character")),
            ("x\u{7f}", Some("holds a control character")),
            ("odd name/with:chars", None),
        ] {
            assert_eq!(never_a_kubernetes_name(name).as_deref(), why, "{name:?}");
        }
        assert_eq!(
            check_kubernetes_name("queue name", "q\u{7}"),
            Err("the queue name `q\\u{7}` holds a control character; it can never be a Kubernetes name".to_owned())
        );
    }
}
