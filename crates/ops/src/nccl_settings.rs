//! `--nccl NAME=VALUE` settings and the `--qps` shorthand (`fabric collective`, `fabric
//! compare`, `simulate`) as one NCCL configuration.

use fabric::NcclConfig;

/// The configuration the `settings` (`NAME=VALUE`) and `qps` ask for; every bad setting, or a
/// `NCCL_IB_QPS_PER_CONNECTION` that disagrees with `qps`, is one line naming `--nccl`.
pub fn config(settings: &[String], qps: Option<u32>) -> Result<NcclConfig, String> {
    let cfg = fabric::parse_nccl_env(settings.iter().map(String::as_str))
        .map_err(|e| format!("--nccl: {e}"))?;
    let Some(qps) = qps else { return Ok(cfg) };
    let named = |s: &String| s.trim_start().starts_with("NCCL_IB_QPS_PER_CONNECTION=");
    if settings.iter().any(named) && cfg.qps_per_connection != qps {
        return Err(format!(
            "--nccl: NCCL_IB_QPS_PER_CONNECTION={} disagrees with --qps {qps}",
            cfg.qps_per_connection
        ));
    }
    Ok(NcclConfig {
        qps_per_connection: qps,
        ..cfg
    })
}
