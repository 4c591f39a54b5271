//! `sweep`: a grid run locally in parallel, rerun from its outputs, merged, written as a Slurm
//! array; failing cells reported while the others merge; bad grids refused before anything runs.

use std::path::{Path, PathBuf};

use crate::{railyard, temp_dir};

/// A grid directory: `grid.yaml` with `body`, beside a copy of the small trace (`small.csv`).
fn grid_dir(name: &str, body: &str) -> PathBuf {
    let dir = temp_dir(name);
    std::fs::copy(crate::fixture("traces/small.csv"), dir.join("small.csv")).unwrap();
    std::fs::write(dir.join("grid.yaml"), body).unwrap();
    dir
}

const TWELVE: &str = "clusters: [preset:philly-512]\ntraces: [small.csv]\npolicies: [fifo, best-effort, best-effort+required:tier0]\nschedulers: [kueue, kai]\nseeds: [0, 1]\n";

fn sweep(dir: &Path, extra: &[&str]) -> crate::Run {
    let grid = dir.join("grid.yaml");
    let out = dir.join("out");
    let mut args = vec![
        "sweep",
        grid.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    railyard(&args)
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join("out").join(file)).unwrap()
}

#[test]
fn a_grid_runs_every_cell_and_reruns_only_what_changed() {
    let dir = grid_dir("sweep-rerun", TWELVE);
    let first = sweep(&dir, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first.stdout.ends_with(": 12 run, 0 reused, 0 failed\n"),
        "{}",
        first.stdout
    );
    let table = read(&dir, "table.txt");
    // A header and one row per cell, the swept axes named, in the grid's order.
    assert_eq!(table.lines().count(), 13, "{table}");
    let header = table.lines().next().unwrap();
    assert!(header.starts_with("cell  policy") && header.contains("scheduler  seed  status"));
    assert!(
        !header.contains("cluster") && !header.contains("trace"),
        "not swept: {header}"
    );
    let row = |k: usize| {
        table
            .lines()
            .nth(k + 1)
            .unwrap()
            .split_whitespace()
            .take(5)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row(0), "0 fifo kueue 0 ok");
    assert_eq!(row(3), "3 fifo kai 1 ok");
    assert_eq!(row(11), "11 best-effort+required:tier0 kai 1 ok");
    // The same inputs: nothing runs again, the same bytes.
    let again = sweep(&dir, &[]);
    assert!(
        again.stdout.ends_with(": 0 run, 12 reused, 0 failed\n"),
        "{}",
        again.stdout
    );
    assert_eq!(read(&dir, "table.txt"), table);
    // A changed trace changes every cell's input hash: all run again.
    let trace = dir.join("small.csv");
    let text = std::fs::read_to_string(&trace).unwrap();
    std::fs::write(&trace, text.clone() + "\n").unwrap();
    let changed = sweep(&dir, &[]);
    assert!(
        changed.stdout.ends_with(": 12 run, 0 reused, 0 failed\n"),
        "{}",
        changed.stdout
    );
    // A cell whose output is gone runs alone.
    std::fs::remove_file(dir.join("out/cells/cell-0005.json")).unwrap();
    let one = sweep(&dir, &[]);
    assert!(
        one.stdout.ends_with(": 1 run, 11 reused, 0 failed\n"),
        "{}",
        one.stdout
    );
}

