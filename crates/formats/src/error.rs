//! The error every reader returns: one line naming the file and the place, with echoes of the
//! input cut short ([`excerpt`], [`cut_echoes`]).

/// Most characters of input an error message repeats (a name, a field, a line): longer echoes
/// are cut, so a 100 MB field or a secret file is never printed whole.
pub const MAX_ECHO_CHARS: usize = 80;

/// Longest message a [`FormatError::input`] carries, characters (after [`cut_echoes`]).
pub const MAX_MESSAGE_CHARS: usize = 1_000;

/// Invalid or unreadable input. Every message names the file and the place.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Invalid input: a file, a field, a node, a queue. The message names the file and place.
    #[error("{0}")]
    Input(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Several problems, one line each (a validation that reports everything at once).
    #[error("{}", .0.join("\nerror: "))]
    Problems(Vec<String>),
}

impl FormatError {
    /// An input error about `file`: `file: message`, on one line, quoted echoes of the input cut
    /// to [`MAX_ECHO_CHARS`].
    pub fn input(file: impl std::fmt::Display, message: impl std::fmt::Display) -> Self {
        Self::Input(cut_echoes(&one_line(&format!("{file}: {message}"))))
    }
}

/// Collapse a message to one line (parsers' messages sometimes carry newlines).
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A number as a message shows it: plain (`0.5`, `1000`), or in exponent form when plain
/// notation would run to hundreds of digits (`1e-300`, `1e300`).
pub fn show_number(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-6..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// The input text `s` as an error message may repeat it: on one line (control characters shown
/// as `\u{…}` escapes), at most [`MAX_ECHO_CHARS`] characters, `…` marking a cut. The one helper
/// every echo of input goes through.
pub fn excerpt(s: &str) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n == MAX_ECHO_CHARS {
            out.push('…');
            return out;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `message` with every quoted echo (between `"…"` or `` `…` ``) longer than
/// [`MAX_ECHO_CHARS`] cut by [`excerpt`], and the whole cut to [`MAX_MESSAGE_CHARS`]: parsers
/// quote the input they choke on (`invalid type: string "…"`), which may be a whole file.
pub fn cut_echoes(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE_CHARS + 8));
    let mut rest = message;
    while let Some(open) = rest.find(['"', '`']) {
        let quote = rest[open..].chars().next().unwrap_or('"');
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        match after.find(quote) {
            Some(close) => {
                let inner = &after[..close];
                if inner.chars().count() > MAX_ECHO_CHARS {
                    out.push_str(&excerpt(inner));
                } else {
                    out.push_str(inner);
                }
                out.push(quote);
                rest = &after[close + 1..];
            }
            None => {
                // An unbalanced quote: what follows is an echo of unknown length.
                out.push_str(&excerpt(after));
                rest = "";
            }
        }
        if out.len() > MAX_MESSAGE_CHARS * 4 {
            break;
        }
    }
    out.push_str(rest);
    if out.chars().count() > MAX_MESSAGE_CHARS {
        let cut: String = out.chars().take(MAX_MESSAGE_CHARS).collect();
        return format!("{cut}…");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_cuts_at_80_characters_and_escapes_controls() {
        assert_eq!(excerpt("gpu-1"), "gpu-1");
        assert_eq!(excerpt("a\nb\0"), "a\\nb\\u{0}");
        let long = "x".repeat(200);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), MAX_ECHO_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn quoted_echoes_are_cut_and_short_ones_kept() {
        let secret = "s".repeat(500);
        let m = cut_echoes(&format!(
            "invalid type: string \"{secret}\", expected a map"
        ));
        assert!(m.len() < 200, "{m}");
        assert!(m.ends_with("…\", expected a map"), "{m}");
        assert_eq!(cut_echoes("node `gpu-1`: bad"), "node `gpu-1`: bad");
        let open = cut_echoes(&format!("got \"{secret}"));
        assert!(open.len() < 200, "{open}");
    }

    #[test]
    fn input_errors_are_cut() {
        let e = FormatError::input("f.yaml", format!("got `{}`", "z".repeat(10_000)));
        assert!(e.to_string().len() < 200);
    }
}

/// A problem with one field of a document: the dotted path and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldProblem {
    /// Dotted path, e.g. `spec.template.metadata.annotations[kueue.x-k8s.io/podset-slice-size]`.
    pub field: String,
    /// What is wrong and what is expected.
    pub message: String,
}

impl std::fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}
