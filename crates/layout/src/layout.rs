//! A parallel layout (TP, CP, EP, DP, PP, virtual stages, rank order) and the training settings
//! around it (batch, precision, optimizer sharding, recomputation, overlap), with the one check
//! that names the field at fault.

use serde::Serialize;

use crate::error::LayoutError;
use crate::model::Model;

/// One dimension of the rank grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dim {
    /// Tensor parallel.
    Tp,
    /// Context parallel.
    Cp,
    /// Expert parallel (carved out of data parallel, as Megatron-Core does).
    Ep,
    /// Data parallel (the part left after EP: DP / EP).
    Dp,
    /// Pipeline parallel.
    Pp,
}

impl Dim {
    /// The name in an order string.
    pub fn name(self) -> &'static str {
        match self {
            Dim::Tp => "tp",
            Dim::Cp => "cp",
            Dim::Ep => "ep",
            Dim::Dp => "dp",
            Dim::Pp => "pp",
        }
    }
}

/// Megatron-Core's default rank order, fastest-varying first (`--order`, default
/// `tp-cp-ep-dp-pp`, `megatron/core/parallel_state.py`, `RankGenerator`).
pub const MEGATRON_ORDER: [Dim; 5] = [Dim::Tp, Dim::Cp, Dim::Ep, Dim::Dp, Dim::Pp];

/// The alternative with pipeline stages next to each other and data parallel outermost.
pub const PP_INNER_ORDER: [Dim; 5] = [Dim::Tp, Dim::Cp, Dim::Ep, Dim::Pp, Dim::Dp];

/// A parallel layout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// Tensor-parallel size.
    pub tp: u32,
    /// Pipeline-parallel size.
    pub pp: u32,
    /// Data-parallel size (including the expert-parallel part).
    pub dp: u32,
    /// Context-parallel size.
    pub cp: u32,
    /// Expert-parallel size (divides `dp`).
    pub ep: u32,
    /// Virtual pipeline stages per rank (1 = 1F1B, more = interleaved 1F1B).
    pub vp: u32,
    /// Rank order, fastest-varying dimension first.
    pub order: [Dim; 5],
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            tp: 1,
            pp: 1,
            dp: 1,
            cp: 1,
            ep: 1,
            vp: 1,
            order: MEGATRON_ORDER,
        }
    }
}

impl Layout {
    /// GPUs the layout needs: TP × PP × DP × CP.
    pub fn gpus(&self) -> u64 {
        u64::from(self.tp) * u64::from(self.pp) * u64::from(self.dp) * u64::from(self.cp)
    }

    /// The size of a dimension of the rank grid (`Dp` is DP / EP).
    pub fn size(&self, d: Dim) -> u32 {
        match d {
            Dim::Tp => self.tp,
            Dim::Cp => self.cp,
            Dim::Ep => self.ep,
            Dim::Dp => self.dp / self.ep.max(1),
            Dim::Pp => self.pp,
        }
    }

    /// Parse `tp=8,pp=4,dp=16[,cp=…][,ep=…][,vp=…][,order=tp-cp-ep-dp-pp]`; sizes left out are 1.
    pub fn parse(text: &str) -> Result<Layout, LayoutError> {
        let mut l = Layout::default();
        for part in text.split(',').filter(|p| !p.trim().is_empty()) {
            let (key, value) = part.split_once('=').ok_or_else(|| {
                LayoutError::new("--layout", format!("expected KEY=VALUE, got `{part}`"))
            })?;
            let key = key.trim();
            if key == "order" {
                l.order = parse_order(value.trim())?;
                continue;
            }
            let n: u32 = value
                .trim()
                .parse()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| {
                    LayoutError::new(
                        format!("--layout {key}"),
                        format!("expected a whole number ≥ 1, got `{}`", value.trim()),
                    )
                })?;
            match key {
                "tp" => l.tp = n,
                "pp" => l.pp = n,
                "dp" => l.dp = n,
                "cp" => l.cp = n,
                "ep" => l.ep = n,
                "vp" => l.vp = n,
                _ => {
                    return Err(LayoutError::new(
                        "--layout",
                        format!("unknown key `{key}`; expected tp, pp, dp, cp, ep, vp or order"),
                    ))
                }
            }
        }
        Ok(l)
    }

    /// `tp=8,pp=4,dp=16` with the sizes above 1 and the order when it is not Megatron's.
    pub fn label(&self) -> String {
        let mut parts: Vec<String> = [
            ("tp", self.tp),
            ("cp", self.cp),
            ("ep", self.ep),
            ("pp", self.pp),
            ("dp", self.dp),
            ("vp", self.vp),
        ]
        .iter()
        .filter(|(_, v)| *v > 1)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
        if self.order != MEGATRON_ORDER {
            parts.push(format!("order={}", order_label(&self.order)));
        }
        if parts.is_empty() {
            "tp=1".to_owned()
        } else {
            parts.join(",")
        }
    }
}

