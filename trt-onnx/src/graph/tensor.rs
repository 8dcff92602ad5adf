//! Initializer data to and from `ndarray`, and the element types the graph
//! tools handle.

use bytes::Bytes;
use half::f16;
use ndarray::{ArrayD, IxDyn};

use super::proto::tensor_proto::DataType;
use super::proto::TensorProto;
use crate::{Error, Result};

/// `TensorProto.data_type` codes the graph tools name.
pub const FLOAT: i32 = DataType::Float as i32;
/// FP16.
pub const FLOAT16: i32 = DataType::Float16 as i32;
/// FP64.
pub const DOUBLE: i32 = DataType::Double as i32;
/// BF16.
pub const BFLOAT16: i32 = DataType::Bfloat16 as i32;
/// INT8.
pub const INT8: i32 = DataType::Int8 as i32;
/// UINT8.
pub const UINT8: i32 = DataType::Uint8 as i32;
/// INT32.
pub const INT32: i32 = DataType::Int32 as i32;
/// INT64.
pub const INT64: i32 = DataType::Int64 as i32;
/// BOOL.
pub const BOOL: i32 = DataType::Bool as i32;

/// The name ONNX gives an element type code ("FLOAT16"), for messages.
pub fn type_name(code: i32) -> &'static str {
    DataType::try_from(code).map(|d| d.as_str_name()).unwrap_or("UNKNOWN")
}

/// Whether a code is a floating-point type.
pub fn is_float(code: i32) -> bool {
    matches!(code, FLOAT | FLOAT16 | DOUBLE | BFLOAT16)
}

/// The dims and their element count: a negative dimension, or a count past
/// `usize` (dims from a file are untrusted), is an error, not an overflow.
fn shape(t: &TensorProto) -> Result<(Vec<usize>, usize)> {
    let dims = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| tensor_error(t, format!("negative dimension {d}"))))
        .collect::<Result<Vec<usize>>>()?;
    // A zero dimension makes the tensor empty, whatever comes before it.
    let count = if dims.contains(&0) { Some(0) } else { dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) }
        .ok_or_else(|| tensor_error(t, format!("dims {dims:?} hold more elements than memory can")))?;
    Ok((dims, count))
}

fn tensor_error(t: &TensorProto, problem: impl Into<String>) -> Error {
    Error::Tensor { tensor: t.name.clone().unwrap_or_default(), problem: problem.into() }
}

fn raw_values<const N: usize, T>(t: &TensorProto, raw: &[u8], count: usize, f: impl Fn([u8; N]) -> T) -> Result<Vec<T>> {
    if count.checked_mul(N) != Some(raw.len()) {
        return Err(tensor_error(t, format!("raw_data has {} bytes, {count} elements need {}", raw.len(), count as u128 * N as u128)));
    }
    Ok(raw.chunks_exact(N).map(|c| f(c.try_into().unwrap_or([0; N]))).collect())
}

/// The values of a FLOAT, FLOAT16, DOUBLE or BFLOAT16 tensor, as f32.
pub fn to_f32(t: &TensorProto) -> Result<ArrayD<f32>> {
    let (dims, count) = shape(t)?;
    let code = t.data_type.unwrap_or(0);
    let raw = t.raw_data.as_deref().filter(|r| !r.is_empty());
    let values: Vec<f32> = match (code, raw) {
        (FLOAT, Some(r)) => raw_values(t, r, count, f32::from_le_bytes)?,
        (FLOAT, None) => t.float_data.clone(),
        (FLOAT16, Some(r)) => raw_values(t, r, count, |b| f16::from_le_bytes(b).to_f32())?,
        // FLOAT16 and BFLOAT16 without raw_data hold their bits in int32_data.
        (FLOAT16, None) => t.int32_data.iter().map(|&b| f16::from_bits(b as u16).to_f32()).collect(),
        (BFLOAT16, Some(r)) => raw_values(t, r, count, |b| half::bf16::from_le_bytes(b).to_f32())?,
        (BFLOAT16, None) => t.int32_data.iter().map(|&b| half::bf16::from_bits(b as u16).to_f32()).collect(),
        (DOUBLE, Some(r)) => raw_values(t, r, count, |b| f64::from_le_bytes(b) as f32)?,
        (DOUBLE, None) => t.double_data.iter().map(|&v| v as f32).collect(),
        _ => return Err(tensor_error(t, format!("expected a float tensor, found {}", type_name(code)))),
    };
    shaped(t, &dims, count, values)
}

