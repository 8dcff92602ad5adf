//! Bytes as a `model.safetensors` file into `trt_hf::weights::Weights`
//! (HF's safetensors header reader, then this project's tensor look-up and
//! F32/F16/BF16 conversion), and every tensor it lists read back at its
//! own shape and at a wrong one.
//!
//! What must hold: no panic and no allocation sized by the header alone;
//! a file accepted has tensors whose data fits their shape; a read at the
//! listed shape either succeeds with exactly that many values or names an
//! element type that is not a float; a read at another shape is an error.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use trt_hf::weights::Weights;

fuzz_target!(|data: &[u8]| {
    let Ok(w) = Weights::from_shards(PathBuf::from("model.safetensors"), vec![(PathBuf::from("model.safetensors"), data.to_vec())]) else {
        return;
    };
    for name in w.names() {
        let shape = w.shape_of_exact(name).expect("a listed tensor has a shape").to_vec();
        match w.get_exact(name, &shape) {
            Ok(t) => assert_eq!(t.data.len(), shape.iter().product::<usize>()),
            Err(e) => assert!(e.to_string().contains("F32, F16 or BF16"), "{e}"),
        }
        let mut other = shape.clone();
        other.push(2);
        assert!(w.get_exact(name, &other).is_err());
    }
});
