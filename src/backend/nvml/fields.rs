//! NVML field values: many counters in one driver call (`nvmlDeviceGetFieldValues`), each
//! answered or refused on its own.
//!
//! nvml-wrapper's call sets every field's scope to 0; NVLink counters take the link as their
//! scope, so those go through the raw call here. Field ids 251–273 were renumbered by drivers
//! from 580.82 on: nvml-wrapper (0.12.1 and later) translates them in its own call, so every
//! field in that range must go through [`field_values`]; the scoped call is only for the NVLink
//! ids outside it (asserted below).

use std::mem;

use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::{nvml_try, NvmlError};
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::nvmlFieldValue_t;

use super::values::sample_value;

/// The field ids a driver renumbered (nvml-wrapper translates them in [`field_values`]).
const RENUMBERED: std::ops::RangeInclusive<u32> = 251..=273;

/// One field's answer as a number, or the driver's error for that field alone (NotSupported on
/// a GPU without the counter).
pub type FieldAnswer = Result<f64, NvmlError>;

/// The values of `ids` (scope 0), through nvml-wrapper (which translates renumbered ids). The
/// outer error is the call's own (a GPU that stopped answering, a driver without the call).
pub fn field_values(d: &Device<'static>, ids: &[u32]) -> Result<Vec<FieldAnswer>, NvmlError> {
    let fields: Vec<FieldId> = ids.iter().map(|id| FieldId(*id)).collect();
    Ok(d.field_values_for(&fields)?
        .into_iter()
        .map(|r| r.and_then(|s| s.value).map(|v| sample_value(&v)))
        .collect())
}

/// The values of `(field, scope)` pairs in one call, for counters kept per NVLink link.
pub fn scoped_field_values(
    nvml: &Nvml,
    d: &Device<'static>,
    fields: &[(u32, u32)],
) -> Result<Vec<FieldAnswer>, NvmlError> {
    debug_assert!(
        fields.iter().all(|(id, _)| !RENUMBERED.contains(id)),
        "a renumbered field id must go through field_values"
    );
    if fields.is_empty() {
        return Ok(Vec::new());
    }
    let Ok(sym) = nvml.lib().nvmlDeviceGetFieldValues.as_ref() else {
        return Err(NvmlError::FunctionNotFound);
    };
    let mut values: Vec<nvmlFieldValue_t> = fields
        .iter()
        .map(|&(id, scope)| {
            // SAFETY: nvmlFieldValue_t is a plain C struct (integers and a union of numbers),
            // for which all zero bits is a valid value.
            let mut v: nvmlFieldValue_t = unsafe { mem::zeroed() };
            v.fieldId = id;
            v.scopeId = scope;
            v
        })
        .collect();
    let count = i32::try_from(values.len()).map_err(|_| NvmlError::InvalidArg)?;
    // SAFETY: the device handle belongs to the library `nvml` loaded and lives as long as it;
    // `values` holds `count` initialised entries that the driver fills in place.
    nvml_try(unsafe { sym(d.handle(), count, values.as_mut_ptr()) })?;
    Ok(values
        .into_iter()
        .map(|v| {
            FieldValueSample::try_from(v)
                .and_then(|s| s.value)
                .map(|v: SampleValue| sample_value(&v))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nvlink_throughput_ids_are_outside_the_renumbered_range() {
        use nvml_wrapper::sys_exports::field_id::{
            NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
        };
        for id in [
            NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
            NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
        ] {
            assert!(!RENUMBERED.contains(&id), "{id}");
        }
    }
}
