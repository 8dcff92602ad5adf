//! The escape hatch: every safe type hands out its underlying TensorRT or CUDA
//! handle through one trait, for calling APIs this crate does not wrap yet.
//! Using the handle is `unsafe` territory: it must not outlive its owner, and
//! it must not be destroyed or shared across threads against the owner's rules.

use trt_sys::ffi;

/// Access to the raw handle behind a safe type.
pub trait AsRaw {
    /// The raw handle type (`*mut nvinfer1::IBuilder`, `CUstream`, ...).
    type Raw;
    /// The handle. Valid while `self` lives.
    fn as_raw(&self) -> Self::Raw;
}

macro_rules! as_raw {
    ($ty:ty, $raw:ty, |$s:ident| $e:expr) => {
        impl AsRaw for $ty {
            type Raw = $raw;
            fn as_raw(&self) -> $raw {
                let $s = self;
                $e
            }
        }
    };
}

as_raw!(crate::Builder, *mut ffi::IBuilder, |s| s.raw_ptr());
as_raw!(crate::Network<'_>, *mut ffi::INetworkDefinition, |s| s.raw_ptr());
as_raw!(crate::BuilderConfig<'_>, *mut ffi::IBuilderConfig, |s| s.raw_ptr());
as_raw!(crate::TimingCache, *mut ffi::ITimingCache, |s| s.raw_ptr());
as_raw!(crate::Engine, *mut ffi::ICudaEngine, |s| s.raw_ptr());
as_raw!(crate::ExecutionContext, *mut ffi::IExecutionContext, |s| s.raw_ptr());
as_raw!(crate::Profiler, *mut ffi::Profiler, |s| s.raw_ptr());
as_raw!(crate::Runtime, *mut ffi::IRuntime, |s| s.raw_ptr());
as_raw!(crate::cuda::Stream, crate::cuda::RawStream, |s| crate::cuda::Stream::as_raw(s));
as_raw!(crate::cuda::Event, crate::cuda::RawEvent, |s| crate::cuda::Event::as_raw(s));
as_raw!(crate::cuda::Device, cudarc::driver::sys::CUcontext, |s| crate::cuda::Device::as_raw(s));
