//! A model config bound to a [`TensorBackend`]: a model whose inputs are
//! tensors the client makes (token ids from its own tokenizer, features),
//! served as Triton serves it.
//!
//! | step | what is checked or done |
//! |---|---|
//! | load | each `input` / `output` of the config against the model file (name, `data_type`, `dims` after the batch axis where `max_batch_size > 0`); a config that lists none takes the model's own (Triton's auto-complete), and metadata and `/config` show the completed config; every model input must be declared |
//! | request | every declared input given once, no other; the datatype the config declares; the rank, each fixed dimension, and a batch of 1..=`max_batch_size` rows that all inputs share; each a 400 naming the input |
//! | response | outputs in the model's element type (INT64 stays INT64, FP16 stays FP16), JSON or binary; classification on float outputs |
//!
//! Element types: those of [`trt_nlp::ElementType`] (BOOL, UINT8, INT8,
//! INT32, INT64, FP16, BF16, FP32); a config or model naming another is
//! refused at load with the tensor named.

use std::sync::Arc;

use trt_nlp::tensor::{Tensor, TensorBackend, TensorData, TensorSpec};
use trt_nlp::ElementType;

use crate::config::{ModelConfig, TensorConfig};
use crate::error::{ServeError, ServeResult};
use crate::models::tensor_padding::{Padding, TensorView};
use crate::protocols::kserve::{DataType, Elements, InputTensor, OutputData};

/// The KServe datatype of an element type.
pub fn datatype_of(element: ElementType) -> DataType {
    match element {
        ElementType::F32 => DataType::Fp32,
        ElementType::F16 => DataType::Fp16,
        ElementType::BF16 => DataType::Bf16,
        ElementType::I8 => DataType::Int8,
        ElementType::U8 => DataType::Uint8,
        ElementType::I32 => DataType::Int32,
        ElementType::I64 => DataType::Int64,
        ElementType::Bool => DataType::Bool,
    }
}

/// The element type of a KServe datatype, where the backends have it.
pub fn element_of(datatype: DataType) -> Option<ElementType> {
    Some(match datatype {
        DataType::Fp32 => ElementType::F32,
        DataType::Fp16 => ElementType::F16,
        DataType::Bf16 => ElementType::BF16,
        DataType::Int8 => ElementType::I8,
        DataType::Uint8 => ElementType::U8,
        DataType::Int32 => ElementType::I32,
        DataType::Int64 => ElementType::I64,
        DataType::Bool => ElementType::Bool,
        _ => return None,
    })
}

/// One declared input or output: the config's entry, resolved against the model.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Declared {
    name: String,
    element: ElementType,
    /// Dimensions after the batch axis (all of them when the model is not batched), -1 where dynamic.
    dims: Vec<i64>,
}

/// A tensor model and what its config declares.
#[derive(Debug)]
pub struct TensorModel {
    backend: Arc<dyn TensorBackend>,
    inputs: Vec<Declared>,
    outputs: Vec<Declared>,
    /// `max_batch_size` (0: not batched; shapes are whole).
    max_batch: usize,
    /// Which inputs ragged requests may be padded along (module `tensor_padding`).
    padding: Padding,
}

/// The tensors of one request, in the config's input order, and its rows.
#[derive(Debug)]
pub struct RequestTensors {
    /// Rows along the batch axis (1 for a model that does not batch).
    pub rows: usize,
    /// One tensor per declared input.
    pub tensors: Vec<Tensor>,
}

