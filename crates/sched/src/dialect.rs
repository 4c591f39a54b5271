//! Whose rules a queue decision follows: railyard's own (used for Kueue queue trees) or KAI
//! Scheduler's, each a parameter of the one function per decision ([`crate::fair_share_in`],
//! [`crate::divide`], [`crate::admit_in`], [`crate::QueueTree::new_in`], and placement through
//! [`crate::PlaceOptions::dialect`]), and KAI's placement strategies.

/// The rules a fair-share, division or admission decision follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dialect {
    /// railyard's rules (for Kueue ClusterQueues/Cohorts): continuous water-filling; when the
    /// quotas do not fit, higher priority first and in proportion within a priority; every tree
    /// problem refuses the tree; limits checked on every resource with a little slack.
    #[default]
    Kueue,
    /// KAI Scheduler's rules (proportion plugin, `resource_division.go`): each queue first gets
    /// min(quota, demand) even above capacity; the remainder in whole-unit rounds by priority
    /// and over-quota weight, the fractions left by those rounds a unit each by the largest
    /// remainder (ties: earlier creation time, then smaller UID); child quotas above the
    /// parent's and limits below quotas are warnings; limits and the non-preemptible quota
    /// rule compared exactly, resources in KAI's order (cpu, memory, gpu).
    Kai,
}

impl Dialect {
    /// Lower-case name (`kueue`, `kai`).
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Kueue => "kueue",
            Dialect::Kai => "kai",
        }
    }
}

/// How KAI spreads pods over nodes and GPUs (a SchedulingShard's `placementStrategy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PlacementStrategy {
    /// Busier nodes first; shared pods on the most used GPU (KAI's default).
    #[default]
    Binpack,
    /// Emptier nodes first; shared pods on the least used GPU (`gpuspread`).
    Spread,
}

impl PlacementStrategy {
    /// Lower-case name (`binpack`, `spread`).
    pub fn name(self) -> &'static str {
        match self {
            PlacementStrategy::Binpack => "binpack",
            PlacementStrategy::Spread => "spread",
        }
    }

    /// Parse `binpack` or `spread`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "binpack" => Some(PlacementStrategy::Binpack),
            "spread" => Some(PlacementStrategy::Spread),
            _ => None,
        }
    }
}

/// KAI's placement strategies (a SchedulingShard's `placementStrategy.gpu` sets `gpu` and
/// `shared_gpus` together, `placementStrategy.cpu` sets `cpu`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KaiStrategy {
    /// Node order for pods with GPUs (KAI's `nodeplacement` plugin, GPU argument).
    pub gpu: PlacementStrategy,
    /// Node order for CPU-only pods (`nodeplacement`, CPU argument).
    pub cpu: PlacementStrategy,
    /// Which GPU a shared pod takes: `gpupack` (binpack) or `gpuspread` (spread).
    pub shared_gpus: PlacementStrategy,
}

impl KaiStrategy {
    /// The same strategy for nodes and GPUs, as one SchedulingShard setting gives it.
    pub fn all(strategy: PlacementStrategy) -> Self {
        Self {
            gpu: strategy,
            cpu: strategy,
            shared_gpus: strategy,
        }
    }
}
