//! gpulse: a GPU dashboard that tells you why the GPU is not busier.
//!
//! Data flows one way: backend → sampler → engine (history + detector) → snapshot → front ends
//! (`tui`, `output`, `fleet`, `analyze`), and `commands` on top wires them together, one file per
//! subcommand. Lower layers never import upper ones.

pub mod analyze;
pub mod backend;
pub mod capped_read;
pub mod cert_validity;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod detector;
pub mod doctor;
pub mod engine;
pub mod fleet;
pub mod history;
pub mod host;
pub mod ledger;
pub mod model;
pub mod output;
pub mod pipeline;
pub mod printable;
pub mod recording;
pub mod sampler;
pub mod timeline;
pub mod tls_pem;
pub mod tui;
