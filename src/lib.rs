//! gpulse: a GPU dashboard that tells you why the GPU is not busier.
//!
//! Data flows one way: backend → sampler → engine (history + detector) → snapshot → front ends.

pub mod analyze;
pub mod backend;
pub mod cli;
pub mod clock;
pub mod config;
pub mod detector;
pub mod doctor;
pub mod engine;
pub mod fleet;
pub mod history;
pub mod host;
pub mod live;
pub mod model;
pub mod output;
pub mod sampler;
pub mod tui;
