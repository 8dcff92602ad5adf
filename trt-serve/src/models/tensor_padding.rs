//! Ragged requests in one batch of a tensor model: the inputs its config
//! declares paddable, how a batch's requests are padded to the longest, and
//! how each request's outputs are cut back to its own length.
//!
//! Triton's config has no field for this; it is read from `parameters`
//! (which Triton's grammar allows on any model):
//!
//! | key | `string_value` | meaning |
//! |---|---|---|
//! | `pad.<input>` | `<value>` or `<value> along <d>[,<d>...]` | requests may batch although this input's dynamic dimensions `d` (counted after the batch axis; without `along`, every dynamic one) differ; the batch pads each to its longest with `<value>` (read as the input's element type) |
//! | `unpad.<output>` | `<d>=<input>:<e>[, ...]` | dimension `d` of this output (after the batch axis) has the length of dimension `e` of a padded input: each request gets it cut back to its own length |
//!
//! For a BERT-style model taking token ids:
//! `pad.input_ids` = `0`, `pad.attention_mask` = `0`, `pad.token_type_ids` =
//! `0`, `unpad.last_hidden_state` = `0=input_ids:0`. Padding leaves the rows
//! of real tokens unchanged only where the model masks the padding (BERT's
//! attention mask does): declaring an input paddable is the config's promise
//! that it does. An output with a dimension that follows a padded one and no
//! `unpad` entry keeps the batch's padded length (its rows past the
//! request's own length are what the model computed for the padding). A
//! request that runs alone, or whose batch needed no padding, is not touched.

use trt_nlp::tensor::{Tensor, TensorData};
use trt_nlp::ElementType;

use crate::config::ModelConfig;
use crate::error::{ServeError, ServeResult};

/// A declared tensor as the padding rules see it: name, element type and
/// dimensions after the batch axis (-1 where dynamic).
pub type TensorView<'a> = (&'a str, ElementType, &'a [i64]);

#[derive(Debug, Clone, PartialEq)]
struct InputPad {
    fill: TensorData,
    /// Dimensions after the batch axis that may differ and are padded.
    dims: Vec<usize>,
}

/// Output dimension `dim` (after the batch axis) follows dimension `input_dim` of input `input`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Follows {
    dim: usize,
    input: usize,
    input_dim: usize,
}

/// The padding rules of one tensor model (none by default).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Padding {
    /// Per declared input, in config order.
    inputs: Vec<Option<InputPad>>,
    /// Per declared output, in config order.
    outputs: Vec<Vec<Follows>>,
}

/// One request's key for batching: each input's dimensions after the batch
/// axis, `None` where padding lets them differ.
pub type BatchKey = Vec<Vec<Option<usize>>>;

fn index_list(text: &str, what: &str) -> Result<Vec<usize>, String> {
    text.split(',').map(|d| d.trim().parse::<usize>().map_err(|_| format!("{what} '{}' is not a dimension index", d.trim()))).collect()
}

