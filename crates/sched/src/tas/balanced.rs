//! Kueue's balanced placement (feature gate `TASBalancedPlacement`, [`crate::PlaceOptions::
//! balanced`]) for preferred pod sets: among the domains under one parent, find the fewest that
//! hold the pods, then give each of them at least an equal share (the threshold) before any
//! gets more. A port of the rules of Kueue's `tas_balanced_placement.go`; when no balanced
//! placement exists the caller falls back to BestFit.

use std::collections::BTreeMap;

use super::{sorted_entries, Cnt, Count, Request, State, Tree, E};

/// The fit level and domains of a balanced placement, with the state they were chosen in.
pub(super) fn place(tree: &Tree, st: &State, req: &Request) -> Option<(State, Vec<E>, usize)> {
    let (mut cand, fit, threshold) = best_domains(tree, st, req)?;
    let slices = req.count / req.slice_size;
    let level = req.search_level;
    let (domains, fit_level) = if level < req.slice_level {
        let chosen = optimal_set(tree, &cand, &fit, slices, req, Some(level))?;
        let lower = chosen
            .iter()
            .flat_map(|&d| tree.children(d, level))
            .collect();
        (lower, level + 1)
    } else {
        (fit, level)
    };
    let placed = slices_balanced(tree, &mut cand, &domains, slices, req, threshold)?;
    Some((cand, placed, fit_level))
}

/// Greedy check: whether the domains hold the slices (and leaders), how many it takes, and the
/// last domain taken with and without the leader.
fn greedy(
    tree: &Tree,
    st: &State,
    domains: &[E],
    slices: Count,
    leaders: Count,
) -> Option<(Count, Option<E>, Option<E>)> {
    let (mut selected, mut rem, mut rem_leaders) = (0, slices, leaders);
    let (mut last_with_leader, mut last) = (None, None);
    let without = if leaders > 0 {
        let sorted = sorted_entries(tree, st, domains.to_vec(), false, true);
        let mut idx = 0;
        while rem_leaders > 0 && idx < sorted.len() && st.c[sorted[idx]].leader > 0 {
            let d = sorted[idx];
            selected += 1;
            last_with_leader = Some(d);
            rem_leaders -= st.c[d].leader;
            rem -= st.c[d].slice_wl;
            idx += 1;
        }
        sorted_entries(tree, st, sorted[idx..].to_vec(), false, false)
    } else {
        sorted_entries(tree, st, domains.to_vec(), false, false)
    };
    if rem_leaders > 0 {
        return None;
    }
    for &d in &without {
        if rem <= 0 || st.c[d].slice <= 0 {
            break;
        }
        selected += 1;
        last = Some(d);
        rem -= st.c[d].slice;
    }
    (rem <= 0).then_some((selected, last_with_leader, last))
}

fn threshold_of(st: &State, slices: Count, greedy: (Count, Option<E>, Option<E>)) -> Count {
    let (selected, last_with_leader, last) = greedy;
    let mut t = if selected > 0 { slices / selected } else { 0 };
    if let Some(d) = last_with_leader {
        t = t.min(st.c[d].slice_wl);
    }
    if let Some(d) = last {
        t = t.min(st.c[d].slice);
    }
    t
}

