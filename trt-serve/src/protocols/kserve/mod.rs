//! KServe v2 inference requests and responses, independent of the transport:
//! [`json`] reads and writes them over HTTP (JSON tensors and Triton's binary
//! tensor extension), [`crate::protocols::grpc`] converts the protobuf messages, and
//! [`classification`] is Triton's classification extension.
//!
//! Fixed-size tensors travel as little-endian bytes ([`Elements::Fixed`]), as
//! they do in both binary encodings, so a backend reads them in place; BYTES
//! tensors are one byte string per element.

pub mod classification;
pub mod json;
mod outputs;

pub(crate) use outputs::wanted_outputs;

use crate::error::{ServeError, ServeResult};
use crate::transport::limits::Limits;

/// A tensor datatype: KServe v2's wire names (`FP32`, `BYTES`), which
/// Triton's model configuration spells `TYPE_FP32`, `TYPE_STRING`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum DataType {
    Bool,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Int8,
    Int16,
    Int32,
    Int64,
    Fp16,
    Fp32,
    Fp64,
    Bf16,
    Bytes,
}

/// `(wire name, config name, inference.DataType number, element size)`; size 0: variable.
const TYPES: [(&str, &str, DataType, i32, usize); 14] = [
    ("BOOL", "TYPE_BOOL", DataType::Bool, 1, 1),
    ("UINT8", "TYPE_UINT8", DataType::Uint8, 2, 1),
    ("UINT16", "TYPE_UINT16", DataType::Uint16, 3, 2),
    ("UINT32", "TYPE_UINT32", DataType::Uint32, 4, 4),
    ("UINT64", "TYPE_UINT64", DataType::Uint64, 5, 8),
    ("INT8", "TYPE_INT8", DataType::Int8, 6, 1),
    ("INT16", "TYPE_INT16", DataType::Int16, 7, 2),
    ("INT32", "TYPE_INT32", DataType::Int32, 8, 4),
    ("INT64", "TYPE_INT64", DataType::Int64, 9, 8),
    ("FP16", "TYPE_FP16", DataType::Fp16, 10, 2),
    ("FP32", "TYPE_FP32", DataType::Fp32, 11, 4),
    ("FP64", "TYPE_FP64", DataType::Fp64, 12, 8),
    ("BF16", "TYPE_BF16", DataType::Bf16, 14, 2),
    ("BYTES", "TYPE_STRING", DataType::Bytes, 13, 0),
];

impl DataType {
    fn row(self) -> &'static (&'static str, &'static str, DataType, i32, usize) {
        TYPES.iter().find(|r| r.2 == self).expect("every variant has a row")
    }

    /// Parses the wire name (`FP32`, `BYTES`).
    pub fn parse(name: &str) -> ServeResult<Self> {
        TYPES.iter().find(|r| r.0 == name).map(|r| r.2).ok_or_else(|| ServeError::invalid(format!("unknown datatype '{name}'")))
    }

    /// Parses the config spelling (`TYPE_FP32`, `TYPE_STRING`).
    pub fn from_config_name(name: &str) -> Option<Self> {
        TYPES.iter().find(|r| r.1 == name).map(|r| r.2)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        self.row().0
    }

    /// The config spelling.
    pub fn config_name(self) -> &'static str {
        self.row().1
    }

    /// The `inference.DataType` enum number (model configuration messages).
    pub fn proto_number(self) -> i32 {
        self.row().3
    }

    /// Bytes per element (`None` for BYTES, whose elements vary).
    pub fn element_size(self) -> Option<usize> {
        Some(self.row().4).filter(|&s| s > 0)
    }
}

/// The elements of an input tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum Elements {
    /// Fixed-size elements, little-endian, back to back.
    Fixed(Vec<u8>),
    /// One byte string per BYTES element.
    Bytes(Vec<Vec<u8>>),
}

