//! A cluster named as every command names it: `preset:NAME`, a railyard spec file, or a
//! Kubernetes NodeList / Node stream (or a Slurm topology.conf) with the import options that
//! give its levels and hardware; import options on a preset or a spec are refused. Reading is
//! `formats::cluster`; this module decides which reading a name asks for.

use std::path::Path;

use formats::cluster::{build_cluster_file, parse_cluster_file, ClusterFile, LoadedCluster};
use formats::input::read_text;
use formats::k8s::ImportOptions;
use formats::FormatError;

/// Load the cluster `cluster` (`--cluster`) names with the import `options`, returning the
/// inference notes with it. Errors name `--cluster`, `--levels`, the preset or the file.
pub fn load(cluster: &str, options: &ImportOptions) -> Result<LoadedCluster, FormatError> {
    if let Some(name) = cluster.strip_prefix("preset:") {
        // An unknown preset is reported before misplaced flags.
        let loaded = formats::cluster::preset("--cluster", name)?;
        reject_import_options(options, cluster)?;
        return Ok(loaded);
    }
    if cluster.trim().is_empty() {
        return Err(FormatError::input(
            "--cluster",
            "expected preset:NAME or a file name, got an empty string",
        ));
    }
    for l in &options.levels {
        formats::k8s::check_label_key(l).map_err(|m| {
            FormatError::input(
                "--levels",
                format!(
                    "`{}` is not a Kubernetes label key: {m}",
                    formats::excerpt(l)
                ),
            )
        })?;
    }
    let path = Path::new(cluster);
    let file = path.display().to_string();
    let text = read_text(path)?;
    let parsed = parse_cluster_file(&file, &text)?;
    if matches!(parsed, ClusterFile::Spec) {
        reject_import_options(options, &file)?;
    }
    build_cluster_file(&file, &text, parsed, options)
}

/// Import options go only with a NodeList: the first one given is an error about `what`.
fn reject_import_options(o: &ImportOptions, what: &str) -> Result<(), FormatError> {
    let given = [
        (o.topology.is_some(), "--topology"),
        (!o.levels.is_empty(), "--levels"),
        (o.label_preset.is_some(), "--label-preset"),
        (o.shape.is_some(), "--shape"),
        (o.overlay.is_some(), "--overlay"),
    ];
    if let Some((_, flag)) = given.iter().find(|(g, _)| *g) {
        return Err(FormatError::input(
            what,
            format!(
                "{flag} applies only to a Kubernetes NodeList; this cluster is a railyard spec"
            ),
        ));
    }
    Ok(())
}