fn resolve(kind: &str, declared: &[TensorConfig], model: &[TensorSpec], batched: bool, model_name: &str) -> ServeResult<Vec<Declared>> {
    let invalid = |m: String| ServeError::invalid(format!("model '{model_name}': {m}"));
    let batch_axis = |spec: &TensorSpec| -> ServeResult<Vec<i64>> {
        if !batched {
            return Ok(spec.shape.clone());
        }
        match spec.shape.first() {
            Some(&d) if d < 0 => Ok(spec.shape[1..].to_vec()),
            _ => Err(invalid(format!(
                "{kind} '{}' has shape {:?} in the model, with no dynamic batch axis first: set max_batch_size 0",
                spec.name, spec.shape
            ))),
        }
    };
    if declared.is_empty() {
        // Triton's auto-complete: the model's own tensors.
        return model.iter().map(|s| Ok(Declared { name: s.name.clone(), element: s.element, dims: batch_axis(s)? })).collect();
    }
    let mut out = Vec::with_capacity(declared.len());
    for d in declared {
        let Some(spec) = model.iter().find(|s| s.name == d.name) else {
            let names: Vec<&str> = model.iter().map(|s| s.name.as_str()).collect();
            return Err(invalid(format!("{kind} '{}' is not one of the model's {kind}s ({})", d.name, names.join(", "))));
        };
        let element = element_of(d.data_type).ok_or_else(|| {
            invalid(format!("{kind} '{}': data_type {} is not served for tensor models", d.name, d.data_type.config_name()))
        })?;
        if element != spec.element {
            return Err(invalid(format!(
                "{kind} '{}': the config declares {}, the model takes {}",
                d.name,
                d.data_type.config_name(),
                datatype_of(spec.element).config_name()
            )));
        }
        let model_dims = batch_axis(spec)?;
        let fits = model_dims.len() == d.dims.len() && model_dims.iter().zip(&d.dims).all(|(&m, &c)| m < 0 || c < 0 || m == c);
        if !fits {
            return Err(invalid(format!(
                "{kind} '{}': dims {:?} do not match the model's {model_dims:?}{}",
                d.name,
                d.dims,
                if batched { " (after the batch axis)" } else { "" }
            )));
        }
        // The tighter of the two: a dimension the model fixes stays fixed.
        let dims = model_dims.iter().zip(&d.dims).map(|(&m, &c)| if m >= 0 { m } else { c }).collect();
        out.push(Declared { name: d.name.clone(), element, dims });
    }
    Ok(out)
}

fn config_entry(d: &Declared) -> TensorConfig {
    TensorConfig { name: d.name.clone(), data_type: datatype_of(d.element), dims: d.dims.clone() }
}

impl TensorModel {
    /// `backend` bound to `config`, and the config completed from the model
    /// (inputs and outputs it did not list).
    pub fn new(config: &ModelConfig, backend: Arc<dyn TensorBackend>) -> ServeResult<(Self, ModelConfig)> {
        let name = &config.name;
        let batched = config.max_batch_size > 0;
        let inputs = resolve("input", &config.inputs, backend.inputs(), batched, name)?;
        if let Some(missing) = backend.inputs().iter().find(|s| !inputs.iter().any(|d| d.name == s.name)) {
            return Err(ServeError::invalid(format!("model '{name}': the model's input '{}' is not declared in the config", missing.name)));
        }
        let outputs = resolve("output", &config.outputs, backend.outputs(), batched, name)?;
        if let Some(limit) = backend.max_batch().filter(|&m| m < config.max_batch_size) {
            return Err(ServeError::invalid(format!(
                "model '{name}': max_batch_size {} is more than the model accepts ({limit})",
                config.max_batch_size
            )));
        }
        fn view(ds: &[Declared]) -> Vec<TensorView<'_>> {
            ds.iter().map(|d| (d.name.as_str(), d.element, d.dims.as_slice())).collect()
        }
        let padding = Padding::from_config(config, &view(&inputs), &view(&outputs))?;
        let mut completed = config.clone();
        completed.inputs = inputs.iter().map(config_entry).collect();
        completed.outputs = outputs.iter().map(config_entry).collect();
        Ok((TensorModel { backend, inputs, outputs, max_batch: config.max_batch_size, padding }, completed))
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn TensorBackend> {
        &self.backend
    }

    /// The backend's name (`onnxruntime`, `tensorrt`).
    pub fn backend_name(&self) -> &str {
        self.backend.name()
    }

    /// Runs that can go on at once.
    pub fn instances(&self) -> usize {
        self.backend.instances()
    }