/// One input tensor of a request.
#[derive(Debug, Clone, PartialEq)]
pub struct InputTensor {
    /// Name.
    pub name: String,
    /// Datatype as sent.
    pub datatype: DataType,
    /// Shape as sent (checked non-negative, product matching the elements).
    pub shape: Vec<usize>,
    /// Elements.
    pub data: Elements,
}

/// An output the client asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestedOutput {
    /// Name.
    pub name: String,
    /// Return it with the binary tensor extension (HTTP only).
    pub binary: bool,
    /// Classification extension: the top `k` classes as `score:index:label` strings.
    pub classification: Option<usize>,
}

/// A decoded inference request.
#[derive(Debug, Clone, PartialEq)]
pub struct InferRequest {
    /// Client-chosen id, echoed in the response.
    pub id: String,
    /// Inputs.
    pub inputs: Vec<InputTensor>,
    /// Outputs asked for (empty: every output).
    pub outputs: Vec<RequestedOutput>,
    /// `binary_data_output` request parameter: every output in binary (HTTP).
    pub binary_data_output: bool,
    /// `priority` (schedule-policy extension; 0: the model's default level).
    pub priority: u64,
    /// `timeout` in microseconds (schedule-policy extension).
    pub timeout_us: Option<u64>,
}

/// The elements of an output tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputData {
    /// FP32 values.
    Fp32(Vec<f32>),
    /// BYTES elements.
    Bytes(Vec<Vec<u8>>),
    /// Fixed-size elements of `datatype`, little-endian, back to back (a
    /// tensor model's outputs, in the model's own element type).
    Fixed {
        /// Their datatype (not BYTES).
        datatype: DataType,
        /// The elements.
        raw: Vec<u8>,
    },
}

impl OutputData {
    /// The KServe datatype of these elements.
    pub fn datatype(&self) -> DataType {
        match self {
            OutputData::Fp32(_) => DataType::Fp32,
            OutputData::Bytes(_) => DataType::Bytes,
            OutputData::Fixed { datatype, .. } => *datatype,
        }
    }

    /// The binary tensor extension's (and `raw_output_contents`') encoding.
    pub fn to_raw(&self) -> Vec<u8> {
        match self {
            OutputData::Fp32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            OutputData::Bytes(v) => encode_bytes_elements(v),
            OutputData::Fixed { raw, .. } => raw.clone(),
        }
    }
}

/// One output tensor of a response.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputTensor {
    /// Name.
    pub name: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// Elements.
    pub data: OutputData,
    /// Send with the binary tensor extension (HTTP).
    pub binary: bool,
}

/// A response to an [`InferRequest`].
#[derive(Debug, Clone, PartialEq)]
pub struct InferResponse {
    /// Model name.
    pub model_name: String,
    /// Version that answered.
    pub model_version: String,
    /// The request's id.
    pub id: String,
    /// Outputs in the order asked for (or the model's).
    pub outputs: Vec<OutputTensor>,
}

/// The element count of `shape`, checked against the limit (and overflow).
pub fn element_count(name: &str, shape: &[usize], limits: &Limits) -> ServeResult<usize> {
    let n = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| ServeError::TooLarge(format!("input '{name}': shape {shape:?} overflows")))?;
    if n > limits.max_tensor_elements {
        return Err(ServeError::TooLarge(format!("input '{name}': {n} elements, more than the limit of {}", limits.max_tensor_elements)));
    }
    Ok(n)
}

/// Reads a wire shape (`i64` dims, as both protocols send them).
pub fn shape_from_wire(name: &str, dims: &[i64]) -> ServeResult<Vec<usize>> {
    dims.iter()
        .map(|&d| usize::try_from(d).map_err(|_| ServeError::invalid(format!("input '{name}': negative dimension {d} in shape {dims:?}"))))
        .collect()
}

/// Serializes BYTES elements as Triton does: each a 4-byte little-endian length, then the bytes.
pub fn encode_bytes_elements(elements: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(elements.iter().map(|e| 4 + e.len()).sum());
    for e in elements {
        out.extend_from_slice(&(e.len() as u32).to_le_bytes());
        out.extend_from_slice(e);
    }
    out
}

