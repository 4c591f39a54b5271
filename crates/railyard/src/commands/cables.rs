//! `railyard cables plan`: the cable plan of `ops::cables` for a cluster, as a table or JSON.

use std::path::PathBuf;

use formats::input::read_text;
use ops::cables::{parse_layout, plan};
use ops::cables_report::render_text;

use crate::cluster_arg::{load_cluster, ClusterArgs};
use crate::error::CliError;
use crate::output::OutputFormat;

/// Arguments of `cables plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Rack layout (YAML; format in the README): rack positions and what sits in each rack.
    #[arg(long, value_name = "FILE")]
    pub layout: Option<PathBuf>,
    /// Output format (wide lists every link with both ends instead of groups)
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// `cables plan`.
pub fn plan_command(args: &PlanArgs) -> Result<String, CliError> {
    let cluster = load_cluster(&args.cluster)?;
    let layout = match &args.layout {
        Some(path) => {
            let file = path.display().to_string();
            Some(parse_layout(&file, &read_text(path)?)?)
        }
        None => None,
    };
    let plan = plan(&cluster, layout.as_ref());
    Ok(args.output.render(&plan, |wide| {
        render_text(&cluster.name, &plan, layout.is_some(), wide)
    }))
}