/// The groups of sibling domains at the requested level, the one allowing the highest
/// threshold (then the fewest domains) with its pruned state.
fn best_domains(tree: &Tree, st: &State, req: &Request) -> Option<(State, Vec<E>, Count)> {
    let level = req.search_level;
    let slices = req.count / req.slice_size;
    let leaders = req.leader_count;
    let groups: Vec<Vec<E>> = if level == 0 {
        vec![tree.entries_at(0)]
    } else {
        let mut parents = tree.entries_at(level - 1);
        parents.sort_by_key(|&e| tree.order(e));
        parents
            .into_iter()
            .map(|p| tree.children(p, level - 1))
            .collect()
    };
    let mut best: Option<(State, Vec<E>, Count)> = None;
    let (mut best_threshold, mut best_count) = (0, 0);
    for group in groups {
        let lower: Vec<E> = if level < req.slice_level {
            group
                .iter()
                .flat_map(|&d| tree.children(d, level))
                .collect()
        } else {
            group.clone()
        };
        let Some(g) = greedy(tree, st, &lower, slices, leaders) else {
            continue;
        };
        let mut threshold = threshold_of(st, slices, g);
        let reserved = match g.2 {
            Some(last) if leaders > 0 => threshold.min(st.c[last].slice_wl),
            _ => threshold,
        };
        if threshold < best_threshold {
            continue;
        }
        let mut cand = st.clone();
        prune(tree, &mut cand, &group, threshold, req, level);
        let mut fit = greedy(tree, &cand, &group, slices, leaders);
        if fit.is_none() && reserved < threshold {
            if reserved <= 0 || reserved < best_threshold {
                continue;
            }
            threshold = reserved;
            cand = st.clone();
            prune(tree, &mut cand, &group, threshold, req, level);
            fit = greedy(tree, &cand, &group, slices, leaders);
        }
        let Some((count, _, _)) = fit else {
            continue;
        };
        if threshold > best_threshold || (threshold == best_threshold && count < best_count) {
            best_threshold = threshold;
            best_count = count;
            best = Some((cand, group, threshold));
        }
    }
    best.filter(|b| b.2 > 0)
}

/// The fewest domains that hold the slices (and leaders) with the least left over, found by
/// dynamic programming over the domains in label order (or by capacity and evenness of their
/// children, `entropy_level` = their level).
fn optimal_set(
    tree: &Tree,
    st: &State,
    domains: &[E],
    slices: Count,
    req: &Request,
    entropy_level: Option<usize>,
) -> Option<Vec<E>> {
    let leaders = req.leader_count;
    let (n, _, _) = greedy(tree, st, domains, slices, leaders)?;
    let n = n as usize;
    let mut ordered = domains.to_vec();
    match entropy_level {
        Some(level) => ordered.sort_by(|&a, &b| {
            let (ca, cb) = (&st.c[a], &st.c[b]);
            cb.leader
                .cmp(&ca.leader)
                .then(cb.slice_wl.cmp(&ca.slice_wl))
                .then_with(|| {
                    let (ea, eb) = (entropy(tree, st, a, level), entropy(tree, st, b, level));
                    eb.partial_cmp(&ea).unwrap_or(std::cmp::Ordering::Equal)
                })
                .then(tree.order(a).cmp(&tree.order(b)))
        }),
        None => ordered.sort_by_key(|&e| tree.order(e)),
    }
    // placements[i][leaders left][pods left] = the first i domains found to leave that much.
    type Table = BTreeMap<Count, BTreeMap<Count, Vec<E>>>;
    let mut placements: Vec<Table> = vec![BTreeMap::new(); n + 1];
    placements[0]
        .entry(leaders)
        .or_default()
        .insert(slices * req.slice_size, Vec::new());
    for &d in &ordered {
        let c = st.c[d];
        for i in (1..=n).rev() {
            let before: Vec<(Count, Count, Vec<E>)> = placements[i - 1]
                .iter()
                .flat_map(|(&l, m)| m.iter().map(move |(&p, v)| (l, p, v.clone())))
                .collect();
            for (before_leaders, before_pods, mut placement) in before {
                if before_leaders <= 0 && before_pods <= 0 {
                    continue;
                }
                placement.push(d);
                if before_leaders > 0 && c.leader > 0 {
                    placements[i]
                        .entry(before_leaders - c.leader)
                        .or_default()
                        .entry(before_pods - c.pod_wl)
                        .or_insert_with(|| placement.clone());
                }
                if c.slice > 0 {
                    placements[i]
                        .entry(before_leaders)
                        .or_default()
                        .entry(before_pods - c.pod)
                        .or_insert(placement);
                }
            }
        }
    }
    placements[n]
        .get(&0)?
        .range(..=0)
        .next_back()
        .map(|(_, v)| v.clone())
}

/// Shannon entropy of the pods over a domain's children (higher: more evenly spread).
fn entropy(tree: &Tree, st: &State, e: E, level: usize) -> f64 {
    let children = tree.children(e, level);
    let total: i64 = children.iter().map(|&c| i64::from(st.c[c].pod)).sum();
    if total == 0 {
        return 0.0;
    }
    children
        .iter()
        .map(|&c| st.c[c].pod)
        .filter(|&p| p > 0)
        .map(|p| {
            let share = f64::from(p) / total as f64;
            -share * share.log2()
        })
        .sum()
}

