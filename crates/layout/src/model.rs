//! A transformer's shape (the inputs the FLOP and byte counts need) and the named presets, each
//! with its source.

use serde::Serialize;

use crate::error::LayoutError;

/// A decoder-only transformer, dense or mixture-of-experts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Model {
    /// Preset name (or what the caller calls it).
    pub name: String,
    /// Transformer layers.
    pub layers: u32,
    /// Hidden size h (model dimension).
    pub hidden: u32,
    /// FFN inner size of a dense layer.
    pub ffn: u32,
    /// Attention heads.
    pub heads: u32,
    /// Key/value heads (= heads without grouped-query attention).
    pub kv_heads: u32,
    /// Vocabulary size.
    pub vocab: u32,
    /// Training sequence length s.
    pub seq: u32,
    /// Gated FFN (SwiGLU: three matrices instead of two).
    pub gated_ffn: bool,
    /// Input embedding and output head share one matrix.
    pub tied_embeddings: bool,
    /// Routed experts per MoE layer (0 = dense model).
    pub experts: u32,
    /// Experts each token is routed to.
    pub top_k: u32,
    /// Every `moe_every`-th layer (after `dense_layers`) is an MoE layer; 1 = all of them.
    pub moe_every: u32,
    /// Leading layers that stay dense (DeepSeek-V3: 3).
    pub dense_layers: u32,
    /// FFN inner size of one expert.
    pub expert_ffn: u32,
    /// Shared (always active, not routed) experts per MoE layer.
    pub shared_experts: u32,
}

impl Model {
    /// A dense GPT (FFN = 4h, multi-head attention, tied embeddings), as Megatron-LM's runs.
    fn gpt(name: &str, layers: u32, hidden: u32, heads: u32, vocab: u32, seq: u32) -> Model {
        Model {
            name: name.to_owned(),
            layers,
            hidden,
            ffn: 4 * hidden,
            heads,
            kv_heads: heads,
            vocab,
            seq,
            gated_ffn: false,
            tied_embeddings: true,
            experts: 0,
            top_k: 0,
            moe_every: 1,
            dense_layers: 0,
            expert_ffn: 0,
            shared_experts: 0,
        }
    }

    /// A dense Llama (SwiGLU, grouped-query attention, untied embeddings).
    fn llama(name: &str, layers: u32, hidden: u32, ffn: u32, heads: u32, vocab: u32) -> Model {
        Model {
            ffn,
            kv_heads: 8,
            gated_ffn: true,
            tied_embeddings: false,
            ..Model::gpt(name, layers, hidden, heads, vocab, 8192)
        }
    }

    /// Whether layer `i` (0-based) is an MoE layer.
    pub fn is_moe_layer(&self, i: u32) -> bool {
        self.experts > 1 && i >= self.dense_layers && (i - self.dense_layers) % self.moe_every == 0
    }

    /// MoE layers.
    pub fn moe_layers(&self) -> u32 {
        (0..self.layers).filter(|&i| self.is_moe_layer(i)).count() as u32
    }

    /// Head dimension h / heads.
    pub fn head_dim(&self) -> u64 {
        u64::from(self.hidden) / u64::from(self.heads.max(1))
    }

    /// Weights of one layer's attention: Q and the output projection h × h each, K and V
    /// h × (kv heads × head dim) each.
    pub fn attention_params(&self) -> u64 {
        let h = u64::from(self.hidden);
        let kv = u64::from(self.kv_heads) * self.head_dim();
        2 * h * h + 2 * h * kv
    }

    /// Weights of one FFN of inner size `inner`: two matrices, three when gated.
    pub fn ffn_params(&self, inner: u32) -> u64 {
        let mats = if self.gated_ffn { 3 } else { 2 };
        mats * u64::from(self.hidden) * u64::from(inner)
    }

