//! Slurm `topology.conf`: topology/tree (`SwitchName=… Switches=…|Nodes=…`) and topology/block
//! (`BlockName=… Nodes=…`, `BlockSizes=…`), written from a cluster's levels and read back, for
//! the slurm check and as a `--cluster` (nodes from the file, hardware from `--shape`).

use topology::{Cluster, DomainId};

use crate::hostlist;
use crate::FormatError;

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

/// Levels that are switch levels (not the host level nor an NVLink level, which has no
/// switches), top first.
fn switch_levels(cluster: &Cluster) -> Vec<usize> {
    (0..cluster.levels.len())
        .filter(|&l| Some(l) != cluster.host_level && !cluster.levels[l].nvlink)
        .collect()
}

/// The domains of the next switch level down under `d`: its children, or theirs where a child
/// is in an NVLink level.
fn switch_children(cluster: &Cluster, d: DomainId) -> Vec<DomainId> {
    let mut out = Vec::new();
    for &c in &cluster.domain(d).children {
        if cluster.levels[cluster.domain(c).level].nvlink {
            out.extend(switch_children(cluster, c));
        } else {
            out.push(c);
        }
    }
    out
}

/// topology/tree: one switch per domain of every switch level (and a `root` switch when the
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
                let kids: Vec<String> = switch_children(cluster, d)
                    .into_iter()
                    .map(|c| switch_name(cluster, c))
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

/// topology/block: one block per domain of the lowest switch level, and `BlockSizes` listing
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

/// The label key railyard gives a node for its switch at tree level `k` (0 = top) when it
/// reads a topology/tree file as a cluster.
pub fn tree_level_label(k: usize) -> String {
    format!("railyard/slurm-switch-{k}")
}

/// Whether `text` is a Slurm topology.conf: its first line that is not blank or a comment
/// starts with `SwitchName=`, `BlockName=` or `BlockSizes=`.
pub fn is_topology_conf(text: &str) -> bool {
    let first = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .find(|l| !l.is_empty());
    first.is_some_and(|l| {
        let key = l.split('=').next().unwrap_or("").to_ascii_lowercase();
        matches!(key.as_str(), "switchname" | "blockname" | "blocksizes")
    })
}

/// A topology.conf read as a cluster: one Kubernetes Node object per node, labelled with its
/// domain at every level (top first, `kubernetes.io/hostname` last), and the level keys for
/// the NodeList import. Each node allocates `gpus` GPUs and has instance type `shape` (the
/// file has no hardware). Tree files: every leaf switch at the same depth; a single top switch
/// named `root` (railyard's export adds it above several top domains) is not a level. Block files: a level of blocks, and one level per larger
/// `BlockSizes` entry grouping consecutive blocks. Errors name `file:line`.
pub fn read_topology_conf(
    file: &str,
    text: &str,
    shape: &str,
    gpus: u32,
) -> Result<(Vec<serde_json::Value>, Vec<String>), FormatError> {
    let at = |line: usize, msg: String| FormatError::input(format!("{file}:{line}"), msg);
    // Line numbers of the lines parse_tree and the block reader look at, in order.
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim()))
        .filter(|(_, l)| !l.is_empty())
        .collect();
    let block = lines
        .first()
        .is_some_and(|(_, l)| !l.to_ascii_lowercase().starts_with("switchname="));
    let (paths, keys) = if block {
        read_blocks(&lines, &at)?
    } else {
        read_tree(text, &lines, &at)?
    };
    let mut keys = keys;
    keys.push("kubernetes.io/hostname".to_owned());
    let nodes = paths
        .into_iter()
        .map(|(node, path)| {
            let mut labels = serde_json::Map::new();
            for (k, v) in keys.iter().zip(path) {
                labels.insert(k.clone(), v.into());
            }
            labels.insert("kubernetes.io/hostname".to_owned(), node.clone().into());
            labels.insert(crate::k8s::INSTANCE_TYPE_LABEL.to_owned(), shape.into());
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": { "name": node, "labels": labels },
                "status": { "allocatable": { "nvidia.com/gpu": gpus.to_string() } },
            })
        })
        .collect();
    Ok((nodes, keys))
}

/// Each node (in file order) with its domain names top first, and the level keys.
type NodePaths = (Vec<(String, Vec<String>)>, Vec<String>);

