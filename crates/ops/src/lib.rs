//! railyard's operator tools as library functions returning data: `doctor` (read a node's
//! `/sys`, `/proc`, `/etc` into facts, then judge them), `lint` (manifest checks), `launch` (a
//! placement into torchrun/NCCL launch plans and their renderers), `cables` (a cable plan),
//! `place` (a placement decided from job, state and queue files) and `queues` (queue files
//! checked as a whole). No argument parsing, no printing: the CLI renders what these return.

pub mod cables;
pub mod doctor;
pub mod launch;
pub mod lint;
pub mod nccl_shapes;
pub mod place;
pub mod queues;