    /// Weights outside the routed experts: attention, dense FFNs, shared experts, routers,
    /// embeddings (norms and biases left out, below 0.1%).
    pub fn dense_params(&self) -> u64 {
        let l = u64::from(self.layers);
        let moe = u64::from(self.moe_layers());
        let embed = u64::from(self.vocab) * u64::from(self.hidden);
        l * self.attention_params()
            + (l - moe) * self.ffn_params(self.ffn)
            + moe
                * (u64::from(self.shared_experts) * self.ffn_params(self.expert_ffn)
                    + u64::from(self.hidden) * u64::from(self.experts))
            + if self.tied_embeddings {
                embed
            } else {
                2 * embed
            }
    }

    /// Weights of the routed experts.
    pub fn expert_params(&self) -> u64 {
        u64::from(self.moe_layers()) * u64::from(self.experts) * self.ffn_params(self.expert_ffn)
    }

    /// All weights.
    pub fn params(&self) -> u64 {
        self.dense_params() + self.expert_params()
    }

    /// Forward FLOPs of one token through one layer `i`: 2 per weight it uses (attention, its
    /// dense FFN or its shared plus `top_k` routed experts) plus attention scores and values,
    /// 2·s·h each (Narayanan et al., SC '21, §5.1 and Appendix: the `s/6h` term of eq. 3).
    pub fn layer_forward_flops(&self, i: u32) -> f64 {
        let ffn = if self.is_moe_layer(i) {
            u64::from(self.shared_experts + self.top_k) * self.ffn_params(self.expert_ffn)
        } else {
            self.ffn_params(self.ffn)
        };
        2.0 * (self.attention_params() + ffn) as f64
            + 4.0 * f64::from(self.seq) * f64::from(self.hidden)
    }

    /// Check the shape: every size positive, heads dividing the hidden size, KV heads dividing
    /// heads, MoE fields consistent.
    pub fn validate(&self) -> Result<(), LayoutError> {
        let f = |name: &str| format!("model.{name}");
        for (name, v) in [
            ("layers", self.layers),
            ("hidden", self.hidden),
            ("ffn", self.ffn),
            ("heads", self.heads),
            ("kv_heads", self.kv_heads),
            ("vocab", self.vocab),
            ("seq", self.seq),
            ("moe_every", self.moe_every),
        ] {
            if v == 0 {
                return Err(LayoutError::new(f(name), "must be at least 1"));
            }
        }
        if self.hidden % self.heads != 0 {
            return Err(LayoutError::new(
                f("heads"),
                format!(
                    "{} heads do not divide hidden size {}",
                    self.heads, self.hidden
                ),
            ));
        }
        if self.heads % self.kv_heads != 0 {
            return Err(LayoutError::new(
                f("kv_heads"),
                format!(
                    "{} KV heads do not divide {} heads",
                    self.kv_heads, self.heads
                ),
            ));
        }
        if self.experts > 1 {
            if self.top_k == 0 || self.top_k > self.experts {
                return Err(LayoutError::new(
                    f("top_k"),
                    format!(
                        "expected 1 to {} (the experts), got {}",
                        self.experts, self.top_k
                    ),
                ));
            }
            if self.expert_ffn == 0 {
                return Err(LayoutError::new(f("expert_ffn"), "must be at least 1"));
            }
        }
        Ok(())
    }
}

/// Named presets: (name, source). [`preset`] builds them.
pub const PRESETS: &[(&str, &str)] = &[
    ("megatron-1.7b", "Narayanan et al., SC '21 (arXiv 2104.04473), Table 1, row 1"),
    ("megatron-3.6b", "Narayanan et al., SC '21, Table 1, row 2"),
    ("megatron-7.5b", "Narayanan et al., SC '21, Table 1, row 3"),
    ("megatron-18b", "Narayanan et al., SC '21, Table 1, row 4"),
    ("megatron-39b", "Narayanan et al., SC '21, Table 1, row 5"),
    ("megatron-76b", "Narayanan et al., SC '21, Table 1, row 6"),
    ("megatron-145b", "Narayanan et al., SC '21, Table 1, row 7"),
    ("megatron-310b", "Narayanan et al., SC '21, Table 1, row 8"),
    ("megatron-530b", "Narayanan et al., SC '21, Table 1, row 9"),
    ("megatron-1t", "Narayanan et al., SC '21, Table 1, row 10"),
    (
        "megatron-162b",
        "Narayanan et al., SC '21, §5.4.1, Figure 13 (162.2B parameters; 32 layers × h 20480, 128 heads, the 530B row's width, give 162.2B by the paper's eq. 2)",
    ),
    ("gpt3-175b", "Brown et al., 2020 (arXiv 2005.14165), Table 2.1, GPT-3 175B"),
    ("llama3-8b", "Dubey et al., 2024 (arXiv 2407.21783), Table 3"),
    ("llama3-70b", "Dubey et al., 2024, Table 3"),
    ("llama3-405b", "Dubey et al., 2024, Table 3"),
    ("mixtral-8x7b", "Jiang et al., 2024 (arXiv 2401.04088), Table 1"),
    (
        "deepseek-v3",
        "DeepSeek-AI, 2024 (arXiv 2412.19437), §4.2; MLA modelled as 128 full heads of 56",
    ),
];

