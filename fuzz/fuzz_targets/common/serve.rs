//! What the server-side targets (`kserve_http`, `grpc_infer`) check on a
//! decoded request, and the models they check it against.
//!
//! The models are the README's text model (the default MiniLM served with an
//! `embedding` and its `last_hidden_state`) and its tensor model (INT64 token
//! ids in, `logits` out), their configs parsed by the real
//! `ModelConfig::parse`; no backend runs: after decoding, the server checks
//! a request against the config (`request_texts`, `wanted_outputs`, a tensor
//! model's `request_tensors`) before any work, and that is what runs here.
//! The tensor model's executor is a test double that only declares the
//! model's tensors ([`DeclaringOnly`]).

use std::sync::{Arc, OnceLock};

use trt_nlp::tensor::{Tensor, TensorBackend, TensorSpec};
use trt_nlp::ElementType;
use trt_serve::config::ModelConfig;
use trt_serve::test_support::kserve::{classification, element_count, Elements, InferRequest, OutputData};
use trt_serve::test_support::tensor_model::{datatype_of, TensorModel};
use trt_serve::Limits;
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

/// The README's tensor model: INT64 token ids, dynamic sequence length.
pub const TENSOR_CONFIG: &str = r#"platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] },
        { name: "attention_mask" data_type: TYPE_INT64 dims: [ -1 ] },
        { name: "token_type_ids" data_type: TYPE_INT64 dims: [ -1 ] } ]
output [ { name: "logits" data_type: TYPE_FP32 dims: [ 2 ] } ]
dynamic_batching { max_queue_delay_microseconds: 1000 }
"#;

/// A test double of a tensor executor: it declares the tensors of the
/// default model with INT64 inputs and never runs (the checks under fuzz
/// happen before any run).
#[derive(Debug)]
pub struct DeclaringOnly {
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
}

impl TensorBackend for DeclaringOnly {
    fn name(&self) -> &str {
        "declaring-only test double"
    }
    fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }
    fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }
    fn instances(&self) -> usize {
        1
    }
    fn run(&self, _: &[(&str, &Tensor)], _: &[&str]) -> trt_nlp::Result<Vec<Tensor>> {
        Err(trt_nlp::Error::Runtime { backend: "test double".into(), source: "the declaring-only test double does not run".into() })
    }
}

pub fn tensor_model() -> &'static TensorModel {
    static M: OnceLock<TensorModel> = OnceLock::new();
    M.get_or_init(|| {
        let spec = |name: &str, element, shape: &[i64]| TensorSpec { name: name.into(), element, shape: shape.to_vec() };
        let backend = DeclaringOnly {
            inputs: ["input_ids", "attention_mask", "token_type_ids"].iter().map(|n| spec(n, ElementType::I64, &[-1, -1])).collect(),
            outputs: vec![spec("logits", ElementType::F32, &[-1, 2])],
        };
        let config = ModelConfig::parse(TENSOR_CONFIG, "bert_ids").expect("the README's tensor config parses");
        TensorModel::new(&config, Arc::new(backend)).expect("the config fits the declared tensors").0
    })
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
    check_tensors(r.inputs.clone());
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

/// The tensor model's check: accepted tensors are exactly the declared
/// inputs, INT64, `[rows, seq]` with rows in 1..=8 shared by all, values as sent.
fn check_tensors(inputs: Vec<trt_serve::test_support::kserve::InputTensor>) {
    let model = tensor_model();
    let sent: Vec<(String, Vec<usize>, Vec<u8>)> = inputs
        .iter()
        .map(|t| (t.name.clone(), t.shape.clone(), if let Elements::Fixed(raw) = &t.data { raw.clone() } else { Vec::new() }))
        .collect();
    match model.request_tensors(inputs) {
        Ok(req) => {
            let names: Vec<&str> = model.input_names().collect();
            assert_eq!(req.tensors.len(), names.len());
            assert!((1..=model.max_batch()).contains(&req.rows));
            for (name, t) in names.iter().zip(&req.tensors) {
                let (_, shape, raw) = sent.iter().find(|(n, ..)| n == name).expect("every declared input was sent");
                assert_eq!(datatype_of(t.element()).as_str(), "INT64");
                assert_eq!((t.shape(), t.shape().len(), t.shape()[0]), (&shape[..], 2, req.rows));
                assert_eq!(&t.data().to_le_bytes(), raw, "input '{name}': values changed");
            }
            assert_eq!(sent.len(), names.len(), "only declared inputs are accepted");
        }
        Err(e) => check_error(&e),
    }
}
