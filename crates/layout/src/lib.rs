//! Training layouts: what a parallel layout's communicators are, what they move, and what a
//! step costs on a railyard fabric.
//!
//! A training job is data ([`Training`]: a [`Model`], a [`Layout`], batch, precision, optimizer
//! sharding, recomputation, overlap). [`groups()`] turns the layout into rank groups by
//! Megatron-Core's rank-order rule, [`traffic()`] says what each kind of group moves per step,
//! [`compute`] counts FLOPs and the pipeline bubble, and [`price_step`] prices all of it on a
//! [`fabric::Fabric`] for one rank-to-GPU mapping, with the running jobs' traffic. [`advise`]
//! ranks the exposed costs with the change that would cut each; [`Pace`] re-prices a step from
//! each kind's bandwidth ratio, for the simulator; [`slice_layers`] derives the Kueue slices that
//! keep a layout's groups in a cluster's tiers.
//!
//! This crate is pure: no I/O, no clock. It knows nothing about placement, queues or files:
//! the caller says which GPU each rank runs on.

pub mod advice;
pub mod compute;
mod error;
pub mod groups;
pub mod layout;
pub mod model;
pub mod orders;
pub mod pace;
pub mod price;
pub mod slices;
pub mod traffic;

pub use advice::{advise, Advice};
pub use error::LayoutError;
pub use groups::{groups, Kind};
pub use layout::{Dim, Layout, Optimizer, Precision, Recompute, Training};
pub use model::{preset, Model, PRESETS};
pub use orders::{best_order, candidate_orders, OrderChoice, OrderTime};
pub use pace::{Pace, PaceComm};
pub use price::{
    first_gpus, groups_highest_tier, price_step, price_step_without_hot_links, PricedComm, Step,
    StepInput,
};
pub use slices::{slice_layers, LevelRoom, Slice};
pub use traffic::{traffic, Op, Traffic};
