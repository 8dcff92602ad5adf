//! Token batches for calibration and evaluation, and running a model over
//! them on ONNX Runtime.
//!
//! A [`Batch`] holds its inputs as i64 and is handed to the session in the
//! type each input declares (int32 or int64), so one tokenized data set
//! serves models of either kind.

use ndarray::{ArrayD, Ix2};

use crate::graph::{edit, types, Model};
use crate::runtime::{ElementType, InputTensor, OutputTensor, Session, SessionOptions};
use crate::{Error, Result};

/// A run's outputs by name, as f32.
pub type Outputs = Vec<(String, ArrayD<f32>)>;

/// One batch of model inputs.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Input name and values `[batch, sequence]` (or any shape the model takes).
    pub inputs: Vec<(String, ArrayD<i64>)>,
    /// The attention mask `[batch, sequence]`, for pooled-embedding figures.
    pub mask: Option<ArrayD<i64>>,
}

impl Batch {
    /// Rows in the batch (the first axis of the first input).
    pub fn rows(&self) -> usize {
        self.inputs.first().map(|(_, a)| a.shape().first().copied().unwrap_or(1)).unwrap_or(0)
    }

    /// The mask as `[batch, sequence]`.
    pub fn mask2(&self) -> Option<ndarray::ArrayView2<'_, i64>> {
        self.mask.as_ref().and_then(|m| m.view().into_dimensionality::<Ix2>().ok())
    }
}

/// Runs `session` on `batch` and returns the named outputs (all when `None`) as f32.
pub fn run(session: &mut Session, batch: &Batch, outputs: Option<&[&str]>) -> Result<Vec<(String, ArrayD<f32>)>> {
    let infos = session.inputs().to_vec();
    let mut i32s: Vec<(String, ArrayD<i32>)> = Vec::new();
    let mut i64s: Vec<(String, &ArrayD<i64>)> = Vec::new();
    for (name, values) in &batch.inputs {
        let info = infos.iter().find(|i| &i.name == name).ok_or_else(|| Error::Tensor {
            tensor: name.clone(),
            problem: format!(
                "the model has no such input (it has: {})",
                infos.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        })?;
        match info.element {
            ElementType::I32 => i32s.push((name.clone(), values.mapv(|v| v as i32))),
            ElementType::I64 => i64s.push((name.clone(), values)),
            other => {
                return Err(Error::Tensor {
                    tensor: name.clone(),
                    problem: format!("the model wants {other}; token inputs must be int32 or int64"),
                })
            }
        }
    }
    let mut feeds: Vec<(&str, InputTensor<'_>)> = Vec::new();
    for (n, a) in &i32s {
        feeds.push((n.as_str(), InputTensor::I32(a.view())));
    }
    for (n, a) in &i64s {
        feeds.push((n.as_str(), InputTensor::I64(a.view())));
    }
    let out = session.run(&feeds, outputs)?;
    out.into_iter()
        .map(|(name, t)| match t {
            OutputTensor::F32(a) => Ok((name, a)),
            other => other
                .to_f32()
                .map(|a| (name.clone(), a))
                .ok_or_else(|| Error::Tensor { tensor: name, problem: "output is not numeric".into() }),
        })
        .collect()
}

/// Runs `model` on `batch` with the intermediate tensors `names` added as
/// graph outputs (one session made for the purpose), and returns their
/// values as f32, in the order of `names`.
pub fn run_exposing(model: &Model, names: &[String], batch: &Batch, options: &SessionOptions) -> Result<Outputs> {
    let mut m = model.clone();
    let t = types::infer(m.graph());
    edit::expose(m.graph_mut()?, names, &t)?;
    let mut session = Session::from_bytes(&m.to_bytes()?, options)?;
    let wanted: Vec<&str> = names.iter().map(String::as_str).collect();
    run(&mut session, batch, Some(&wanted))
}
