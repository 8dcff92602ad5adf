//! The HTTP body of an inference request and response: a JSON header,
//! optionally followed by binary tensor data (Triton's binary tensor
//! extension: the `Inference-Header-Content-Length` header gives the JSON's
//! size, each binary tensor's `binary_data_size` parameter its share of the
//! rest, in tensor order).

use serde_json::{json, Map, Value};

use super::{
    element_count, elements_from_raw, shape_from_wire, DataType, Elements, InferRequest, InferResponse, InputTensor, OutputData,
    RequestedOutput,
};
use crate::error::{ServeError, ServeResult};
use crate::transport::limits::Limits;

/// The header carrying the JSON part's length.
pub const HEADER_LENGTH: &str = "inference-header-content-length";

fn obj<'a>(v: &'a Value, what: &str) -> ServeResult<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| ServeError::invalid(format!("{what} must be a JSON object")))
}

/// Entry `i` of the `list` array: an object with a `name` string.
fn named<'a>(v: &'a Value, list: &str, i: usize) -> ServeResult<(&'a Map<String, Value>, String)> {
    let t = obj(v, &format!("{list}[{i}]"))?;
    let name = t.get("name").and_then(Value::as_str).ok_or_else(|| ServeError::invalid(format!("{list}[{i}] has no 'name' string")))?;
    Ok((t, name.to_string()))
}

fn uint_param(params: &Map<String, Value>, key: &str) -> ServeResult<Option<u64>> {
    match params.get(key) {
        None => Ok(None),
        Some(v) => {
            v.as_u64().map(Some).ok_or_else(|| ServeError::invalid(format!("parameter '{key}' must be a non-negative integer, found {v}")))
        }
    }
}

fn bool_param(params: &Map<String, Value>, key: &str) -> ServeResult<bool> {
    match params.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(ServeError::invalid(format!("parameter '{key}' must be true or false, found {v}"))),
    }
}

/// Flattens nested JSON arrays (row-major) into `out`, bounded by `max`.
fn flatten<'a>(v: &'a Value, out: &mut Vec<&'a Value>, max: usize, name: &str) -> ServeResult<()> {
    match v {
        Value::Array(items) => {
            for item in items {
                flatten(item, out, max, name)?;
            }
        }
        scalar => {
            if out.len() == max {
                return Err(ServeError::invalid(format!("input '{name}': more data elements than its shape holds")));
            }
            out.push(scalar);
        }
    }
    Ok(())
}

fn json_elements(name: &str, datatype: DataType, count: usize, data: &Value) -> ServeResult<Elements> {
    let mut flat = Vec::with_capacity(count.min(1 << 16));
    flatten(data, &mut flat, count, name)?;
    if flat.len() != count {
        return Err(ServeError::invalid(format!("input '{name}': {} data elements, the shape needs {count}", flat.len())));
    }
    let bad =
        |i: usize, v: &Value| ServeError::invalid(format!("input '{name}': element {i} ({v}) is not a valid {} value", datatype.as_str()));
    if datatype == DataType::Bytes {
        let elems = flat
            .iter()
            .enumerate()
            .map(|(i, v)| v.as_str().map(|s| s.as_bytes().to_vec()).ok_or_else(|| bad(i, v)))
            .collect::<ServeResult<_>>()?;
        return Ok(Elements::Bytes(elems));
    }
    let size = datatype.element_size().expect("fixed-size datatype");
    let mut raw = Vec::with_capacity(count * size);
    for (i, v) in flat.iter().enumerate() {
        let ok = match datatype {
            DataType::Bool => v.as_bool().map(|b| raw.push(b as u8)),
            DataType::Int8 => v.as_i64().and_then(|x| i8::try_from(x).ok()).map(|x| raw.extend(x.to_le_bytes())),
            DataType::Int16 => v.as_i64().and_then(|x| i16::try_from(x).ok()).map(|x| raw.extend(x.to_le_bytes())),
            DataType::Int32 => v.as_i64().and_then(|x| i32::try_from(x).ok()).map(|x| raw.extend(x.to_le_bytes())),
            DataType::Int64 => v.as_i64().map(|x| raw.extend(x.to_le_bytes())),
            DataType::Uint8 => v.as_u64().and_then(|x| u8::try_from(x).ok()).map(|x| raw.push(x)),
            DataType::Uint16 => v.as_u64().and_then(|x| u16::try_from(x).ok()).map(|x| raw.extend(x.to_le_bytes())),
            DataType::Uint32 => v.as_u64().and_then(|x| u32::try_from(x).ok()).map(|x| raw.extend(x.to_le_bytes())),
            DataType::Uint64 => v.as_u64().map(|x| raw.extend(x.to_le_bytes())),
            DataType::Fp32 => v.as_f64().map(|x| raw.extend((x as f32).to_le_bytes())),
            DataType::Fp64 => v.as_f64().map(|x| raw.extend(x.to_le_bytes())),
            DataType::Fp16 => v.as_f64().map(|x| raw.extend(half::f16::from_f64(x).to_le_bytes())),
            DataType::Bf16 => v.as_f64().map(|x| raw.extend(half::bf16::from_f64(x).to_le_bytes())),
            DataType::Bytes => unreachable!("handled above"),
        };
        ok.ok_or_else(|| bad(i, v))?;
    }
    Ok(Elements::Fixed(raw))
}

