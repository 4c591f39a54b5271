//! The node failure file of `simulate --failures`: CSV `time_s,node,duration_s`, one failure per
//! row (seconds since the trace's first arrival, the node's name as in the cluster, e.g. `philly-000`, seconds
//! down). The header is required; blank lines and lines starting with `#` are skipped.

use std::collections::BTreeMap;
use std::path::Path;

use sim::failures::NodeFailure;
use topology::{Cluster, NodeId};

use crate::error::{excerpt, FormatError};
use crate::input::read_text;

/// The header a failure file starts with.
pub const HEADER: &str = "time_s,node,duration_s";

/// Read a failure file for `cluster`.
pub fn read_failures(path: &Path, cluster: &Cluster) -> Result<Vec<NodeFailure>, FormatError> {
    let text = read_text(path)?;
    parse_failures(&path.display().to_string(), &text, cluster)
}

/// Parse a failure file's text; `file` names it in errors, which give the line.
pub fn parse_failures(
    file: &str,
    text: &str,
    cluster: &Cluster,
) -> Result<Vec<NodeFailure>, FormatError> {
    let nodes: BTreeMap<&str, NodeId> = cluster
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), NodeId(i as u32)))
        .collect();
    let mut out = Vec::new();
    let mut header_seen = false;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = format!("{file}: line {}", n + 1);
        if !header_seen {
            let cols: Vec<&str> = line.split(',').map(str::trim).collect();
            if cols != ["time_s", "node", "duration_s"] {
                return Err(FormatError::input(
                    &at,
                    format!("expected the header `{HEADER}`, got \"{}\"", excerpt(line)),
                ));
            }
            header_seen = true;
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [time, node, duration] = fields.as_slice() else {
            return Err(FormatError::input(
                &at,
                format!(
                    "expected 3 fields `{HEADER}`, got {}: \"{}\"",
                    fields.len(),
                    excerpt(line)
                ),
            ));
        };
        let seconds = |name: &str, v: &str, positive: bool| {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && (*x > 0.0 || (!positive && *x == 0.0)))
                .ok_or_else(|| {
                    let what = if positive { "positive" } else { "non-negative" };
                    FormatError::input(
                        &at,
                        format!(
                            "{name}: expected a {what} number of seconds, got \"{}\"",
                            excerpt(v)
                        ),
                    )
                })
        };
        let at_s = seconds("time_s", time, false)?;
        let duration_s = seconds("duration_s", duration, true)?;
        let Some(&id) = nodes.get(node) else {
            return Err(FormatError::input(
                &at,
                format!(
                    "node: no node \"{}\" in the cluster (its nodes are named like \"{}\")",
                    excerpt(node),
                    cluster.nodes.first().map_or("", |n| n.name.as_str())
                ),
            ));
        };
        out.push(NodeFailure {
            at_s,
            node: id,
            duration_s,
        });
    }
    if !header_seen {
        return Err(FormatError::input(
            file,
            format!("empty: expected the header `{HEADER}` and a row per failure"),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Cluster {
        crate::cluster::preset("--cluster", "fat-tree-k8")
            .unwrap()
            .cluster
    }

    #[test]
    fn rows_name_nodes_and_bad_rows_give_the_line() {
        let c = cluster();
        let first = c.nodes[0].name.clone();
        let last = c.nodes[c.nodes.len() - 1].name.clone();
        let text = format!("{HEADER}\n# a comment\n\n10,{first},60\n0,{last},0.5\n");
        let v = parse_failures("f.csv", &text, &c).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].at_s, v[0].node, v[0].duration_s),
            (10.0, NodeId(0), 60.0)
        );
        assert_eq!(v[1].node, NodeId(c.nodes.len() as u32 - 1));
        let err = |t: &str| parse_failures("f.csv", t, &c).unwrap_err().to_string();
        let e = err(&format!("{HEADER}\n1,{first},5\n2,nosuch,5\n"));
        assert!(
            e.contains("f.csv: line 3") && e.contains("\"nosuch\""),
            "{e}"
        );
        let e = err(&format!("{HEADER}\nx,{first},5\n"));
        assert!(e.contains("line 2") && e.contains("time_s"), "{e}");
        let e = err(&format!("{HEADER}\n-1,{first},5\n"));
        assert!(e.contains("time_s: expected a non-negative"), "{e}");
        let e = err(&format!("{HEADER}\n1,{first},0\n"));
        assert!(e.contains("duration_s: expected a positive"), "{e}");
        let e = err(&format!("{HEADER}\n1,{first}\n"));
        assert!(e.contains("expected 3 fields"), "{e}");
        let e = err("time,node,duration\n");
        assert!(
            e.contains("line 1") && e.contains("expected the header"),
            "{e}"
        );
        let e = err("\n# nothing\n");
        assert!(e.contains("empty"), "{e}");
    }
}