impl Padding {
    /// The rules `config`'s `pad.*` / `unpad.*` parameters give for these
    /// declared `inputs` and `outputs`; each mistake is a load error naming the parameter.
    pub fn from_config(config: &ModelConfig, inputs: &[TensorView], outputs: &[TensorView]) -> ServeResult<Padding> {
        let mut p = Padding { inputs: vec![None; inputs.len()], outputs: vec![Vec::new(); outputs.len()] };
        let invalid = |key: &str, m: String| ServeError::invalid(format!("model '{}': parameter '{key}': {m}", config.name));
        for (key, value) in &config.parameters {
            if let Some(name) = key.strip_prefix("pad.") {
                let Some(i) = inputs.iter().position(|t| t.0 == name) else {
                    return Err(invalid(key, format!("'{name}' is not a declared input")));
                };
                if config.max_batch_size == 0 {
                    return Err(invalid(key, "padding joins requests along the batch axis, and max_batch_size is 0".into()));
                }
                let (_, element, dims) = inputs[i];
                let (fill, along) = match value.split_once(" along ") {
                    Some((v, d)) => (v, Some(index_list(d, "along").map_err(|m| invalid(key, m))?)),
                    None => (value.as_str(), None),
                };
                let fill = TensorData::parse_one(element, fill)
                    .ok_or_else(|| invalid(key, format!("'{}' does not read as one {element:?} value", fill.trim())))?;
                let dynamic: Vec<usize> = (0..dims.len()).filter(|&d| dims[d] < 0).collect();
                let dims = along.unwrap_or_else(|| dynamic.clone());
                if let Some(d) = dims.iter().find(|d| !dynamic.contains(d)) {
                    return Err(invalid(key, format!("dimension {d} of '{name}' (dims {dims:?} after the batch axis) is not dynamic")));
                }
                if dims.is_empty() {
                    return Err(invalid(key, format!("'{name}' has no dynamic dimension to pad")));
                }
                p.inputs[i] = Some(InputPad { fill, dims });
            }
        }
        for (key, value) in &config.parameters {
            let Some(name) = key.strip_prefix("unpad.") else { continue };
            let Some(o) = outputs.iter().position(|t| t.0 == name) else {
                return Err(invalid(key, format!("'{name}' is not a declared output")));
            };
            for entry in value.split(',') {
                let parsed = entry.split_once('=').and_then(|(d, rest)| {
                    let (input, e) = rest.trim().rsplit_once(':')?;
                    Some((d.trim().parse::<usize>().ok()?, input, e.trim().parse::<usize>().ok()?))
                });
                let Some((dim, input, input_dim)) = parsed else {
                    return Err(invalid(key, format!("'{}' is not <output dim>=<input>:<input dim>", entry.trim())));
                };
                if outputs[o].2.get(dim).is_none_or(|&d| d >= 0) {
                    return Err(invalid(
                        key,
                        format!("dimension {dim} of '{name}' (dims {:?} after the batch axis) is not dynamic", outputs[o].2),
                    ));
                }
                let covered = |i: &usize| p.inputs[*i].as_ref().is_some_and(|x| x.dims.contains(&input_dim));
                let Some(index) = inputs.iter().position(|t| t.0 == input).filter(covered) else {
                    let m = format!("dimension {input_dim} of '{input}' is not a padded input dimension (no pad.{input} covers it)");
                    return Err(invalid(key, m));
                };
                p.outputs[o].push(Follows { dim, input: index, input_dim });
            }
        }
        Ok(p)
    }

