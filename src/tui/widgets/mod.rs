//! The dashboard's widgets, each built per frame from a snapshot and a little UI state.

pub mod chart;
pub mod dialog;
pub mod findings;
pub mod footer;
pub mod gauge;
pub mod gpu_list;
pub mod gpu_panel;
pub mod header;
pub mod help;
pub mod host;
pub mod ledger;
pub mod log;
pub mod log_view;
pub mod panel_charts;
pub mod processes;
pub mod series;
pub mod status;