#[test]
fn one_thread_and_three_and_a_merge_give_the_same_bytes() {
    let outputs = |threads: &str| {
        let dir = grid_dir(&format!("sweep-j{threads}"), TWELVE);
        let grid = dir.join("grid.yaml");
        let out = dir.join("out");
        let r = railyard(&[
            "-j",
            threads,
            "sweep",
            grid.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let files = ["table.txt", "merged.json", "report.html"].map(|f| read(&dir, f));
        // `sweep merge` of the same directory writes the same files again.
        let merged = railyard(&["sweep", "merge", out.to_str().unwrap()]);
        assert_eq!(merged.code, 0, "{}", merged.stderr);
        assert_eq!(merged.stdout, files[0]);
        assert_eq!(
            ["table.txt", "merged.json", "report.html"].map(|f| read(&dir, f)),
            files
        );
        files
    };
    let one = outputs("1");
    assert_eq!(one, outputs("3"));
    assert!(
        one[2].starts_with("<!DOCTYPE html>")
            && one[2].contains("<svg")
            && one[2].contains("By policy")
    );
}

#[test]
fn a_failing_cell_is_reported_and_the_others_merge() {
    let dir = grid_dir(
        "sweep-failing",
        "clusters: [preset:philly-512]\ntraces: [small.csv, bad.csv]\nseeds: [0, 1]\n",
    );
    std::fs::write(
        dir.join("bad.csv"),
        "name,submit_s,duration_s,gpus\nj1,0,100,not-a-number\n",
    )
    .unwrap();
    let r = sweep(&dir, &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let table = read(&dir, "table.txt");
    assert_eq!(
        table,
        r.stdout
            .lines()
            .take(7)
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
    assert!(table.contains("small.csv     0  ok"), "{table}");
    assert!(table.contains("bad.csv       1  failed"), "{table}");
    assert!(
        table.contains("cell 2 failed: ") && table.contains("bad.csv"),
        "{table}"
    );
    assert!(
        r.stderr.contains("2 of 4 cells have no result"),
        "{}",
        r.stderr
    );
    // Failed cells run again on a rerun; the good ones do not.
    let again = sweep(&dir, &[]);
    assert!(
        again.stdout.contains(": 2 run, 2 reused, 2 failed"),
        "{}",
        again.stdout
    );
}

#[test]
fn merge_marks_missing_and_stale_cells() {
    let dir = grid_dir("sweep-stale", TWELVE);
    assert_eq!(sweep(&dir, &[]).code, 0);
    std::fs::remove_file(dir.join("out/cells/cell-0001.json")).unwrap();
    let cell = dir.join("out/cells/cell-0002.json");
    let text = std::fs::read_to_string(&cell).unwrap();
    let hash = text.split("\"input_hash\": \"").nth(1).unwrap()[..64].to_owned();
    std::fs::write(&cell, text.replace(&hash, &"0".repeat(64))).unwrap();
    let r = railyard(&["sweep", "merge", dir.join("out").to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("cell 1 missing: ") && r.stdout.contains("cell 2 stale: "),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("2 of 12 cells have no result"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_slurm_script_runs_each_cell_with_every_path_quoted() {
    let dir = grid_dir(
        "sweep-slurm",
        &format!("{TWELVE}slurm: {{partition: debug, time: \"00:10:00\", max_running: 4}}\n"),
    );
    // An output directory whose name the shell would otherwise read as syntax.
    let out = dir.join("it's $(here)");
    let grid = dir.join("grid.yaml");
    let r = railyard(&[
        "sweep",
        grid.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--slurm",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("sweep.sbatch (12 array tasks)"),
        "{}",
        r.stdout
    );
    let script = std::fs::read_to_string(out.join("sweep.sbatch")).unwrap();
    assert!(script.contains("\n#SBATCH --array=0-11%4\n#SBATCH --output=/dev/null\n#SBATCH --partition=debug\n#SBATCH --time=00:10:00\n"), "{script}");
    let quoted_out = format!("'{}'", out.display().to_string().replace('\'', r"'\''"));
    let exec = script.lines().last().unwrap();
    assert!(
        exec.starts_with("exec ") && exec.contains(" sweep "),
        "{exec}"
    );
    assert!(
        exec.contains(&format!(
            "--cell \"$SLURM_ARRAY_TASK_ID\" --out-dir {quoted_out} >"
        )),
        "{exec}"
    );
    // The shell reads the words back as the paths (no command substitution runs).
    let words = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf '%s\\n' {}",
            exec.trim_start_matches("exec ").split(" >").next().unwrap()
        ))
        .env("SLURM_ARRAY_TASK_ID", "7")
        .output()
        .unwrap();
    let words = String::from_utf8(words.stdout).unwrap();
    let words: Vec<&str> = words.lines().collect();
    assert_eq!(
        words[1..],
        [
            "sweep",
            grid.to_str().unwrap(),
            "--cell",
            "7",
            "--out-dir",
            out.to_str().unwrap()
        ]
    );
    // No cell ran.
    assert!(!out.join("cells/cell-0000.json").exists());
    assert!(out.join("sweep.json").exists());
}

#[test]
fn a_bad_grid_is_refused_before_anything_runs() {
    let refused = |body: &str| {
        let dir = grid_dir("sweep-bad", body);
        let r = sweep(&dir, &[]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(
            !dir.join("out").exists(),
            "ran before refusing: {}",
            r.stderr
        );
        r.stderr
    };
    let e = refused("clusters: [preset:philly-512]\ntraces: [small.csv]\npolicy: [fifo]\n");
    assert!(
        e.contains("grid.yaml") && e.contains("unknown field `policy`"),
        "{e}"
    );
    // Every problem at once, each naming its field.
    let e = refused("clusters: [preset:nope]\ntraces: [small.csv, gone.csv]\npolicies: [lifo]\nschedulers: [slurm]\nslurm: {time: \"1h\", partition: \"a b\"}\n");
    for field in [
        "clusters[0]",
        "traces[1]",
        "schedulers[0]",
        "slurm.time",
        "slurm.partition",
    ] {
        assert!(
            e.contains(&format!("grid.yaml: {field}: ")),
            "{field} in {e}"
        );
    }
    assert_eq!(
        e.lines().filter(|l| l.starts_with("error: ")).count(),
        5,
        "{e}"
    );
    let e = refused("clusters: [preset:philly-512]\ntraces: [small.csv]\nseeds: [0, 0]\npolicies: [fifo, fifo]\n");
    assert!(e.contains("policies[1]: `fifo` is given twice"), "{e}");
    // A value the merged table would print with a line break in it.
    let e = refused("clusters: [preset:philly-512]\ntraces: [\"small\\nx.csv\"]\n");
    assert!(
        e.contains("grid.yaml: traces[0]: `small\\nx.csv` holds a control character"),
        "{e}"
    );
    let dir = grid_dir("sweep-cell", TWELVE);
    let r = sweep(&dir, &["--cell", "12"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("--cell: expected 0..=11 (the grid has 12 cells), got 12"),
        "{}",
        r.stderr
    );
}
