//! Slurm `topology.conf`: topology/tree (`SwitchName=… Switches=…|Nodes=…`) and topology/block
//! (`BlockName=… Nodes=…`, `BlockSizes=…`), written from a cluster's levels and read back.

use topology::{Cluster, DomainId};

use crate::hostlist;

/// The Slurm switch name of a domain: its path of label values, sanitised, joined by `_`.
fn switch_name(cluster: &Cluster, d: DomainId) -> String {
    let mut parts = Vec::new();
    let mut cur = Some(d);
    while let Some(id) = cur {
        let dom = cluster.domain(id);
        parts.push(sanitize(&dom.value));
        cur = dom.parent;
    }
    parts.reverse();
    parts.join("_")
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Levels that are switch levels (not the host level), top first.
fn switch_levels(cluster: &Cluster) -> Vec<usize> {
    (0..cluster.levels.len())
        .filter(|&l| Some(l) != cluster.host_level)
        .collect()
}

/// topology/tree: one switch per domain of every non-host level (and a `root` switch when the
/// top level has several domains), leaf switches listing their nodes.
pub fn export_tree(cluster: &Cluster) -> String {
    let levels = switch_levels(cluster);
    let mut out = format!(
        "# topology.conf (topology/tree) for {} — written by railyard\n",
        cluster.name
    );
    let Some(&lowest) = levels.last() else {
        let names: Vec<&str> = cluster.nodes.iter().map(|n| n.name.as_str()).collect();
        out.push_str(&format!(
            "SwitchName=root Nodes={}\n",
            hostlist::compress(&names)
        ));
        return out;
    };
    for &l in levels.iter().rev() {
        for &d in &cluster.levels[l].domains {
            let dom = cluster.domain(d);
            let name = switch_name(cluster, d);
            if l == lowest {
                let names: Vec<&str> = dom
                    .nodes
                    .iter()
                    .map(|&n| cluster.node(n).name.as_str())
                    .collect();
                out.push_str(&format!(
                    "SwitchName={name} Nodes={}\n",
                    hostlist::compress(&names)
                ));
            } else {
                let kids: Vec<String> = dom
                    .children
                    .iter()
                    .map(|&c| switch_name(cluster, c))
                    .collect();
                out.push_str(&format!("SwitchName={name} Switches={}\n", kids.join(",")));
            }
        }
    }
    let top = &cluster.levels[levels[0]].domains;
    if top.len() > 1 {
        let kids: Vec<String> = top.iter().map(|&c| switch_name(cluster, c)).collect();
        out.push_str(&format!("SwitchName=root Switches={}\n", kids.join(",")));
    }
    out
}

/// topology/block: one block per domain of the lowest non-host level, and `BlockSizes` listing
/// the node counts of each higher level's domains when they are power-of-two multiples of the
/// base block (Slurm's rule for aggregated blocks).
pub fn export_block(cluster: &Cluster) -> String {
    let levels = switch_levels(cluster);
    let mut out = format!(
        "# topology.conf (topology/block) for {} — written by railyard\n",
        cluster.name
    );
    let Some(&lowest) = levels.last() else {
        let names: Vec<&str> = cluster.nodes.iter().map(|n| n.name.as_str()).collect();
        out.push_str(&format!(
            "BlockName=block0 Nodes={}\n",
            hostlist::compress(&names)
        ));
        return out;
    };
    for &d in &cluster.levels[lowest].domains {
        let names: Vec<&str> = cluster
            .domain(d)
            .nodes
            .iter()
            .map(|&n| cluster.node(n).name.as_str())
            .collect();
        out.push_str(&format!(
            "BlockName={} Nodes={}\n",
            switch_name(cluster, d),
            hostlist::compress(&names)
        ));
    }
    let size = |l: usize| -> Option<usize> {
        let mut sizes = cluster.levels[l]
            .domains
            .iter()
            .map(|&d| cluster.domain(d).nodes.len());
        let first = sizes.next()?;
        sizes.all(|s| s == first).then_some(first)
    };
    if let Some(base) = size(lowest) {
        let mut sizes = vec![base];
        for &l in levels.iter().rev().skip(1) {
            match size(l) {
                Some(s) if s % base == 0 && (s / base).is_power_of_two() => sizes.push(s),
                _ => break,
            }
        }
        if levels.len() == 1 || sizes.len() > 1 || cluster.levels[levels[0]].domains.len() > 1 {
            let list: Vec<String> = sizes.iter().map(usize::to_string).collect();
            out.push_str(&format!("BlockSizes={}\n", list.join(",")));
        }
    } else {
        out.push_str("# blocks differ in size: BlockSizes left to Slurm's default\n");
    }
    out
}

/// A switch line of a topology/tree file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeSwitch {
    /// `SwitchName`.
    pub name: String,
    /// Child switches (expanded).
    pub switches: Vec<String>,
    /// Nodes (expanded).
    pub nodes: Vec<String>,
}

/// Parse a topology/tree file (comments and `LinkSpeed` ignored). All its hostlists together
/// expand to at most [`hostlist::MAX_EXPANSION`] names.
pub fn parse_tree(text: &str) -> Result<Vec<TreeSwitch>, String> {
    let mut out = Vec::new();
    let mut names_left = hostlist::MAX_EXPANSION;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut sw = TreeSwitch {
            name: String::new(),
            switches: Vec::new(),
            nodes: Vec::new(),
        };
        for field in line.split_whitespace() {
            let (k, v) = field
                .split_once('=')
                .ok_or_else(|| format!("line {}: expected Key=Value, got `{field}`", i + 1))?;
            match k.to_ascii_lowercase().as_str() {
                "switchname" => sw.name = v.to_owned(),
                "switches" => {
                    sw.switches = hostlist::expand_within(v, names_left)
                        .map_err(|e| format!("line {}: {e}", i + 1))?;
                    names_left -= sw.switches.len();
                }
                "nodes" => {
                    sw.nodes = hostlist::expand_within(v, names_left)
                        .map_err(|e| format!("line {}: {e}", i + 1))?;
                    names_left -= sw.nodes.len();
                }
                "linkspeed" => {}
                other => return Err(format!("line {}: unknown key `{other}`", i + 1)),
            }
        }
        if sw.name.is_empty() {
            return Err(format!("line {}: missing SwitchName", i + 1));
        }
        out.push(sw);
    }
    Ok(out)
}