    /// `max_batch_size` (0: the model is not batched).
    pub fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// The padding rules for ragged requests in one batch.
    pub(crate) fn padding(&self) -> &Padding {
        &self.padding
    }

    /// The declared input names, in config order.
    pub fn input_names(&self) -> impl Iterator<Item = &str> {
        self.inputs.iter().map(|d| d.name.as_str())
    }

    /// The declared output names, in config order.
    pub fn output_names(&self) -> impl Iterator<Item = &str> {
        self.outputs.iter().map(|d| d.name.as_str())
    }

    /// A request's inputs checked against the config and made tensors.
    pub fn request_tensors(&self, inputs: Vec<InputTensor>) -> ServeResult<RequestTensors> {
        let mut slots: Vec<Option<Tensor>> = vec![None; self.inputs.len()];
        let mut rows: Option<(usize, String)> = None;
        for input in inputs {
            let Some(i) = self.inputs.iter().position(|d| d.name == input.name) else {
                let names: Vec<&str> = self.input_names().collect();
                return Err(ServeError::invalid(format!("unknown input '{}' (the model takes {})", input.name, names.join(", "))));
            };
            let d = &self.inputs[i];
            if slots[i].is_some() {
                return Err(ServeError::invalid(format!("input '{}' is given twice", d.name)));
            }
            let want = datatype_of(d.element);
            if input.datatype != want {
                return Err(ServeError::invalid(format!(
                    "input '{}' has datatype {}, the model expects {}",
                    d.name,
                    input.datatype.as_str(),
                    want.as_str()
                )));
            }
            let expected = || {
                let dims: Vec<i64> =
                    if self.max_batch > 0 { std::iter::once(-1).chain(d.dims.iter().copied()).collect() } else { d.dims.clone() };
                format!("input '{}' has shape {:?}, the model expects {dims:?} (-1: any)", d.name, input.shape)
            };
            let (n, inner) = if self.max_batch > 0 {
                match input.shape.split_first() {
                    Some((&n, inner)) => (n, inner),
                    None => return Err(ServeError::invalid(expected())),
                }
            } else {
                (1, input.shape.as_slice())
            };
            let fits = inner.len() == d.dims.len() && d.dims.iter().zip(inner).all(|(&m, &s)| m < 0 || m as usize == s);
            if !fits {
                return Err(ServeError::invalid(expected()));
            }
            if self.max_batch > 0 && (n == 0 || n > self.max_batch) {
                return Err(ServeError::invalid(format!(
                    "input '{}' has {n} rows (shape {:?}); the model takes 1 to max_batch_size {}",
                    d.name, input.shape, self.max_batch
                )));
            }
            match &rows {
                Some((m, other)) if *m != n => {
                    return Err(ServeError::invalid(format!(
                        "input '{}' has {n} rows but input '{other}' has {m}: every input has the same batch size",
                        d.name
                    )))
                }
                Some(_) => {}
                None => rows = Some((n, d.name.clone())),
            }
            let Elements::Fixed(raw) = input.data else {
                return Err(ServeError::invalid(format!("input '{}' carries BYTES elements, the model expects {}", d.name, want.as_str())));
            };
            let data = TensorData::from_le_bytes(&d.name, d.element, &raw).map_err(|e| ServeError::invalid(e.to_string()))?;
            slots[i] = Some(Tensor::new(&d.name, input.shape, data).map_err(|e| ServeError::invalid(e.to_string()))?);
        }
        let mut tensors = Vec::with_capacity(slots.len());
        for (slot, d) in slots.into_iter().zip(&self.inputs) {
            tensors.push(slot.ok_or_else(|| ServeError::invalid(format!("the request has no input '{}'", d.name)))?);
        }
        Ok(RequestTensors { rows: rows.map_or(1, |(n, _)| n), tensors })
    }

    /// Runs one batch (inputs in config order) and returns every declared
    /// output, in config order.
    pub fn run(&self, inputs: &[Tensor]) -> trt_nlp::Result<Vec<Tensor>> {
        let named: Vec<(&str, &Tensor)> = self.inputs.iter().map(|d| d.name.as_str()).zip(inputs).collect();
        let outputs: Vec<&str> = self.output_names().collect();
        self.backend.run(&named, &outputs)
    }