/// Decodes an HTTP inference request body; `header_length` is the
/// `Inference-Header-Content-Length` header's value, when sent.
pub fn decode_request(body: &[u8], header_length: Option<usize>, limits: &Limits) -> ServeResult<InferRequest> {
    let (head, mut binary) = match header_length {
        Some(n) if n > body.len() => {
            return Err(ServeError::invalid(format!("Inference-Header-Content-Length is {n}, but the body has only {} bytes", body.len())))
        }
        Some(n) => body.split_at(n),
        None => (body, &[][..]),
    };
    let root: Value = serde_json::from_slice(head).map_err(|e| ServeError::invalid(format!("malformed JSON in the request: {e}")))?;
    let root = obj(&root, "the request")?;
    let id = match root.get("id") {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => return Err(ServeError::invalid(format!("'id' must be a string, found {v}"))),
    };
    let empty = Map::new();
    let params = match root.get("parameters") {
        Some(p) => obj(p, "'parameters'")?,
        None => &empty,
    };
    let mut inputs = Vec::new();
    let Some(Value::Array(list)) = root.get("inputs") else {
        return Err(ServeError::invalid("the request has no 'inputs' array"));
    };
    for (i, t) in list.iter().enumerate() {
        let (t, name) = named(t, "inputs", i)?;
        let datatype = DataType::parse(
            t.get("datatype")
                .and_then(Value::as_str)
                .ok_or_else(|| ServeError::invalid(format!("input '{name}' has no 'datatype' string")))?,
        )?;
        let dims: Vec<i64> = match t.get("shape") {
            Some(Value::Array(d)) => d
                .iter()
                .map(|x| x.as_i64().ok_or_else(|| ServeError::invalid(format!("input '{name}': shape element {x} is not an integer"))))
                .collect::<ServeResult<_>>()?,
            _ => return Err(ServeError::invalid(format!("input '{name}' has no 'shape' array"))),
        };
        let shape = shape_from_wire(&name, &dims)?;
        let count = element_count(&name, &shape, limits)?;
        let tparams = match t.get("parameters") {
            Some(p) => obj(p, &format!("parameters of input '{name}'"))?,
            None => &empty,
        };
        let data = match uint_param(tparams, "binary_data_size")? {
            Some(size) => {
                let size = usize::try_from(size).unwrap_or(usize::MAX);
                if size > binary.len() {
                    return Err(ServeError::invalid(format!(
                        "input '{name}': binary_data_size {size} is more than the {} binary bytes left",
                        binary.len()
                    )));
                }
                let (mine, rest) = binary.split_at(size);
                binary = rest;
                elements_from_raw(&name, datatype, count, mine.to_vec())?
            }
            None => {
                let data =
                    t.get("data").ok_or_else(|| ServeError::invalid(format!("input '{name}' has neither 'data' nor binary_data_size")))?;
                json_elements(&name, datatype, count, data)?
            }
        };
        inputs.push(InputTensor { name, datatype, shape, data });
    }
    if !binary.is_empty() {
        return Err(ServeError::invalid(format!("{} bytes of binary data follow the inputs and belong to none", binary.len())));
    }
    let mut outputs = Vec::new();
    if let Some(v) = root.get("outputs") {
        let Value::Array(list) = v else { return Err(ServeError::invalid("'outputs' must be an array")) };
        for (i, o) in list.iter().enumerate() {
            let (o, name) = named(o, "outputs", i)?;
            let op = match o.get("parameters") {
                Some(p) => obj(p, &format!("parameters of output '{name}'"))?,
                None => &empty,
            };
            let classification = uint_param(op, "classification")?.map(|k| k as usize).filter(|&k| k > 0);
            outputs.push(RequestedOutput { name, binary: bool_param(op, "binary_data")?, classification });
        }
    }
    Ok(InferRequest {
        id,
        inputs,
        outputs,
        binary_data_output: bool_param(params, "binary_data_output")?,
        priority: uint_param(params, "priority")?.unwrap_or(0),
        timeout_us: uint_param(params, "timeout")?,
    })
}

