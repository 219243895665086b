//! Headless front ends: the snapshot table and JSON, the NDJSON stream and the Prometheus
//! exporter. Each reads the engine's [`crate::engine::Snapshot`]s; none talks to a GPU library
//! itself, and none decides what a command does (the command layer above does).

pub mod exporter;
pub mod health_doc;
pub mod http_server;
pub mod json;
pub mod json_jobs;
pub mod prometheus;
pub mod prometheus_ledger;
pub mod snapshot_text;
pub mod stream;
pub mod web_config;