fn read_tree(
    text: &str,
    lines: &[(usize, &str)],
    at: &dyn Fn(usize, String) -> FormatError,
) -> Result<NodePaths, FormatError> {
    let switches = parse_tree(text).map_err(|e| match e.strip_prefix("line ") {
        Some(rest) => match rest.split_once(": ") {
            Some((n, msg)) => at(n.parse().unwrap_or(0), msg.to_owned()),
            None => at(0, e.clone()),
        },
        None => at(0, e.clone()),
    })?;
    let line = |i: usize| lines.get(i).map_or(0, |(n, _)| *n);
    let mut index = std::collections::BTreeMap::new();
    for (i, s) in switches.iter().enumerate() {
        if index.insert(s.name.as_str(), i).is_some() {
            return Err(at(line(i), format!("switch `{}` is defined twice", s.name)));
        }
    }
    let mut parent: Vec<Option<usize>> = vec![None; switches.len()];
    for (i, s) in switches.iter().enumerate() {
        if !s.switches.is_empty() && !s.nodes.is_empty() {
            return Err(at(
                line(i),
                format!(
                    "switch `{}` has both Switches= and Nodes=; expected one",
                    s.name
                ),
            ));
        }
        for c in &s.switches {
            let &j = index.get(c.as_str()).ok_or_else(|| {
                at(
                    line(i),
                    format!("switch `{}`: child switch `{c}` is not defined", s.name),
                )
            })?;
            if parent[j].replace(i).is_some() || j == i {
                return Err(at(
                    line(i),
                    format!("switch `{c}` has more than one parent"),
                ));
            }
        }
    }
    // Each switch's path from its top switch; a cycle has no top.
    let path = |mut i: usize| -> Option<Vec<usize>> {
        let mut p = vec![i];
        while let Some(up) = parent[i] {
            if p.len() > switches.len() {
                return None;
            }
            p.push(up);
            i = up;
        }
        p.reverse();
        Some(p)
    };
    // railyard's export adds a top switch `root` when the top level has several domains: it
    // is the whole cluster, not a level.
    let tops: Vec<usize> = (0..switches.len())
        .filter(|&i| parent[i].is_none())
        .collect();
    let drop_root = matches!(tops.as_slice(), [t] if switches[*t].name == "root");
    let mut depth = None;
    let mut seen = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for (i, s) in switches
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.nodes.is_empty())
    {
        let p = path(i).ok_or_else(|| at(line(i), format!("switch `{}` is in a cycle", s.name)))?;
        match depth {
            None => depth = Some(p.len()),
            Some(d) if d != p.len() => {
                return Err(at(line(i), format!("leaf switch `{}` is at depth {}, other leaves at depth {d}; railyard needs every leaf at one depth", s.name, p.len())));
            }
            Some(_) => {}
        }
        // A value is the switch name without its parent's name and `_` (railyard's export
        // joins the path so).
        let mut values = Vec::new();
        for (k, &sw) in p.iter().enumerate() {
            let name = &switches[sw].name;
            let value = match k.checked_sub(1).map(|u| &switches[p[u]].name) {
                Some(up) if !(drop_root && k == 1) => {
                    name.strip_prefix(&format!("{up}_")).unwrap_or(name)
                }
                _ => name,
            };
            values.push(value.to_owned());
        }
        if drop_root {
            values.remove(0);
        }
        for n in &s.nodes {
            if let Some(other) = seen.insert(n.clone(), s.name.clone()) {
                return Err(at(
                    line(i),
                    format!("node `{n}` is also under switch `{other}`"),
                ));
            }
            out.push((n.clone(), values.clone()));
        }
    }
    let levels = depth.unwrap_or(0) - usize::from(drop_root && depth.is_some());
    if out.is_empty() {
        return Err(at(
            line(0),
            "no switch lists Nodes=; expected at least one leaf switch".to_owned(),
        ));
    }
    Ok((out, (0..levels).map(tree_level_label).collect()))
}

fn read_blocks(
    lines: &[(usize, &str)],
    at: &dyn Fn(usize, String) -> FormatError,
) -> Result<NodePaths, FormatError> {
    let mut blocks: Vec<(usize, String, Vec<String>)> = Vec::new();
    let mut sizes: Vec<(usize, usize)> = Vec::new();
    let mut names_left = hostlist::MAX_EXPANSION;
    for &(n, l) in lines {
        let mut name = None;
        let mut nodes = Vec::new();
        for field in l.split_whitespace() {
            let (k, v) = field
                .split_once('=')
                .ok_or_else(|| at(n, format!("expected Key=Value, got `{field}`")))?;
            match k.to_ascii_lowercase().as_str() {
                "blockname" => name = Some(v.to_owned()),
                "nodes" => {
                    nodes = hostlist::expand_within(v, names_left).map_err(|e| at(n, e))?;
                    names_left -= nodes.len();
                }
                "blocksizes" => {
                    for s in v.split(',') {
                        let size = s
                            .trim()
                            .parse()
                            .ok()
                            .filter(|&s: &usize| s > 0)
                            .ok_or_else(|| {
                                at(
                                    n,
                                    format!("BlockSizes: expected positive node counts, got `{s}`"),
                                )
                            })?;
                        sizes.push((n, size));
                    }
                }
                other => {
                    return Err(at(
                        n,
                        format!("unknown key `{other}`; expected BlockName, Nodes or BlockSizes"),
                    ))
                }
            }
        }
        if let Some(name) = name {
            blocks.push((n, name, nodes));
        } else if sizes.is_empty() {
            return Err(at(n, "missing BlockName".to_owned()));
        }
    }
    let base = blocks.first().map_or(0, |b| b.2.len());
    let mut keys = vec!["railyard/slurm-block".to_owned()];
    let mut groups = Vec::new();
    for &(n, s) in sizes.iter().skip(1) {
        if base == 0 || s % base != 0 || blocks.iter().any(|b| b.2.len() != base) {
            return Err(at(
                n,
                format!("BlockSizes entry {s} is not a multiple of equal blocks of {base} nodes"),
            ));
        }
        keys.insert(0, format!("railyard/slurm-blocks-{s}"));
        groups.insert(0, s / base);
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for (b, (n, name, nodes)) in blocks.iter().enumerate() {
        let mut values: Vec<String> = groups.iter().map(|g| format!("group{}", b / g)).collect();
        values.push(name.clone());
        for node in nodes {
            if !seen.insert(node.clone()) {
                return Err(at(*n, format!("node `{node}` is in two blocks")));
            }
            out.push((node.clone(), values.clone()));
        }
    }
    Ok((out, keys))
}
