//! Weight streaming: an engine built with
//! [`BuilderConfig::set_weight_streaming`](crate::BuilderConfig::set_weight_streaming)
//! may keep part of its weights in host memory and stream them to the GPU as
//! layers run, within a budget of device memory for weights
//! (`setWeightStreamingBudgetV2` and the queries around it).
//!
//! The budget is set before the engine's execution contexts are created:
//! TensorRT refuses to change it while one exists.

use trt_sys::ffi;

use crate::call::call;
use crate::{Engine, Error, Result};

fn bytes(operation: &'static str, v: i64) -> Result<u64> {
    u64::try_from(v).map_err(|_| Error::InvalidArgument(format!("{operation} returned {v}")))
}

impl Engine {
    /// Bytes of weights that can stream (`getStreamableWeightsSize`); 0 when
    /// the plan was not built for weight streaming.
    pub fn streamable_weights_size(&self) -> Result<u64> {
        let (v, _) = call("getStreamableWeightsSize", || ffi::engine_streamable_weights_size(self.inner.get()))?;
        bytes("getStreamableWeightsSize", v.max(0))
    }

    /// The current budget (`getWeightStreamingBudgetV2`); the streamable size
    /// when weight streaming is off.
    pub fn weight_streaming_budget(&self) -> Result<u64> {
        let (v, _) = call("getWeightStreamingBudgetV2", || ffi::engine_weight_streaming_budget(self.inner.get()))?;
        bytes("getWeightStreamingBudgetV2", v)
    }

    /// The budget TensorRT would choose from the free device memory
    /// (`getWeightStreamingAutomaticBudget`).
    pub fn weight_streaming_automatic_budget(&self) -> Result<u64> {
        let (v, _) = call("getWeightStreamingAutomaticBudget", || ffi::engine_weight_streaming_automatic_budget(self.inner.get()))?;
        bytes("getWeightStreamingAutomaticBudget", v)
    }

    /// Extra device memory each context needs at the current budget
    /// (`getWeightStreamingScratchMemorySize`).
    pub fn weight_streaming_scratch_memory_size(&self) -> Result<u64> {
        let (v, _) = call("getWeightStreamingScratchMemorySize", || ffi::engine_weight_streaming_scratch_memory_size(self.inner.get()))?;
        bytes("getWeightStreamingScratchMemorySize", v)
    }

    /// Keep at most `bytes` of weights on the GPU (`setWeightStreamingBudgetV2`;
    /// at or above [`streamable_weights_size`](Self::streamable_weights_size)
    /// streaming is off). Errors when the plan does not stream weights or
    /// TensorRT refuses (e.g. while an execution context exists).
    pub fn set_weight_streaming_budget(&self, bytes: u64) -> Result<()> {
        if self.streamable_weights_size()? == 0 {
            return Err(Error::InvalidArgument(
                "this engine streams no weights (build it with BuilderConfig::set_weight_streaming)".into(),
            ));
        }
        let b = i64::try_from(bytes).map_err(|_| Error::InvalidArgument(format!("weight streaming budget {bytes} is too large")))?;
        let (ok, messages) = self.with_mut(|e| call("setWeightStreamingBudgetV2", || ffi::engine_set_weight_streaming_budget(e, b)))?;
        if !ok {
            return Err(Error::TensorRt { operation: "setWeightStreamingBudgetV2", messages });
        }
        Ok(())
    }
}
