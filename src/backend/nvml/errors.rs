//! What an NVML error means for gpulse: the GPU is gone, the metric is unsupported, or this
//! one read failed; and, at start, why no GPU could be opened.

use nvml_wrapper::error::NvmlError;

/// How one failed call is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The device itself stopped answering: mark the GPU lost.
    Lost,
    /// This GPU or driver does not have the metric: absent, and not asked again.
    Unsupported,
    /// Nothing this time (an empty sample buffer, a timeout): absent this tick, asked again.
    Absent,
}

/// Classify an error from a metric call. `core` is true for the call that decides whether the
/// GPU answers at all (memory info): there `Unknown` and `Uninitialized` also mean lost.
pub fn classify(e: &NvmlError, core: bool) -> Failure {
    match e {
        NvmlError::GpuLost | NvmlError::ResetRequired | NvmlError::DriverNotLoaded => Failure::Lost,
        NvmlError::Unknown | NvmlError::Uninitialized if core => Failure::Lost,
        NvmlError::NotSupported
        | NvmlError::InvalidArg
        | NvmlError::FunctionNotFound
        | NvmlError::FailedToLoadSymbol(_)
        | NvmlError::NoPermission => Failure::Unsupported,
        _ => Failure::Absent,
    }
}

/// Why NVML could not be opened, in the words a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum NvmlOpenError {
    #[error(
        "libnvidia-ml.so.1 could not be loaded ({detail}): the NVIDIA driver is not installed, \
         or its library is not on the loader path"
    )]
    LibraryNotFound { detail: String },
    #[error(
        "libnvidia-ml.so.1 loaded but the NVIDIA kernel driver is not loaded: check `nvidia-smi`, \
         `lsmod | grep nvidia`, or reinstall the driver"
    )]
    DriverNotLoaded,
    #[error(
        "no permission to open the NVIDIA devices (NVML answered NoPermission): check the \
         permissions of /dev/nvidia*, or that this container was started with the GPUs"
    )]
    NoPermission,
    #[error(
        "the NVIDIA library and kernel driver versions differ (after a driver update): reboot, \
         or reload the nvidia kernel modules"
    )]
    VersionMismatch,
    #[error("the NVIDIA driver answered but reports no GPUs (device count 0)")]
    NoDevices,
    #[error("NVML call `{call}` failed: {detail}")]
    Call { call: &'static str, detail: String },
}

/// Map the error of an NVML call made while opening the backend.
pub fn open_error(call: &'static str, e: NvmlError) -> NvmlOpenError {
    match e {
        NvmlError::LibloadingError(err) => NvmlOpenError::LibraryNotFound {
            detail: err.to_string(),
        },
        NvmlError::LibraryNotFound => NvmlOpenError::LibraryNotFound {
            detail: "NVML reports its library missing".to_string(),
        },
        NvmlError::FailedToLoadSymbol(sym) => NvmlOpenError::LibraryNotFound {
            detail: format!("symbol {sym} missing: the library is too old or not NVIDIA's"),
        },
        NvmlError::DriverNotLoaded => NvmlOpenError::DriverNotLoaded,
        NvmlError::NoPermission => NvmlOpenError::NoPermission,
        NvmlError::LibRmVersionMismatch => NvmlOpenError::VersionMismatch,
        other => NvmlOpenError::Call {
            call,
            detail: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_unsupported_and_absent_are_told_apart() {
        assert_eq!(classify(&NvmlError::GpuLost, false), Failure::Lost);
        assert_eq!(classify(&NvmlError::Unknown, true), Failure::Lost);
        assert_eq!(classify(&NvmlError::Uninitialized, true), Failure::Lost);
        assert_eq!(classify(&NvmlError::Unknown, false), Failure::Absent);
        assert_eq!(
            classify(&NvmlError::NotSupported, false),
            Failure::Unsupported
        );
        assert_eq!(
            classify(&NvmlError::InvalidArg, false),
            Failure::Unsupported
        );
        assert_eq!(classify(&NvmlError::NotFound, false), Failure::Absent);
        assert_eq!(classify(&NvmlError::Timeout, false), Failure::Absent);
    }

    #[test]
    fn open_errors_say_what_failed() {
        let e = open_error("init", NvmlError::LibraryNotFound).to_string();
        assert!(e.contains("libnvidia-ml.so.1 could not be loaded"), "{e}");
        let e = open_error("init", NvmlError::DriverNotLoaded).to_string();
        assert!(e.contains("kernel driver is not loaded"), "{e}");
        let e = open_error("init", NvmlError::NoPermission).to_string();
        assert!(e.contains("no permission"), "{e}");
        assert!(e.contains("/dev/nvidia"), "{e}");
        let e = open_error("device_count", NvmlError::Unknown).to_string();
        assert!(e.contains("`device_count`"), "{e}");
        assert!(NvmlOpenError::NoDevices
            .to_string()
            .contains("device count 0"));
    }

    #[test]
    fn a_missing_library_on_this_machine_maps_to_library_not_found() {
        // Loading a library that does not exist gives the same libloading error as a machine
        // without the driver.
        match nvml_wrapper::Nvml::builder()
            .lib_path(std::ffi::OsStr::new("libgpulse-does-not-exist.so.1"))
            .init()
        {
            Ok(_) => panic!("a made-up library name loaded"),
            Err(err) => {
                let msg = open_error("init", err).to_string();
                assert!(
                    msg.starts_with("libnvidia-ml.so.1 could not be loaded"),
                    "{msg}"
                );
                assert!(msg.contains("libgpulse-does-not-exist.so.1"), "{msg}");
            }
        }
    }
}