/// Reads `count` length-prefixed BYTES elements that exactly fill `raw`.
pub fn decode_bytes_elements(name: &str, raw: &[u8], count: usize) -> ServeResult<Vec<Vec<u8>>> {
    let bad = |what: String| ServeError::invalid(format!("input '{name}': malformed BYTES data: {what}"));
    let mut out = Vec::with_capacity(count.min(raw.len() / 4));
    let mut rest = raw;
    while !rest.is_empty() {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            return Err(bad(format!("{} trailing bytes cannot hold a 4-byte length", rest.len())));
        };
        let len = u32::from_le_bytes(*len) as usize;
        if len > tail.len() {
            return Err(bad(format!("element {} claims {len} bytes, {} remain", out.len(), tail.len())));
        }
        if out.len() == count {
            return Err(bad(format!("more than the {count} elements of the shape")));
        }
        out.push(tail[..len].to_vec());
        rest = &tail[len..];
    }
    if out.len() != count {
        return Err(bad(format!("{} elements, the shape needs {count}", out.len())));
    }
    Ok(out)
}

/// Wraps raw bytes of an input as [`Elements`], checking their size against the shape.
pub fn elements_from_raw(name: &str, datatype: DataType, count: usize, raw: Vec<u8>) -> ServeResult<Elements> {
    match datatype.element_size() {
        None => Ok(Elements::Bytes(decode_bytes_elements(name, &raw, count)?)),
        Some(size) if raw.len() == count * size => Ok(Elements::Fixed(raw)),
        Some(size) => Err(ServeError::invalid(format!(
            "input '{name}': {} bytes of {} data, the shape needs {} ({count} x {size})",
            raw.len(),
            datatype.as_str(),
            count * size
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_elements_round_trip_and_reject_bad_framing() {
        let elems = vec![b"hello".to_vec(), vec![], "h\u{e9}".as_bytes().to_vec()];
        let raw = encode_bytes_elements(&elems);
        assert_eq!(&raw[..4], &5u32.to_le_bytes());
        assert_eq!(decode_bytes_elements("t", &raw, 3).unwrap(), elems);
        assert!(decode_bytes_elements("t", &raw, 2).unwrap_err().to_string().contains("more than the 2"));
        assert!(decode_bytes_elements("t", &raw, 4).unwrap_err().to_string().contains("3 elements, the shape needs 4"));
        assert!(decode_bytes_elements("t", &raw[..raw.len() - 1], 3).unwrap_err().to_string().contains("claims"));
        assert!(decode_bytes_elements("t", &[1, 0], 1).unwrap_err().to_string().contains("4-byte length"));
        // A huge claimed length is refused without allocating it.
        assert!(decode_bytes_elements("t", &u32::MAX.to_le_bytes(), 1).is_err());
    }

    #[test]
    fn element_counts_are_bounded() {
        let limits = Limits { max_tensor_elements: 100, ..Limits::default() };
        assert_eq!(element_count("x", &[4, 25], &limits).unwrap(), 100);
        assert!(matches!(element_count("x", &[4, 26], &limits), Err(ServeError::TooLarge(_))));
        assert!(matches!(element_count("x", &[usize::MAX, 2], &limits), Err(ServeError::TooLarge(_))));
        assert!(shape_from_wire("x", &[2, -1]).unwrap_err().to_string().contains("negative"));
    }

    #[test]
    fn raw_fixed_size_is_checked() {
        assert!(elements_from_raw("x", DataType::Fp32, 2, vec![0; 8]).is_ok());
        let e = elements_from_raw("x", DataType::Fp32, 2, vec![0; 7]).unwrap_err();
        assert_eq!(e.to_string(), "input 'x': 7 bytes of FP32 data, the shape needs 8 (2 x 4)");
    }
}