/// `tp-cp-ep-dp-pp`.
pub fn order_label(order: &[Dim; 5]) -> String {
    order.iter().map(|d| d.name()).collect::<Vec<_>>().join("-")
}

/// An order string naming each of tp, cp, ep, dp, pp once.
pub fn parse_order(text: &str) -> Result<[Dim; 5], LayoutError> {
    let bad = || {
        LayoutError::new(
            "--layout order",
            format!("expected the five names tp, cp, ep, dp, pp each once, joined by `-` (Megatron's default tp-cp-ep-dp-pp), got `{text}`"),
        )
    };
    let dims: Vec<Dim> = text
        .split('-')
        .map(|p| match p {
            "tp" => Ok(Dim::Tp),
            "cp" => Ok(Dim::Cp),
            "ep" => Ok(Dim::Ep),
            "dp" => Ok(Dim::Dp),
            "pp" => Ok(Dim::Pp),
            _ => Err(bad()),
        })
        .collect::<Result<_, _>>()?;
    let order: [Dim; 5] = dims.try_into().map_err(|_| bad())?;
    let mut sorted = order;
    sorted.sort();
    if sorted != [Dim::Tp, Dim::Cp, Dim::Ep, Dim::Dp, Dim::Pp] {
        return Err(bad());
    }
    Ok(order)
}

/// Number format of the weights, activations and the GEMMs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// bfloat16 mixed precision.
    Bf16,
    /// float16 mixed precision (Megatron-LM SC '21).
    Fp16,
    /// FP8 GEMMs (activations and gradients still exchanged in bf16).
    Fp8,
}

impl Precision {
    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
        }
    }

    /// The precision with this name (bf16, fp16, fp8).
    pub fn from_name(name: &str) -> Result<Precision, String> {
        [Precision::Bf16, Precision::Fp16, Precision::Fp8]
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| format!("expected bf16, fp16 or fp8, got `{name}`"))
    }
}

/// How the optimizer state and weights are sharded over the data-parallel group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    /// Every DP rank holds everything: one gradient AllReduce per step.
    Dp,
    /// Megatron's distributed optimizer (ZeRO-1): gradient ReduceScatter, parameter AllGather.
    Distributed,
    /// Fully sharded (ZeRO-3): parameters gathered for every forward and backward.
    Fsdp,
}

impl Optimizer {
    /// The sharding with this name (dp, distributed, fsdp).
    pub fn from_name(name: &str) -> Result<Optimizer, String> {
        match name {
            "dp" => Ok(Optimizer::Dp),
            "distributed" => Ok(Optimizer::Distributed),
            "fsdp" => Ok(Optimizer::Fsdp),
            _ => Err(format!("expected dp, distributed or fsdp, got `{name}`")),
        }
    }
}

/// Activation recomputation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Recompute {
    /// None: backward reuses the stored activations.
    None,
    /// Full: every layer's forward runs again in the backward pass (Megatron SC '21).
    Full,
}

impl Recompute {
    /// The setting with this name (none, full).
    pub fn from_name(name: &str) -> Result<Recompute, String> {
        match name {
            "none" => Ok(Recompute::None),
            "full" => Ok(Recompute::Full),
            _ => Err(format!("expected none or full, got `{name}`")),
        }
    }
}

/// A training job: model, layout and the settings that decide its traffic and compute.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Training {
    /// The model.
    pub model: Model,
    /// The layout.
    pub layout: Layout,
    /// Sequences per step (global batch).
    pub global_batch: u32,
    /// Sequences per micro-batch.
    pub micro_batch: u32,
    /// Number format.
    pub precision: Precision,
    /// Optimizer sharding.
    pub optimizer: Optimizer,
    /// Activation recomputation.
    pub recompute: Recompute,
    /// Overlap the data-parallel gradient (and parameter) collectives with compute.
    pub overlap_dp: bool,
    /// Overlap tensor-parallel collectives with the GEMMs.
    pub overlap_tp: bool,
}