/// The preset `name`, or an error listing the known ones.
pub fn preset(name: &str) -> Result<Model, LayoutError> {
    let gpt = |l, h, a| Model::gpt(name, l, h, a, 51_200, 2048);
    let m = match name {
        "megatron-1.7b" => gpt(24, 2304, 24),
        "megatron-3.6b" => gpt(30, 3072, 32),
        "megatron-7.5b" => gpt(36, 4096, 32),
        "megatron-18b" => gpt(40, 6144, 48),
        "megatron-39b" => gpt(48, 8192, 64),
        "megatron-76b" => gpt(60, 10240, 80),
        "megatron-145b" => gpt(80, 12288, 96),
        "megatron-310b" => gpt(96, 16384, 128),
        "megatron-530b" => gpt(105, 20480, 128),
        "megatron-1t" => gpt(128, 25600, 160),
        "megatron-162b" => gpt(32, 20480, 128),
        "gpt3-175b" => Model::gpt(name, 96, 12288, 96, 50_257, 2048),
        "llama3-8b" => Model::llama(name, 32, 4096, 14_336, 32, 128_000),
        "llama3-70b" => Model::llama(name, 80, 8192, 28_672, 64, 128_000),
        "llama3-405b" => Model::llama(name, 126, 16_384, 53_248, 128, 128_000),
        "mixtral-8x7b" => Model {
            experts: 8,
            top_k: 2,
            expert_ffn: 14_336,
            seq: 32_768,
            ..Model::llama(name, 32, 4096, 14_336, 32, 32_000)
        },
        "deepseek-v3" => Model {
            kv_heads: 128,
            seq: 4096,
            experts: 256,
            top_k: 8,
            dense_layers: 3,
            expert_ffn: 2048,
            shared_experts: 1,
            ..Model::llama(name, 61, 7168, 18_432, 128, 129_280)
        },
        _ => {
            let known: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
            return Err(LayoutError::new(
                "model",
                format!(
                    "unknown preset `{name}`; expected one of {}",
                    known.join(", ")
                ),
            ));
        }
    };
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parameter counts against the published totals (the papers' own rounding).
    #[test]
    fn preset_parameter_counts_match_their_names() {
        for (name, billions) in [
            ("megatron-1.7b", 1.7),
            ("megatron-18b", 18.4),
            ("megatron-145b", 146.0),
            ("megatron-1t", 1008.0),
            ("megatron-162b", 162.2),
            ("gpt3-175b", 175.0),
            ("llama3-8b", 8.0),
            ("llama3-70b", 70.6),
            ("llama3-405b", 405.0),
            ("mixtral-8x7b", 46.7),
            ("deepseek-v3", 671.0),
        ] {
            let m = preset(name).unwrap();
            m.validate().unwrap();
            let got = m.params() as f64 / 1e9;
            assert!(
                (got / billions - 1.0).abs() < 0.05,
                "{name}: {got:.1}B, published {billions}B"
            );
        }
    }

    #[test]
    fn every_listed_preset_builds() {
        for (name, _) in PRESETS {
            preset(name).unwrap().validate().unwrap();
        }
        assert!(preset("gpt-5")
            .unwrap_err()
            .to_string()
            .starts_with("model: unknown preset"));
    }
}