/// Little-endian elements of `datatype` as a flat JSON array, as Triton
/// writes them (half floats widened to f32, which holds them exactly; bools
/// as true / false; a NaN or infinity, which JSON cannot hold, as null).
fn fixed_json(datatype: DataType, raw: &[u8]) -> Value {
    let size = datatype.element_size().unwrap_or(1).max(1);
    let chunks = raw.chunks_exact(size);
    let f = |x: f64| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number);
    let f32s = |x: f32| if x.is_finite() { json!(x) } else { Value::Null };
    Value::Array(match datatype {
        DataType::Bool => chunks.map(|c| json!(c[0] != 0)).collect(),
        DataType::Uint8 => chunks.map(|c| json!(c[0])).collect(),
        DataType::Int8 => chunks.map(|c| json!(c[0] as i8)).collect(),
        DataType::Uint16 => chunks.map(|c| json!(u16::from_le_bytes([c[0], c[1]]))).collect(),
        DataType::Int16 => chunks.map(|c| json!(i16::from_le_bytes([c[0], c[1]]))).collect(),
        DataType::Uint32 => chunks.map(|c| json!(u32::from_le_bytes(c.try_into().expect("4 bytes")))).collect(),
        DataType::Int32 => chunks.map(|c| json!(i32::from_le_bytes(c.try_into().expect("4 bytes")))).collect(),
        DataType::Uint64 => chunks.map(|c| json!(u64::from_le_bytes(c.try_into().expect("8 bytes")))).collect(),
        DataType::Int64 => chunks.map(|c| json!(i64::from_le_bytes(c.try_into().expect("8 bytes")))).collect(),
        DataType::Fp16 => chunks.map(|c| f32s(half::f16::from_le_bytes([c[0], c[1]]).to_f32())).collect(),
        DataType::Bf16 => chunks.map(|c| f32s(half::bf16::from_le_bytes([c[0], c[1]]).to_f32())).collect(),
        DataType::Fp32 => chunks.map(|c| f32s(f32::from_le_bytes(c.try_into().expect("4 bytes")))).collect(),
        DataType::Fp64 => chunks.map(|c| f(f64::from_le_bytes(c.try_into().expect("8 bytes")))).collect(),
        DataType::Bytes => Vec::new(),
    })
}

/// One output of a response, as KServe v2's JSON writes it (keys in the
/// order serde_json's map writes them, alphabetical).
#[derive(serde::Serialize)]
struct OutputJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<DataJson<'a>>,
    datatype: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<BinarySize>,
    shape: &'a [usize],
}

#[derive(serde::Serialize)]
struct BinarySize {
    binary_data_size: usize,
}

/// An output's elements. FP32 is written from the f32 values themselves:
/// each in its shortest f32 form (`0.1`, not the widened `0.10000000149011612`),
/// a NaN or infinity as null, with no JSON value built per element.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum DataJson<'a> {
    Fp32(&'a [f32]),
    Strings(Vec<std::borrow::Cow<'a, str>>),
    Other(Value),
}

impl DataJson<'_> {
    /// About how many bytes the elements take as JSON.
    fn size_hint(&self) -> usize {
        match self {
            DataJson::Fp32(v) => v.len() * 15,
            DataJson::Strings(v) => v.iter().map(|s| s.len() + 3).sum(),
            DataJson::Other(_) => 0,
        }
    }
}

#[derive(serde::Serialize)]
struct ResponseJson<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    id: &'a str,
    model_name: &'a str,
    model_version: &'a str,
    outputs: Vec<OutputJson<'a>>,
}