/// The values of an integer tensor (INT64, INT32, INT8, UINT8), as i64.
pub fn to_i64(t: &TensorProto) -> Result<ArrayD<i64>> {
    let (dims, count) = shape(t)?;
    let code = t.data_type.unwrap_or(0);
    let raw = t.raw_data.as_deref().filter(|r| !r.is_empty());
    let values: Vec<i64> = match (code, raw) {
        (INT64, Some(r)) => raw_values(t, r, count, i64::from_le_bytes)?,
        (INT64, None) => t.int64_data.clone(),
        (INT32, Some(r)) => raw_values(t, r, count, |b| i32::from_le_bytes(b) as i64)?,
        (INT8, Some(r)) => raw_values(t, r, count, |b: [u8; 1]| b[0] as i8 as i64)?,
        (UINT8, Some(r)) => raw_values(t, r, count, |b: [u8; 1]| b[0] as i64)?,
        (INT32 | INT8 | UINT8, None) => t.int32_data.iter().map(|&v| v as i64).collect(),
        _ => return Err(tensor_error(t, format!("expected an integer tensor, found {}", type_name(code)))),
    };
    shaped(t, &dims, count, values)
}

/// `values` as an array of `dims` (`count` elements), or an error naming the tensor.
fn shaped<T>(t: &TensorProto, dims: &[usize], count: usize, values: Vec<T>) -> Result<ArrayD<T>> {
    if values.len() != count {
        return Err(tensor_error(t, format!("{} values for shape {dims:?}", values.len())));
    }
    ArrayD::from_shape_vec(IxDyn(dims), values).map_err(|e| tensor_error(t, e.to_string()))
}

fn make(name: &str, code: i32, dims: &[usize], raw: Vec<u8>) -> TensorProto {
    TensorProto {
        name: Some(name.to_string()),
        data_type: Some(code),
        dims: dims.iter().map(|&d| d as i64).collect(),
        raw_data: Some(Bytes::from(raw)),
        ..Default::default()
    }
}

/// A FLOAT tensor.
pub fn from_f32(name: &str, a: &ArrayD<f32>) -> TensorProto {
    make(name, FLOAT, a.shape(), a.iter().flat_map(|v| v.to_le_bytes()).collect())
}

/// A FLOAT16 tensor from f32 values (rounded to nearest).
pub fn from_f32_as_f16(name: &str, a: &ArrayD<f32>) -> TensorProto {
    make(name, FLOAT16, a.shape(), a.iter().flat_map(|v| f16::from_f32(*v).to_le_bytes()).collect())
}

/// An INT8 tensor.
pub fn from_i8(name: &str, a: &ArrayD<i8>) -> TensorProto {
    make(name, INT8, a.shape(), a.iter().map(|v| *v as u8).collect())
}

/// An INT64 tensor.
pub fn from_i64(name: &str, a: &ArrayD<i64>) -> TensorProto {
    make(name, INT64, a.shape(), a.iter().flat_map(|v| v.to_le_bytes()).collect())
}

/// A scalar FLOAT tensor.
pub fn scalar_f32(name: &str, v: f32) -> TensorProto {
    make(name, FLOAT, &[], v.to_le_bytes().to_vec())
}

/// The number of elements; `None` for a negative dimension or a count past `i64`.
pub fn numel(t: &TensorProto) -> Option<i64> {
    if t.dims.iter().any(|&d| d < 0) {
        return None;
    }
    if t.dims.contains(&0) {
        return Some(0);
    }
    t.dims.iter().try_fold(1i64, |n, &d| n.checked_mul(d))
}