impl Training {
    /// Megatron's defaults around a model and layout: micro-batch 1, bf16, plain DP, no
    /// recomputation, no overlap; global batch = DP (one micro-batch per rank).
    pub fn new(model: Model, layout: Layout) -> Training {
        Training {
            global_batch: layout.dp,
            model,
            layout,
            micro_batch: 1,
            precision: Precision::Bf16,
            optimizer: Optimizer::Dp,
            recompute: Recompute::None,
            overlap_dp: false,
            overlap_tp: false,
        }
    }

    /// The command line's job from a preset name (`--model`) and a layout string (`--layout`),
    /// with `fabric step`'s defaults: micro-batch 1, global batch = 4 micro-batches per
    /// pipeline stage on every DP rank, the distributed optimizer; errors name `--model` or the
    /// `--layout` key.
    pub fn from_flags(model: &str, layout: &str) -> Result<Training, LayoutError> {
        let m = crate::model::preset(model).map_err(|e| LayoutError::new("--model", e.message))?;
        let l = Layout::parse(layout)?;
        Ok(Training {
            global_batch: Training::default_global_batch(&l, 1),
            optimizer: Optimizer::Distributed,
            ..Training::new(m, l)
        })
    }

    /// 4 micro-batches per pipeline stage on every DP rank: `micro_batch × dp × 4 × pp`, capped
    /// at `u32::MAX`.
    pub fn default_global_batch(layout: &Layout, micro_batch: u32) -> u32 {
        let n = u64::from(micro_batch) * u64::from(layout.dp) * 4 * u64::from(layout.pp);
        n.min(u64::from(u32::MAX)) as u32
    }

    /// Micro-batches per data-parallel rank per step: global batch / (micro-batch × DP).
    pub fn micro_batches(&self) -> u32 {
        self.global_batch / (self.micro_batch * self.layout.dp).max(1)
    }

