//! The dashboard's widgets, each built per frame from a snapshot and a little UI state.

pub mod chart;
pub mod findings;
pub mod gauge;
pub mod gpu_list;
pub mod gpu_panel;
pub mod header;
pub mod help;
pub mod log;
pub mod processes;
pub mod series;
pub mod status;
