//! What the server-side targets (`kserve_http`, `grpc_infer`) check on a
//! decoded request, and the model they check it against.
//!
//! The model is the README's text model (the default MiniLM served with an
//! `embedding` and its `last_hidden_state`), its config parsed by the real
//! `ModelConfig::parse`; no backend is loaded: after decoding, the server
//! checks a request against the config (`request_texts`, `wanted_outputs`)
//! before any work, and that is what runs here.

use std::sync::OnceLock;

use trt_serve::config::ModelConfig;
use trt_serve::kserve::{classification, element_count, Elements, InferRequest, OutputData};
use trt_serve::limits::Limits;
use trt_serve::ServeError;

/// The config of the model the requests are sent to.
pub const CONFIG: &str = r#"platform: "onnxruntime_onnx"
max_batch_size: 32
input [ { name: "text" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "embedding" data_type: TYPE_FP32 dims: [ 384 ] },
         { name: "last_hidden_state" data_type: TYPE_FP32 dims: [ -1, 384 ] } ]
dynamic_batching { max_queue_delay_microseconds: 1000 }
"#;

pub fn config() -> &'static ModelConfig {
    static C: OnceLock<ModelConfig> = OnceLock::new();
    C.get_or_init(|| ModelConfig::parse(CONFIG, "minilm").expect("the README's config parses"))
}

/// The server's limits, or small ones (so that short inputs reach the bounds).
pub fn limits(small: bool) -> Limits {
    if small {
        Limits { max_tensor_elements: 64, max_text_bytes: 32, ..Limits::default() }
    } else {
        Limits::default()
    }
}

/// A decode failure must be a 4xx the server names: invalid or too large.
pub fn check_error(e: &ServeError) {
    assert!(matches!(e, ServeError::InvalidArgument(_) | ServeError::TooLarge(_)), "unexpected error kind: {e:?}");
    assert!(!e.to_string().is_empty());
}

/// The invariants of a decoded request, then the server's checks against the model.
pub fn check_request(r: InferRequest, limits: &Limits) {
    for t in &r.inputs {
        let count = element_count(&t.name, &t.shape, limits).expect("a decoded shape is within the limits");
        assert_eq!(count, t.shape.iter().product::<usize>());
        match (&t.data, t.datatype.element_size()) {
            (Elements::Fixed(raw), Some(size)) => assert_eq!(raw.len(), count * size, "input '{}': bytes vs shape", t.name),
            (Elements::Bytes(elems), None) => assert_eq!(elems.len(), count, "input '{}': BYTES elements vs shape", t.name),
            (data, _) => panic!("input '{}': {:?} data held as {data:?}", t.name, t.datatype),
        }
    }
    let shapes: Vec<(String, Vec<usize>)> = r.inputs.iter().map(|t| (t.name.clone(), t.shape.clone())).collect();
    let config = config();
    match trt_serve::fuzzing::request_texts(config, r.inputs, limits) {
        Ok(texts) => {
            let (_, shape) = shapes.iter().find(|(n, _)| n == "text").expect("texts come from the text input");
            assert_eq!(shapes.len(), 1, "only the text input is accepted");
            assert_eq!((shape.len(), shape[1]), (2, 1));
            assert_eq!(texts.len(), shape[0]);
            assert!(!texts.is_empty());
            assert!(texts.iter().all(|t| t.len() <= limits.max_text_bytes));
        }
        Err(e) => check_error(&e),
    }
    let exposed: Vec<&str> = config.outputs.iter().map(|o| o.name.as_str()).collect();
    match trt_serve::fuzzing::wanted_outputs(&config.name, &r.outputs, r.binary_data_output, &exposed) {
        Ok(wanted) => {
            assert_eq!(wanted.len(), if r.outputs.is_empty() { exposed.len() } else { r.outputs.len() });
            for (name, _, k) in wanted {
                assert!(exposed.contains(&name.as_str()));
                // What a classification request makes of a [rows, classes] output.
                if let Some(k) = k {
                    let (rows, classes) = (2, 3);
                    let logits: Vec<f32> = (0..rows * classes).map(|i| i as f32 * 0.5).collect();
                    let (shape, data) = classification::classify(&name, &logits, &[rows, classes], k, None).expect("classify");
                    assert_eq!(shape, [rows, k.min(classes)]);
                    let OutputData::Bytes(strings) = data else { panic!("classification gives BYTES") };
                    assert_eq!(strings.len(), rows * k.min(classes));
                }
            }
        }
        Err(e) => check_error(&e),
    }
}
