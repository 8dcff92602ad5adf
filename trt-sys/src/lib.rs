//! trt-sys
