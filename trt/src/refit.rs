//! Refit (`IRefitter`): new weights for an engine built refittable
//! ([`BuilderConfig::set_refittable`](crate::BuilderConfig::set_refittable)),
//! by name, without rebuilding. The refitter copies nothing until the refit,
//! so it keeps every weight handed to it until [`Refitter::refit_cuda_engine`]
//! returns, as TensorRT requires.

use trt_sys::ffi;

use crate::call::{call, call_owned};
use crate::cuda::Stream;
use crate::network::{HostData, Precision};
use crate::{Engine, Error, Result};

/// A refitter of one engine. The engine must not run while it is refitted.
pub struct Refitter {
    // Destroyed before the engine it refits (field order).
    raw: cxx::UniquePtr<ffi::IRefitter>,
    engine: Engine,
    held: Vec<Box<[u8]>>,
}

// SAFETY: a refitter is used by one thread at a time (every call takes `&mut self`).
unsafe impl Send for Refitter {}

impl std::fmt::Debug for Refitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refitter").field("weights_held", &self.held.len()).finish()
    }
}

impl Refitter {
    /// A refitter for `engine` (`createInferRefitter`); TensorRT refuses an
    /// engine that was not built refittable.
    pub fn new(engine: &Engine) -> Result<Self> {
        let factory = engine.inner.runtime().library().refitter_factory()?;
        let raw = engine.with_mut(|e| {
            // SAFETY: `factory` is `createInferRefitter_INTERNAL` of the engine's own library.
            call_owned("createInferRefitter", || ffi::create_refitter(factory, e))
        })?;
        Ok(Refitter { raw, engine: engine.clone(), held: Vec::new() })
    }

    fn pin(&mut self) -> std::pin::Pin<&mut ffi::IRefitter> {
        self.raw.as_mut().expect("non-null refitter")
    }

    /// The engine being refitted.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Names of every refittable weight (`getAllWeights`).
    pub fn all_weights(&mut self) -> Result<Vec<String>> {
        Ok(call("IRefitter::getAllWeights", || ffi::refitter_all_weights(self.pin()))?.0)
    }

    /// Names of weights that must still be set before a refit (`getMissingWeights`).
    pub fn missing_weights(&mut self) -> Result<Vec<String>> {
        Ok(call("IRefitter::getMissingWeights", || ffi::refitter_missing_weights(self.pin()))?.0)
    }

    /// New values for the weight `name` (`setNamedWeights`); their type and
    /// count must match what the engine holds.
    pub fn set_named_weights(&mut self, name: &str, data: HostData<'_>) -> Result<()> {
        let count = i64::try_from(data.len()).map_err(|_| Error::InvalidArgument(format!("weight '{name}' is too large")))?;
        let (dtype, bytes) = data.to_bytes(Precision::AsWritten);
        let (ok, messages) =
            call("IRefitter::setNamedWeights", || ffi::refitter_set_named_weights(self.pin(), name, dtype.to_sys(), &bytes, count))?;
        if !ok {
            return Err(Error::TensorRt { operation: "IRefitter::setNamedWeights", messages });
        }
        // The heap bytes do not move with the Box: TensorRT's pointer stays valid.
        self.held.push(bytes);
        Ok(())
    }

    /// Apply the weights set so far (`refitCudaEngineAsync` on `stream`, then
    /// waits for it). Fails, listing them, while weights are missing.
    pub fn refit_cuda_engine(&mut self, stream: &Stream) -> Result<()> {
        let missing = self.missing_weights()?;
        if !missing.is_empty() {
            return Err(Error::InvalidArgument(format!("refit needs these weights too: {}", missing.join(", "))));
        }
        let raw_stream = stream.as_raw() as usize;
        let (ok, messages) = call("IRefitter::refitCudaEngineAsync", || ffi::refitter_refit(self.pin(), raw_stream))?;
        stream.synchronize()?;
        if !ok {
            return Err(Error::TensorRt { operation: "IRefitter::refitCudaEngineAsync", messages });
        }
        self.held.clear();
        Ok(())
    }
}
