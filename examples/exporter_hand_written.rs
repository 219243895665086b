//! `/metrics` of 8 simulated GPUs on gpulse's own HTTP server: with `exporter_hyper`, the pair
//! whose release binaries differ only in the server (docs/PERFORMANCE.md, "Exporter:
//! hand-written vs hyper"). `cargo run --release --example exporter_hand_written [ADDR [WEB_CONFIG_FILE]]`.

#[path = "support/exporter_example.rs"]
mod exporter_example;

fn main() -> std::io::Result<()> {
    let snapshots = exporter_example::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let addr = exporter_example::listen_address();
        let options = gpulse::output::exporter::ServeOptions {
            security: exporter_example::web_security()?,
            ..Default::default()
        };
        let (bound, server) =
            gpulse::output::exporter::spawn_server_with(addr, snapshots, options).await?;
        eprintln!("serving http://{bound}/metrics");
        let _ = server.await;
        Ok(())
    })
}
