//! `/metrics` of 8 simulated GPUs on hyper 1.x: the other half of the binary-size comparison
//! with `exporter_hand_written`. `cargo run --release --example exporter_hyper [ADDR [WEB_CONFIG_FILE]]`.

#[path = "support/exporter_example.rs"]
mod exporter_example;
#[path = "../benches/support/hyper_exporter.rs"]
mod hyper_exporter;

fn main() -> std::io::Result<()> {
    let snapshots = exporter_example::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let addr = exporter_example::listen_address();
        let security = exporter_example::web_security()?;
        let bound = hyper_exporter::serve(addr, snapshots, security).await?;
        eprintln!("serving http://{bound}/metrics");
        std::future::pending::<()>().await;
        Ok(())
    })
}
