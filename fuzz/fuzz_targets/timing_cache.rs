//! Timing-cache bytes (a `--timing-cache` file) into
//! `BuilderConfig::create_timing_cache`, then serialize and combine what was
//! accepted. TensorRT parses these bytes on the CPU; what must hold: a cache or
//! a typed error, and an accepted cache round-trips through `serialize`.
#![no_main]

use libfuzzer_sys::fuzz_target;

thread_local! {
    static BUILDER: &'static trt::Builder =
        Box::leak(Box::new(trt::Builder::new().expect("TensorRT-RTX loads (run scripts/setup)")));
}

fuzz_target!(|data: &[u8]| {
    BUILDER.with(|builder| {
        let config = builder.config().expect("a builder config");
        match config.create_timing_cache(data) {
            Ok(mut cache) => {
                let bytes = cache.serialize().expect("an accepted cache serializes");
                let again = config.create_timing_cache(&bytes).expect("a serialized cache is accepted again");
                let _ = cache.combine(&again, true);
            }
            Err(trt::Error::TensorRt { .. }) | Err(trt::Error::Cpp { .. }) => {}
            Err(other) => panic!("create_timing_cache: unexpected error kind: {other:?}"),
        }
    });
});
