//! The command line as a whole: shell completions that complete, manual pages for every command.

use crate::{ok, temp_dir};

#[test]
fn bash_completion_completes_subcommands() {
    let script = ok(&["completions", "bash"]);
    let dir = temp_dir("completions");
    let path = dir.join("railyard.bash");
    std::fs::write(&path, script).unwrap();
    // What bash does on `railyard pl<TAB>`: call the completion function with the words so far.
    let probe = format!(
        "source {}; COMP_WORDS=(railyard pl); COMP_CWORD=1; COMP_LINE='railyard pl'; COMP_POINT=11; _railyard railyard pl railyard; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &probe])
        .output()
        .expect("bash runs");
    let words = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        words.trim(),
        "place",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // And flags of a subcommand.
    let probe = format!(
        "source {}; COMP_WORDS=(railyard place --st); COMP_CWORD=2; _railyard railyard --st place; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &probe])
        .output()
        .expect("bash runs");
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), "--state");
}

#[test]
fn completion_scripts_exist_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let s = ok(&["completions", shell]);
        assert!(s.contains("railyard") && s.len() > 500, "{shell}");
    }
}

#[test]
fn the_manual_has_a_page_per_command() {
    let page = ok(&["man"]);
    assert!(page.contains(".TH RAILYARD 1"), "{page}");
    assert!(page.contains("simulate"));
    let dir = temp_dir("man");
    let out_dir = dir.join("pages");
    ok(&["man", "--out-dir", out_dir.to_str().unwrap()]);
    for name in [
        "railyard",
        "railyard-place",
        "railyard-simulate",
        "railyard-topo-export",
        "railyard-fabric-collective",
        "railyard-queues-share",
    ] {
        let text = std::fs::read_to_string(out_dir.join(format!("{name}.1")))
            .unwrap_or_else(|e| panic!("{name}.1: {e}"));
        assert!(
            text.contains(&format!(".TH {}", name.to_ascii_uppercase())),
            "{name}"
        );
    }
    let place = std::fs::read_to_string(out_dir.join("railyard-place.1")).unwrap();
    assert!(place.contains("\\-\\-state"), "flags are documented");
}

#[test]
fn the_binary_works_as_a_kubectl_plugin_under_its_plugin_name() {
    // kubectl runs `kubectl-railyard ARGS…` for `kubectl railyard ARGS…`.
    let dir = temp_dir("kubectl-plugin");
    let link = dir.join("kubectl-railyard");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_railyard"), &link).unwrap();
    let out = std::process::Command::new(&link)
        .args(["topo", "show", "--cluster", "preset:fat-tree-k8"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("fat-tree-k8"));
}