    /// Runs one row of zeros (dynamic dimensions 1), so the first request
    /// does not pay for allocation and kernel selection, and a model that
    /// cannot run fails its load.
    pub fn warm_up(&self) -> ServeResult<()> {
        let inputs: Vec<Tensor> = self
            .inputs
            .iter()
            .map(|d| {
                let dims = d.dims.iter().map(|&x| x.max(1) as usize);
                let shape: Vec<usize> = if self.max_batch > 0 { std::iter::once(1).chain(dims).collect() } else { dims.collect() };
                let count = shape.iter().product();
                Tensor::new(&d.name, shape, TensorData::zeros(d.element, count)).map_err(|e| ServeError::invalid(e.to_string()))
            })
            .collect::<ServeResult<_>>()?;
        self.run(&inputs).map_err(|e| ServeError::Unavailable(format!("the model does not run on zeros: {e}")))?;
        Ok(())
    }
}

/// An output tensor as response data: its datatype and little-endian bytes.
pub fn output_data(t: &Tensor) -> OutputData {
    OutputData::Fixed { datatype: datatype_of(t.element()), raw: t.data().to_le_bytes() }
}

/// A float output's values as f32 (for the classification extension).
pub fn float_values(name: &str, t: &Tensor) -> ServeResult<Vec<f32>> {
    Ok(match t.data() {
        TensorData::F32(v) => v.clone(),
        TensorData::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
        TensorData::BF16(v) => v.iter().map(|x| x.to_f32()).collect(),
        _ => {
            return Err(ServeError::invalid(format!(
                "output '{name}' is {}; classification reads float outputs",
                datatype_of(t.element()).as_str()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelConfig;

    /// A test double of a backend: declares tensors, echoes nothing (never run here).
    #[derive(Debug)]
    struct DeclaringOnly(Vec<TensorSpec>, Vec<TensorSpec>);

    impl TensorBackend for DeclaringOnly {
        fn name(&self) -> &str {
            "declaring-only test double"
        }
        fn inputs(&self) -> &[TensorSpec] {
            &self.0
        }
        fn outputs(&self) -> &[TensorSpec] {
            &self.1
        }
        fn instances(&self) -> usize {
            1
        }
        fn run(&self, _: &[(&str, &Tensor)], _: &[&str]) -> trt_nlp::Result<Vec<Tensor>> {
            Err(trt_nlp::Error::Runtime { backend: "test double".into(), source: "the declaring-only test double does not run".into() })
        }
    }

    fn bert() -> Arc<dyn TensorBackend> {
        let spec = |n: &str, e, s: &[i64]| TensorSpec { name: n.into(), element: e, shape: s.to_vec() };
        Arc::new(DeclaringOnly(
            ["input_ids", "attention_mask", "token_type_ids"].iter().map(|n| spec(n, ElementType::I64, &[-1, -1])).collect(),
            vec![spec("logits", ElementType::F32, &[-1, 2]), spec("last_hidden_state", ElementType::F32, &[-1, -1, 384])],
        ))
    }

    fn config(text: &str) -> ModelConfig {
        ModelConfig::parse(text, "m").unwrap()
    }

    fn input(name: &str, datatype: DataType, shape: &[usize], raw: Vec<u8>) -> InputTensor {
        InputTensor { name: name.into(), datatype, shape: shape.to_vec(), data: Elements::Fixed(raw) }
    }

    #[test]
    fn a_config_without_tensors_is_completed_from_the_model() {
        let (model, completed) = TensorModel::new(&config("platform: \"onnxruntime_onnx\"\nmax_batch_size: 8\n"), bert()).unwrap();
        assert_eq!(model.input_names().collect::<Vec<_>>(), ["input_ids", "attention_mask", "token_type_ids"]);
        assert_eq!(completed.inputs[0], TensorConfig { name: "input_ids".into(), data_type: DataType::Int64, dims: vec![-1] });
        assert_eq!(completed.outputs[1].dims, [-1, 384]);
    }

    #[test]
    fn declared_tensors_are_checked_against_the_model() {
        let head = "platform: \"onnxruntime_onnx\"\nmax_batch_size: 8\n";
        let ids = "input [ { name: \"input_ids\" data_type: TYPE_INT64 dims: [ -1 ] }, { name: \"attention_mask\" data_type: TYPE_INT64 dims: [ -1 ] }, { name: \"token_type_ids\" data_type: TYPE_INT64 dims: [ -1 ] } ]\n";
        let err = |text: &str| TensorModel::new(&config(text), bert()).unwrap_err().to_string();
        let int32 = ids.replacen("TYPE_INT64", "TYPE_INT32", 1);
        assert!(err(&format!("{head}{int32}")).contains("input 'input_ids': the config declares TYPE_INT32, the model takes TYPE_INT64"));
        assert!(err(&format!("{head}{}", ids.replacen("dims: [ -1 ]", "dims: [ -1, 4 ]", 1))).contains("dims [-1, 4] do not match"));
        let two = "input [ { name: \"input_ids\" data_type: TYPE_INT64 dims: [ -1 ] } ]\n";
        assert!(err(&format!("{head}{two}")).contains("input 'attention_mask' is not declared"));
        let out = "output [ { name: \"pooled\" data_type: TYPE_FP32 dims: [ 384 ] } ]";
        assert!(err(&format!("{head}{ids}{out}")).contains("output 'pooled' is not one of the model's outputs (logits, last_hidden_state)"));
        let ok = format!("{head}{ids}output [ {{ name: \"logits\" data_type: TYPE_FP32 dims: [ -1 ] }} ]");
        let (model, completed) = TensorModel::new(&config(&ok), bert()).unwrap();
        assert_eq!(model.output_names().collect::<Vec<_>>(), ["logits"]);
        assert_eq!(completed.outputs[0].dims, [2], "the model's fixed dimension is kept");
    }

    #[test]
    fn requests_are_checked_naming_the_input() {
        let (model, _) = TensorModel::new(&config("platform: \"onnxruntime_onnx\"\nmax_batch_size: 4\n"), bert()).unwrap();
        let ids = |n: usize, s: usize| (0..n * s).flat_map(|i| (i as i64).to_le_bytes()).collect::<Vec<u8>>();
        let good = |n: usize, s: usize| {
            ["input_ids", "attention_mask", "token_type_ids"].map(|name| input(name, DataType::Int64, &[n, s], ids(n, s))).to_vec()
        };
        let r = model.request_tensors(good(2, 5)).unwrap();
        assert_eq!((r.rows, r.tensors[0].shape()), (2, &[2usize, 5][..]));
        let msg = |inputs: Vec<InputTensor>| model.request_tensors(inputs).unwrap_err().to_string();
        let mut typed = good(1, 3);
        typed[1] = input("attention_mask", DataType::Int32, &[1, 3], vec![0; 12]);
        assert_eq!(msg(typed), "input 'attention_mask' has datatype INT32, the model expects INT64");
        let mut ranked = good(1, 3);
        ranked[2] = input("token_type_ids", DataType::Int64, &[3], ids(1, 3));
        assert!(msg(ranked).starts_with("input 'token_type_ids' has shape [3], the model expects [-1, -1]"));
        assert!(msg(good(5, 2)).contains("input 'input_ids' has 5 rows"));
        let mut rows = good(2, 3);
        rows[1] = input("attention_mask", DataType::Int64, &[1, 3], ids(1, 3));
        assert!(msg(rows).contains("input 'attention_mask' has 1 rows but input 'input_ids' has 2"));
        assert_eq!(msg(good(1, 3)[..2].to_vec()), "the request has no input 'token_type_ids'");
        let mut extra = good(1, 3);
        extra.push(input("pixel", DataType::Fp32, &[1], vec![0; 4]));
        assert!(msg(extra).starts_with("unknown input 'pixel'"));
    }
}
