//! Rank orders a placer may choose among for a layout, and the fastest of them on one
//! placement.
//!
//! The same GPUs in the same rank order can run a layout in more than one rank order of its
//! grid (Megatron-Core's `order` argument of `initialize_model_parallel`): the default
//! `tp-cp-ep-dp-pp` puts the DP replicas of a stage next to each other, `tp-cp-ep-pp-dp` the
//! stages of a pipeline. [`best_order`] prices the step in each ([`price_step`]) and keeps the
//! fastest; ties go to the earlier order, so the layout's own order wins unless another is
//! strictly faster.

use fabric::Fabric;
use serde::Serialize;

use crate::error::LayoutError;
use crate::layout::{order_label, Dim, Layout, Training, MEGATRON_ORDER, PP_INNER_ORDER};
use crate::price::{price_step, Step, StepInput};

/// The orders tried, in order: the layout's own, then Megatron's default, then the pipeline
/// inside data parallel; each once.
pub fn candidate_orders(layout: &Layout) -> Vec<[Dim; 5]> {
    let mut out = vec![layout.order];
    for o in [MEGATRON_ORDER, PP_INNER_ORDER] {
        if !out.contains(&o) {
            out.push(o);
        }
    }
    out
}

/// One order's step time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OrderTime {
    /// The order (`tp-cp-ep-dp-pp`).
    pub order: String,
    /// Its step, s.
    pub step_s: f64,
}

/// The fastest order on one placement.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderChoice {
    /// The chosen order.
    pub order: [Dim; 5],
    /// Its priced step.
    pub step: Step,
    /// Every order tried with its step time, in [`candidate_orders`]' order.
    pub tried: Vec<OrderTime>,
}

/// Price `input` in every order of [`candidate_orders`] of its layout and keep the one with the
/// lowest step time (the first on ties). The first pricing error is returned.
pub fn best_order(
    fabric: &mut Fabric<'_>,
    input: StepInput<'_>,
) -> Result<OrderChoice, LayoutError> {
    let mut best: Option<OrderChoice> = None;
    let mut tried = Vec::new();
    for order in candidate_orders(&input.training.layout) {
        let training = Training {
            layout: Layout {
                order,
                ..input.training.layout.clone()
            },
            ..input.training.clone()
        };
        let step = price_step(
            fabric,
            StepInput {
                training: &training,
                ..input
            },
        )?;
        tried.push(OrderTime {
            order: order_label(&order),
            step_s: step.step_s,
        });
        if best.as_ref().is_none_or(|b| step.step_s < b.step.step_s) {
            best = Some(OrderChoice {
                order,
                step,
                tried: Vec::new(),
            });
        }
    }
    let mut best = best.expect("candidate_orders is never empty");
    best.tried = tried;
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_start_with_the_layouts_own_and_repeat_none() {
        let l = Layout::parse("tp=8,pp=4,dp=16").unwrap();
        assert_eq!(candidate_orders(&l), vec![MEGATRON_ORDER, PP_INNER_ORDER]);
        let l = Layout::parse("tp=8,pp=4,dp=16,order=tp-cp-ep-pp-dp").unwrap();
        assert_eq!(candidate_orders(&l), vec![PP_INNER_ORDER, MEGATRON_ORDER]);
        let l = Layout::parse("tp=8,pp=4,dp=16,order=tp-pp-cp-ep-dp").unwrap();
        assert_eq!(candidate_orders(&l).len(), 3);
    }
}