/// Encodes a response: the body, and the JSON part's length when binary data follows it.
pub fn encode_response(response: &InferResponse) -> (Vec<u8>, Option<usize>) {
    let mut binary = Vec::new();
    let outputs: Vec<OutputJson<'_>> = response
        .outputs
        .iter()
        .map(|o| {
            let (data, parameters) = if o.binary {
                let raw = o.data.to_raw();
                let size = BinarySize { binary_data_size: raw.len() };
                binary.extend_from_slice(&raw);
                (None, Some(size))
            } else {
                let data = match &o.data {
                    OutputData::Fp32(v) => DataJson::Fp32(v),
                    OutputData::Bytes(v) => DataJson::Strings(v.iter().map(|b| String::from_utf8_lossy(b)).collect()),
                    OutputData::Fixed { datatype, raw } => DataJson::Other(fixed_json(*datatype, raw)),
                };
                (Some(data), None)
            };
            OutputJson { data, datatype: o.data.datatype().as_str(), name: &o.name, parameters, shape: &o.shape }
        })
        .collect();
    // Sized once for the usual case (an f32 is at most 15 bytes with its comma)
    // rather than doubled and copied several times per response.
    let estimate = 256 + binary.len() + outputs.iter().map(|o| o.data.as_ref().map_or(0, DataJson::size_hint) + 96).sum::<usize>();
    let head = ResponseJson { id: &response.id, model_name: &response.model_name, model_version: &response.model_version, outputs };
    let mut body = Vec::with_capacity(estimate);
    serde_json::to_writer(&mut body, &head).expect("a response serializes");
    if binary.is_empty() {
        (body, None)
    } else {
        let n = body.len();
        body.extend_from_slice(&binary);
        (body, Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::kserve::{encode_bytes_elements, OutputTensor};

    fn limits() -> Limits {
        Limits::default()
    }

    #[test]
    fn json_and_binary_inputs_decode() {
        let head = br#"{"id":"7","parameters":{"priority":2,"timeout":5000},
            "inputs":[{"name":"text","shape":[2,1],"datatype":"BYTES","parameters":{"binary_data_size":16}},
                      {"name":"n","shape":[1,2],"datatype":"INT32","data":[[1,-2]]}],
            "outputs":[{"name":"logits","parameters":{"classification":2,"binary_data":false}}]}"#;
        let mut body = head.to_vec();
        body.extend(encode_bytes_elements(&[b"hello".to_vec(), b"abc".to_vec()]));
        let r = decode_request(&body, Some(head.len()), &limits()).unwrap();
        assert_eq!(r.id, "7");
        assert_eq!((r.priority, r.timeout_us), (2, Some(5000)));
        assert_eq!(r.inputs[0].data, Elements::Bytes(vec![b"hello".to_vec(), b"abc".to_vec()]));
        assert_eq!(r.inputs[0].shape, [2, 1]);
        let mut want = 1i32.to_le_bytes().to_vec();
        want.extend((-2i32).to_le_bytes());
        assert_eq!(r.inputs[1].data, Elements::Fixed(want));
        assert_eq!(r.outputs, [RequestedOutput { name: "logits".into(), binary: false, classification: Some(2) }]);
    }

    #[test]
    fn malformed_requests_name_the_problem() {
        let l = limits();
        let msg = |body: &str, h: Option<usize>| decode_request(body.as_bytes(), h, &l).unwrap_err().to_string();
        assert!(msg("{", None).starts_with("malformed JSON"));
        assert!(msg("[]", None).contains("must be a JSON object"));
        assert!(msg("{}", None).contains("no 'inputs'"));
        assert!(msg("{}", Some(10)).contains("only 2 bytes"));
        assert!(msg(r#"{"inputs":[{"name":"t","shape":[2],"datatype":"FP99","data":[1,2]}]}"#, None).contains("unknown datatype 'FP99'"));
        assert!(msg(r#"{"inputs":[{"name":"t","shape":[3],"datatype":"INT32","data":[1,2]}]}"#, None)
            .contains("2 data elements, the shape needs 3"));
        assert!(msg(r#"{"inputs":[{"name":"t","shape":[1],"datatype":"INT32","data":[1,2]}]}"#, None).contains("more data elements"));
        assert!(msg(r#"{"inputs":[{"name":"t","shape":[1],"datatype":"INT8","data":[300]}]}"#, None).contains("not a valid INT8"));
        assert!(msg(r#"{"inputs":[{"name":"t","shape":[1],"datatype":"BYTES","data":[3]}]}"#, None).contains("not a valid BYTES"));
        assert!(msg(r#"{"inputs":[{"name":"t","shape":[-1],"datatype":"BYTES","data":[]}]}"#, None).contains("negative"));
        let head = r#"{"inputs":[{"name":"t","shape":[1],"datatype":"FP32","parameters":{"binary_data_size":4}}]}"#;
        let body = format!("{head}abcdXY");
        assert!(msg(&body, Some(head.len())).contains("2 bytes of binary data follow"));
        assert!(msg(&body[..head.len() + 2], Some(head.len())).contains("more than the 2 binary bytes"));
    }

    #[test]
    fn responses_put_binary_outputs_after_the_json() {
        let response = InferResponse {
            model_name: "m".into(),
            model_version: "1".into(),
            id: String::new(),
            outputs: vec![
                OutputTensor { name: "a".into(), shape: vec![1, 2], data: OutputData::Fp32(vec![1.0, 2.0]), binary: true },
                OutputTensor { name: "b".into(), shape: vec![1], data: OutputData::Bytes(vec![b"x".to_vec()]), binary: false },
            ],
        };
        let (body, n) = encode_response(&response);
        let n = n.unwrap();
        let head: Value = serde_json::from_slice(&body[..n]).unwrap();
        assert_eq!(head["outputs"][0]["parameters"]["binary_data_size"], 8);
        assert_eq!(head["outputs"][1]["data"], json!(["x"]));
        assert_eq!(&body[n..], [1.0f32.to_le_bytes(), 2.0f32.to_le_bytes()].concat());
    }

    #[test]
    fn fp32_outputs_are_written_in_their_shortest_f32_form_and_non_finite_ones_as_null() {
        let response = InferResponse {
            model_name: "m".into(),
            model_version: "1".into(),
            id: "r7".into(),
            outputs: vec![OutputTensor {
                name: "e".into(),
                shape: vec![1, 4],
                data: OutputData::Fp32(vec![0.1, -2.5e-8, f32::NAN, f32::INFINITY]),
                binary: false,
            }],
        };
        let (body, n) = encode_response(&response);
        assert_eq!(n, None);
        let text = String::from_utf8(body).unwrap();
        assert!(text.contains(r#""data":[0.1,-2.5e-8,null,null]"#), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!((v["id"].as_str(), v["model_name"].as_str(), v["model_version"].as_str()), (Some("r7"), Some("m"), Some("1")));
        assert_eq!(v["outputs"][0]["shape"], json!([1, 4]));
        assert_eq!(v["outputs"][0]["datatype"], "FP32");
        assert!(v["outputs"][0].get("parameters").is_none());
        // Every value reads back as the f32 it was.
        assert_eq!(v["outputs"][0]["data"][0].as_f64().map(|x| x as f32), Some(0.1f32));
    }

    #[test]
    fn fixed_size_outputs_keep_their_datatype_in_json_and_binary() {
        let int64: Vec<u8> = [7i64, -1].iter().flat_map(|x| x.to_le_bytes()).collect();
        let fp16: Vec<u8> = [0.5f32, -2.0].iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect();
        let response = InferResponse {
            model_name: "m".into(),
            model_version: "1".into(),
            id: String::new(),
            outputs: vec![
                OutputTensor {
                    name: "i".into(),
                    shape: vec![2],
                    data: OutputData::Fixed { datatype: DataType::Int64, raw: int64 },
                    binary: false,
                },
                OutputTensor {
                    name: "h".into(),
                    shape: vec![2],
                    data: OutputData::Fixed { datatype: DataType::Fp16, raw: fp16.clone() },
                    binary: true,
                },
                OutputTensor {
                    name: "b".into(),
                    shape: vec![2],
                    data: OutputData::Fixed { datatype: DataType::Bool, raw: vec![1, 0] },
                    binary: false,
                },
            ],
        };
        let (body, n) = encode_response(&response);
        let n = n.unwrap();
        let head: Value = serde_json::from_slice(&body[..n]).unwrap();
        assert_eq!((head["outputs"][0]["datatype"].as_str(), &head["outputs"][0]["data"]), (Some("INT64"), &json!([7, -1])));
        assert_eq!(head["outputs"][1]["datatype"], "FP16");
        assert_eq!(head["outputs"][1]["parameters"]["binary_data_size"], 4);
        assert_eq!(head["outputs"][2]["data"], json!([true, false]));
        assert_eq!(&body[n..], &fp16[..]);
    }
}