    /// Check the model, then the layout against it and `gpus`; the first problem, naming its
    /// field.
    pub fn validate(&self, gpus: u64) -> Result<(), LayoutError> {
        self.model.validate()?;
        let (l, m) = (&self.layout, &self.model);
        for (name, v) in [
            ("tp", l.tp),
            ("pp", l.pp),
            ("dp", l.dp),
            ("cp", l.cp),
            ("ep", l.ep),
            ("vp", l.vp),
        ] {
            if v == 0 {
                return Err(LayoutError::new(
                    format!("layout.{name}"),
                    "must be at least 1",
                ));
            }
        }
        if l.gpus() != gpus {
            return Err(LayoutError::new(
                "layout",
                format!(
                    "tp × pp × dp × cp = {} × {} × {} × {} = {}, but the job has {gpus} GPUs",
                    l.tp,
                    l.pp,
                    l.dp,
                    l.cp,
                    l.gpus()
                ),
            ));
        }
        let divides = |field: &str, by: u32, what: &str, n: u32| {
            if n % by != 0 {
                Err(LayoutError::new(
                    format!("layout.{field}"),
                    format!("{by} does not divide the model's {n} {what}"),
                ))
            } else {
                Ok(())
            }
        };
        divides("tp", l.tp, "attention heads", m.heads)?;
        divides("tp", l.tp, "KV heads", m.kv_heads)?;
        divides("tp", l.tp, "FFN width", m.ffn)?;
        if u64::from(m.layers) < u64::from(l.pp) * u64::from(l.vp) {
            return Err(LayoutError::new(
                "layout.pp",
                format!(
                    "pp × vp = {} × {} model chunks for {} layers; each chunk needs a layer",
                    l.pp, l.vp, m.layers
                ),
            ));
        }
        divides("cp", l.cp, "tokens of a sequence", m.seq)?;
        if l.ep > 1 {
            if m.experts <= 1 {
                return Err(LayoutError::new(
                    "layout.ep",
                    format!("ep = {} needs an MoE model; {} is dense", l.ep, m.name),
                ));
            }
            divides("ep", l.ep, "experts", m.experts)?;
            if l.dp % l.ep != 0 {
                return Err(LayoutError::new(
                    "layout.ep",
                    format!(
                        "ep = {} does not divide dp = {} (EP is carved out of DP)",
                        l.ep, l.dp
                    ),
                ));
            }
        }
        if l.vp > 1 && l.pp == 1 {
            return Err(LayoutError::new(
                "layout.vp",
                "virtual stages need pipeline parallelism (pp > 1)",
            ));
        }
        if self.micro_batch == 0 {
            return Err(LayoutError::new("batch.micro", "must be at least 1"));
        }
        let per_step = u64::from(self.micro_batch) * u64::from(l.dp);
        if self.global_batch == 0 || u64::from(self.global_batch) % per_step != 0 {
            return Err(LayoutError::new(
                "batch.global",
                format!(
                    "{} is not a multiple of micro-batch × dp = {} × {} = {per_step}",
                    self.global_batch, self.micro_batch, l.dp
                ),
            ));
        }
        if l.vp > 1 && self.micro_batches() % l.pp != 0 {
            return Err(LayoutError::new(
                "batch.global",
                format!(
                    "the interleaved schedule needs micro-batches per rank ({}) to be a multiple of pp = {}",
                    self.micro_batches(),
                    l.pp
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset;

    fn check(model: &str, layout: &str, batch: u32, gpus: u64) -> String {
        let mut t = Training::new(preset(model).unwrap(), Layout::parse(layout).unwrap());
        t.global_batch = batch;
        match t.validate(gpus) {
            Ok(()) => "ok".to_owned(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn bad_layouts_name_their_field() {
        assert_eq!(
            check("llama3-70b", "tp=8,pp=4,dp=16", 64, 256),
            "layout: tp × pp × dp × cp = 8 × 4 × 16 × 1 = 512, but the job has 256 GPUs"
        );
        assert_eq!(
            check("llama3-70b", "tp=3,dp=2", 2, 6),
            "layout.tp: 3 does not divide the model's 64 attention heads"
        );
        assert_eq!(
            check("mixtral-8x7b", "tp=2,dp=6,ep=3", 6, 12),
            "layout.ep: 3 does not divide the model's 8 experts"
        );
        assert_eq!(
            check("llama3-8b", "tp=8,dp=4,ep=2", 4, 32),
            "layout.ep: ep = 2 needs an MoE model; llama3-8b is dense"
        );
        assert_eq!(
            check("llama3-8b", "tp=8,pp=8,vp=8,dp=1", 8, 64),
            "layout.pp: pp × vp = 8 × 8 model chunks for 32 layers; each chunk needs a layer"
        );
        assert_eq!(
            check("llama3-70b", "tp=8,pp=4,dp=4", 6, 128),
            "batch.global: 6 is not a multiple of micro-batch × dp = 1 × 4 = 4"
        );
        assert_eq!(check("llama3-70b", "tp=8,pp=4,dp=4", 64, 128), "ok");
    }

    /// Sizes whose products overflow 32 bits are refused, not wrapped.
    #[test]
    fn huge_sizes_are_refused_without_overflow() {
        assert!(check("llama3-8b", "pp=70000,vp=70000", 1, 70_000).starts_with("layout.pp:"));
        assert!(check("llama3-8b", "tp=65536,dp=65536", 65536, 1 << 32).starts_with("layout.tp:"));
    }

    #[test]
    fn layout_strings_parse_and_print() {
        let l = Layout::parse("tp=8,pp=4,dp=16,order=tp-cp-ep-pp-dp").unwrap();
        assert_eq!((l.tp, l.pp, l.dp, l.cp, l.ep), (8, 4, 16, 1, 1));
        assert_eq!(l.order, PP_INNER_ORDER);
        assert_eq!(l.label(), "tp=8,pp=4,dp=16,order=tp-cp-ep-pp-dp");
        assert_eq!(
            Layout::parse("tp=0").unwrap_err().to_string(),
            "--layout tp: expected a whole number ≥ 1, got `0`"
        );
        assert!(Layout::parse("order=tp-tp-ep-dp-pp").is_err());
        assert!(Layout::parse("xp=2")
            .unwrap_err()
            .to_string()
            .contains("unknown key `xp`"));
    }
}
