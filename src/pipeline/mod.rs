//! Pipelines that feed the engine and publish its snapshots on a watch channel: [`Live`] samples a
//! backend's GPUs on their threads; [`playback`] plays a recording at its own pace. Front ends read
//! either the same way.

pub mod live;
pub mod playback;

pub use live::Live;
