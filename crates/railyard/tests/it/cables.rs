//! `railyard cables plan`: per-tier defaults, a rack layout, the bill of materials, warnings
//! for links beyond passive DAC reach, and bad layouts.

use crate::{assert_one_line_error, railyard, scratch};

const LAYOUT: &str = "tests/fixtures/cables/layout-fat-tree-k8.yaml";

#[test]
fn fat_tree_with_tier_defaults() {
    let run = railyard(&["cables", "plan", "--cluster", "preset:fat-tree-k8"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn layout_lengths_pick_the_cable() {
    let run = railyard(&[
        "cables",
        "plan",
        "--cluster",
        "preset:fat-tree-k8",
        "--layout",
        LAYOUT,
        "--output",
        "json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let plan: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let links = plan["links"].as_array().unwrap();
    let find = |lower: &str| {
        links
            .iter()
            .find(|l| l["lower"] == lower)
            .unwrap_or_else(|| panic!("{lower}"))
    };
    // Same rack: 1.5 m, a passive DAC.
    let l = find("host-000/rail 0");
    assert_eq!(l["length_m"], 1.5);
    assert_eq!(l["measured"], true);
    assert_eq!(l["cable"], "passive_dac");
    assert_eq!(l["power_per_end_w"], 0.0);
    // Next rack: 0.6 + 3 = 3.6 m: beyond a 400G splitter DAC (3 m), active copper.
    let l = find("host-004/rail 0");
    assert_eq!(l["length_m"], 3.6);
    assert_eq!(l["cable"], "active_copper");
    assert_eq!(l["buy_length_m"], 4.0);
    // Not placed: the layout's tier-0 default, 3 m, a splitter DAC at 400G.
    let l = find("host-008/rail 0");
    assert_eq!(l["measured"], false);
    assert_eq!(l["cable"], "passive_dac_splitter");
    // Leaf to spine row: 4 + 3 = 7 m, multimode optics.
    let l = find("t0-g0-s0");
    assert_eq!(l["length_m"], 7.0);
    assert_eq!(l["cable"], "multimode_optics");
    assert_eq!(l["power_per_end_w"], 8.5);
    // Spine row to core: 30 + 6 + 3 = 39 m.
    let l = links
        .iter()
        .find(|l| l["tier"] == 2 && l["lower"] == "t1-g0-s0")
        .unwrap();
    assert_eq!(l["length_m"], 39.0);
    assert_eq!(l["buy_length_m"], 50.0);

    let bom = plan["bom"].as_array().unwrap();
    let total: u64 = bom.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(total, 384, "one 400G cable per fat-tree link");
    let warnings = plan["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w
        .as_str()
        .unwrap()
        .contains("beyond passive DAC reach (2 m for 400G/NDR")));
}

#[test]
fn every_link_beyond_dac_reach_is_warned_about() {
    let run = railyard(&["cables", "plan", "--cluster", "preset:oci-h100-16k"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let warned: u64 = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("warning: "))
        .map(|l| {
            l.split_whitespace()
                .next()
                .unwrap()
                .replace(',', "")
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    // 200G/HDR ports: DAC reach 2 m, shorter than every default run.
    assert_eq!(warned, 16_384 + 2_048 + 512);
}

#[test]
fn bad_layouts_are_one_line_errors() {
    let dir = scratch("cables-bad");
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let cases = [
        (
            "unknown-rack.yaml",
            "racks: {a: {x: 0, y: 0}}\nplacement: {host-000: b}\n",
            "placement.host-000: rack \"b\" is not under racks",
        ),
        (
            "typo.yaml",
            "racks: {a: {x: 0, y: 0}}\nin_rack: 2\n",
            "unknown field `in_rack`",
        ),
        (
            "negative.yaml",
            "racks: {a: {x: 0, y: 0}}\noverhead_m: -1\n",
            "overhead_m: expected a length in metres, got -1",
        ),
        (
            "tier.yaml",
            "racks: {}\ntier_length_m: [3, 0]\n",
            "tier_length_m[1]: expected a positive length",
        ),
    ];
    for (name, text, expected) in cases {
        let path = write(name, text);
        let run = railyard(&[
            "cables",
            "plan",
            "--cluster",
            "preset:fat-tree-k8",
            "--layout",
            &path,
        ]);
        assert_one_line_error(&run, expected);
        assert!(run.stderr.contains(name), "names the file: {}", run.stderr);
    }
}

/// A table of text as rows of cells: columns are separated by two spaces or more.
fn cells(block: &str) -> Vec<Vec<String>> {
    block
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|row| row.len() >= 6)
        .collect()
}

#[test]
fn the_bill_of_materials_and_the_links_table_agree_on_lengths() {
    // A 60 m run is bought as a 70 m cable: the links table says both, the bill the 70 m, and
    // every bill row is the sum of the links rows of its type and length.
    for args in [
        vec!["cables", "plan", "--cluster", "preset:fat-tree-k8"],
        vec![
            "cables",
            "plan",
            "--cluster",
            "preset:fat-tree-k8",
            "--layout",
            LAYOUT,
        ],
    ] {
        let run = railyard(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let out = run.stdout;
        let links_at = out.find("\nlinks\n").unwrap() + "\nlinks\n".len();
        let bom_at = out.find("\nbill of materials").unwrap();
        let bom_block = &out[bom_at + 1..];
        let bom_block = &bom_block[bom_block.find('\n').unwrap() + 1..];
        // links: tier, links, link, cables/link, cable, length, buy, source, type
        let links = cells(&out[links_at..bom_at]);
        // bill: type, speed, buy, count, W/end, W total
        let bom = cells(bom_block);
        assert!(!bom.is_empty() && !links.is_empty(), "{out}");
        let n = |s: &str| s.replace(',', "").parse::<u64>().unwrap();
        for row in &bom {
            let (kind, speed, buy, count) = (&row[0], &row[1], &row[2], n(&row[3]));
            let from_links: u64 = links
                .iter()
                .filter(|l| &l[8] == kind && &l[4] == speed && &l[6] == buy)
                .map(|l| n(&l[1]) * n(&l[3]))
                .sum();
            assert_eq!(from_links, count, "{kind} {buy}: {out}");
        }
        if args.len() == 4 {
            assert!(
                links.iter().any(|l| l[5] == "60 m" && l[6] == "70 m"),
                "{out}"
            );
        }
    }
}