/// Give every chosen domain `threshold` slices, then the rest to the first ones, leaders first.
fn slices_balanced(
    tree: &Tree,
    st: &mut State,
    domains: &[E],
    slices: Count,
    req: &Request,
    threshold: Count,
) -> Option<Vec<E>> {
    let chosen = optimal_set(tree, st, domains, slices, req, None)?;
    if slices < chosen.len() as Count * threshold {
        return None;
    }
    let chosen = sorted_entries(tree, st, chosen, false, true);
    let mut extra = slices - chosen.len() as Count * threshold;
    let mut leaders_left = req.leader_count;
    for &d in &chosen {
        let c = &mut st.c[d];
        let take = if leaders_left > 0 {
            c.leader = 1;
            leaders_left -= 1;
            (c.slice_wl - threshold).min(extra)
        } else if extra > 0 {
            c.leader = 0;
            (c.slice - threshold).min(extra)
        } else {
            c.leader = 0;
            0
        };
        c.slice = threshold + take;
        c.pod = c.slice * req.slice_size;
        c.slice_wl = c.slice;
        c.pod_wl = c.pod - c.leader;
        extra -= take;
    }
    (extra <= 0 && leaders_left <= 0).then_some(chosen)
}

/// Drop from the group's subtrees the domains below the threshold, then count them again.
fn prune(tree: &Tree, st: &mut State, group: &[E], threshold: Count, req: &Request, level: usize) {
    let leader_required = req.leader_count > 0;
    for &d in group {
        for c in tree.children(d, level) {
            prune_one(tree, st, c, level + 1, threshold, leader_required);
        }
    }
    for &d in group {
        refill(tree, st, d, level, req, leader_required);
        prune_one(tree, st, d, level, threshold, leader_required);
    }
}

fn prune_one(tree: &Tree, st: &mut State, e: E, level: usize, threshold: Count, lr: bool) {
    if st.c[e].slice < threshold {
        clear(tree, st, e, level, false);
    } else if lr && st.c[e].leader > 0 && st.c[e].slice_wl < threshold {
        clear(tree, st, e, level, true);
    }
}

/// Clear a subtree's counts (only its leader room with `leader_only`).
fn clear(tree: &Tree, st: &mut State, e: E, level: usize, leader_only: bool) {
    if leader_only {
        let c = &mut st.c[e];
        c.pod_wl = 0;
        c.slice_wl = 0;
        c.leader = 0;
    } else {
        st.c[e] = Cnt::default();
    }
    for c in tree.children(e, level) {
        clear(tree, st, c, level + 1, leader_only);
    }
}

/// Count a subtree again from its nodes up (no inner slice layers, as Kueue does here).
fn refill(tree: &Tree, st: &mut State, e: E, level: usize, req: &Request, lr: bool) {
    if level == tree.node_level() {
        if level == req.slice_level {
            st.c[e].slice = st.c[e].pod / req.slice_size;
            st.c[e].slice_wl = st.c[e].pod_wl / req.slice_size;
        }
        return;
    }
    let children = tree.children(e, level);
    let (mut pods, mut slices, mut leader) = (0 as Count, 0 as Count, 0 as Count);
    let (mut min_pod_diff, mut min_slice_diff) = (Count::MAX, Count::MAX);
    let mut contributor = false;
    for &c in &children {
        refill(tree, st, c, level + 1, req, lr);
        let x = st.c[c];
        pods += x.pod;
        slices += x.slice;
        if !lr || x.leader > 0 {
            contributor = true;
            min_pod_diff = min_pod_diff.min(x.pod - x.pod_wl);
            min_slice_diff = min_slice_diff.min(x.slice - x.slice_wl);
        }
        leader = leader.max(x.leader);
    }
    let c = &mut st.c[e];
    c.pod = pods;
    let mut slices_wl = 0;
    if contributor {
        c.pod_wl = pods - min_pod_diff;
        slices_wl = slices - min_slice_diff;
    } else {
        c.pod_wl = 0;
    }
    c.leader = leader;
    if level == req.slice_level {
        slices = c.pod / req.slice_size;
        slices_wl = c.pod_wl / req.slice_size;
    }
    c.slice = slices;
    c.slice_wl = slices_wl;
}