    /// The key a request batches by: requests with equal keys may share a batch.
    pub fn key(&self, inputs: &[Tensor]) -> BatchKey {
        inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let pad = self.inputs.get(i).and_then(Option::as_ref);
                let inner = t.shape().get(1..).unwrap_or_default();
                inner.iter().enumerate().map(|(d, &n)| if pad.is_some_and(|p| p.dims.contains(&d)) { None } else { Some(n) }).collect()
            })
            .collect()
    }

    /// Input `i`'s parts stacked along the batch axis, each padded first to
    /// the longest of the parts where the input is paddable; and whether
    /// any part was padded.
    pub fn stack(&self, i: usize, name: &str, parts: &[&Tensor]) -> trt_nlp::Result<(Tensor, bool)> {
        let Some(pad) = self.inputs.get(i).and_then(Option::as_ref) else { return Ok((Tensor::concat(name, parts)?, false)) };
        let Some(first) = parts.first() else { return Ok((Tensor::concat(name, parts)?, false)) };
        let mut longest = first.shape().to_vec();
        for p in parts {
            for &d in &pad.dims {
                if let (Some(l), Some(&n)) = (longest.get_mut(d + 1), p.shape().get(d + 1)) {
                    *l = (*l).max(n);
                }
            }
        }
        let mut padded = false;
        let grown: Vec<Tensor> = parts
            .iter()
            .map(|p| {
                let mut to = longest.clone();
                to[0] = p.shape().first().copied().unwrap_or(0);
                padded |= p.shape() != to.as_slice();
                p.padded(name, &to, &pad.fill)
            })
            .collect::<trt_nlp::Result<_>>()?;
        Ok((Tensor::concat(name, &grown.iter().collect::<Vec<_>>())?, padded))
    }

    /// Output `o` of one request (its rows of a padded batch) cut back along
    /// the dimensions that follow a padded input, to that input's length in
    /// `own` (the request's inputs, config order).
    pub fn cut(&self, o: usize, name: &str, output: Tensor, own: &[Tensor]) -> trt_nlp::Result<Tensor> {
        let mut t = output;
        for f in self.outputs.get(o).map(Vec::as_slice).unwrap_or_default() {
            let Some(&len) = own.get(f.input).and_then(|x| x.shape().get(f.input_dim + 1)) else { continue };
            t = t.narrowed(name, f.dim + 1, len)?;
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(params: &[(&str, &str)], max_batch: usize) -> ModelConfig {
        let entries: String =
            params.iter().map(|(k, v)| format!("parameters {{ key: \"{k}\" value {{ string_value: \"{v}\" }} }}\n")).collect();
        ModelConfig::parse(&format!("platform: \"onnxruntime_onnx\"\nmax_batch_size: {max_batch}\n{entries}"), "m").unwrap()
    }

    const IDS: [i64; 1] = [-1];
    const HIDDEN: [i64; 2] = [-1, 384];
    const LOGITS: [i64; 1] = [2];

    fn rules(params: &[(&str, &str)]) -> ServeResult<Padding> {
        let inputs: Vec<TensorView> = vec![("input_ids", ElementType::I64, &IDS), ("attention_mask", ElementType::I64, &IDS)];
        let outputs: Vec<TensorView> = vec![("logits", ElementType::F32, &LOGITS), ("last_hidden_state", ElementType::F32, &HIDDEN)];
        Padding::from_config(&config(params, 8), &inputs, &outputs)
    }

    fn ids(rows: usize, len: usize, start: i64) -> Tensor {
        Tensor::new("input_ids", vec![rows, len], TensorData::I64((0..(rows * len) as i64).map(|v| start + v).collect())).unwrap()
    }

    #[test]
    fn ragged_inputs_share_a_key_pad_to_the_longest_and_outputs_are_cut_back() {
        let p =
            rules(&[("pad.input_ids", "0"), ("pad.attention_mask", "0 along 0"), ("unpad.last_hidden_state", "0=input_ids:0")]).unwrap();
        let (a, b) = (ids(1, 2, 1), ids(2, 3, 10));
        assert_eq!(p.key(&[a.clone(), a.clone()]), p.key(&[b.clone(), b.clone()]), "lengths differ, keys agree");
        assert_eq!(p.key(std::slice::from_ref(&a)), vec![vec![None]]);
        let (stacked, padded) = p.stack(0, "input_ids", &[&a, &b]).unwrap();
        assert!(padded);
        assert_eq!(stacked.shape(), [3, 3]);
        assert_eq!(stacked.data(), &TensorData::I64(vec![1, 2, 0, 10, 11, 12, 13, 14, 15]));
        assert!(!p.stack(0, "input_ids", &[&b, &b]).unwrap().1, "equal lengths: no padding");
        // Request a's rows of a [3, 3, 384] output come back [1, 2, 384]; logits are left alone.
        let hidden = Tensor::new("last_hidden_state", vec![1, 3, 384], TensorData::F32((0..3 * 384).map(|v| v as f32).collect())).unwrap();
        let cut = p.cut(1, "last_hidden_state", hidden.clone(), &[a.clone(), a.clone()]).unwrap();
        assert_eq!(cut, hidden.narrowed("h", 1, 2).unwrap());
        let logits = Tensor::new("logits", vec![1, 2], TensorData::F32(vec![0.5, 1.5])).unwrap();
        assert_eq!(p.cut(0, "logits", logits.clone(), &[a.clone(), a]).unwrap(), logits);
        // Without rules requests batch only when their shapes agree.
        let none = rules(&[]).unwrap();
        assert_eq!(none.key(&[ids(1, 2, 0)]), vec![vec![Some(2)]]);
    }

    #[test]
    fn each_mistake_is_a_load_error_naming_the_parameter() {
        let e = |params: &[(&str, &str)]| rules(params).unwrap_err().to_string();
        assert!(e(&[("pad.pixels", "0")]).contains("parameter 'pad.pixels': 'pixels' is not a declared input"));
        assert!(e(&[("pad.input_ids", "zero")]).contains("'zero' does not read as one I64 value"));
        assert!(e(&[("pad.input_ids", "0 along 1")]).contains("dimension 1 of 'input_ids'"));
        assert!(e(&[("pad.input_ids", "0 along x")]).contains("along 'x' is not a dimension index"));
        assert!(e(&[("unpad.pooled", "0=input_ids:0")]).contains("'pooled' is not a declared output"));
        assert!(e(&[("pad.input_ids", "0"), ("unpad.last_hidden_state", "1=input_ids:0")]).contains("dimension 1 of 'last_hidden_state'"));
        assert!(e(&[("unpad.last_hidden_state", "0=input_ids:0")]).contains("no pad.input_ids covers it"));
        assert!(
            e(&[("pad.input_ids", "0"), ("unpad.last_hidden_state", "0 input_ids")]).contains("is not <output dim>=<input>:<input dim>")
        );
        let inputs: Vec<TensorView> = vec![("input_ids", ElementType::I64, &IDS)];
        let whole = Padding::from_config(&config(&[("pad.input_ids", "0")], 0), &inputs, &[]).unwrap_err().to_string();
        assert!(whole.contains("max_batch_size is 0"), "{whole}");
        let fixed: [i64; 1] = [64];
        let inputs: Vec<TensorView> = vec![("x", ElementType::F32, &fixed)];
        let e = Padding::from_config(&config(&[("pad.x", "0.0")], 8), &inputs, &[]).unwrap_err().to_string();
        assert!(e.contains("'x' has no dynamic dimension to pad"), "{e}");
    }
}
