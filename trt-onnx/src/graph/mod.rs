//! ONNX models in memory: read and write `.onnx` files (external data
//! included), look tensors up, edit the graph.
//!
//! | module | what |
//! |---|---|
//! | [`proto`] | the protobuf messages, generated at build time from the official `onnx.proto` (ONNX 1.23.2) |
//! | [`tensor`] | element types and initializer data to and from `ndarray` |
//! | [`types`] | the element type of every tensor of a graph, inferred op by op |
//! | [`edit`] | producer/consumer index, unique names, topological order, extra outputs |
//! | [`pooling`] | a sentence-embedding output pooled (and normalised) inside the graph |
//!
//! Why prost and not a ready-made ONNX crate: `onnx-protobuf` 0.2.3
//! (rust-protobuf) no longer builds against the current `protobuf` 3.7 (it
//! checks for exactly 3.4), and `onnx-pb` 0.1.4 is on prost 0.6 with an old
//! `onnx.proto`. prost + protox (a protobuf compiler in Rust) generate the
//! types from the official file at build time, and trt-serve builds the same
//! stack already. The price: prost drops fields it does not know, so a file
//! written by an ONNX newer than 1.23 could lose fields added later; every
//! field of IR 14 round-trips.
//!
//! A model is always held with its weights inline ([`Model::load`] reads
//! external data into `raw_data`); [`Model::save`] writes them out again
//! when asked, or when the model would pass protobuf's 2 GiB limit.

pub mod edit;
pub mod pooling;
pub mod proto;
pub mod tensor;
pub mod types;

use std::path::{Component, Path, PathBuf};

use bytes::Bytes;
use prost::Message;

use crate::{Error, Result};
use proto::tensor_proto::DataLocation;
use proto::{GraphProto, ModelProto, StringStringEntryProto, TensorProto};

/// protobuf's hard limit on one message: bigger models need external data.
const PROTOBUF_LIMIT: usize = 2 << 30;
/// Tensors at least this large go to the external file (the onnx package's default).
const EXTERNAL_THRESHOLD: usize = 1024;
/// Offsets in the external file are aligned so the data can be memory-mapped.
const EXTERNAL_ALIGN: u64 = 4096;

/// An ONNX model, weights inline.
#[derive(Debug, Clone)]
pub struct Model {
    /// The protobuf message; edit it freely, [`Model::save`] writes it.
    pub proto: ModelProto,
}

/// How [`Model::save`] stores weights.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum WeightStorage {
    /// Inline, unless the model would pass 2 GiB: then as [`WeightStorage::External`]
    /// with `<file>.data`.
    #[default]
    Auto,
    /// Inline in the `.onnx` file.
    Inline,
    /// Tensors of 1 KiB and more in one file beside the model, named relative to it.
    External(PathBuf),
}

impl Model {
    /// Reads an `.onnx` file and any external data it points to (relative to
    /// the file's folder, never outside it).
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| Error::Io { path: path.into(), source })?;
        let mut model = Self::decode(Bytes::from(bytes), &path.display().to_string())?;
        let dir = path.parent().unwrap_or(Path::new("."));
        // Each data file is read once; tensors then point into its buffer.
        let mut files = std::collections::HashMap::new();
        for_each_tensor(model.graph_mut()?, &mut |t| inline_external(t, dir, &mut files))?;
        Ok(model)
    }

    /// Decodes a model from bytes; external data is refused (there is no folder to read it from).
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Result<Model> {
        let mut model = Self::decode(bytes.into(), "model bytes")?;
        for_each_tensor(model.graph_mut()?, &mut |t| {
            if is_external(t) {
                return Err(external_error(t, "the model was given as bytes, so there is no folder to read it from"));
            }
            Ok(())
        })?;
        Ok(model)
    }

    fn decode(bytes: Bytes, what: &str) -> Result<Model> {
        let proto = ModelProto::decode(bytes).map_err(|e| Error::Decode { what: what.to_string(), message: e.to_string() })?;
        if proto.graph.is_none() {
            return Err(Error::Decode { what: what.to_string(), message: "no graph".into() });
        }
        if proto.ir_version.is_none() {
            return Err(Error::Decode { what: what.to_string(), message: "no ir_version".into() });
        }
        Ok(Model { proto })
    }

    /// The main graph.
    pub fn graph(&self) -> &GraphProto {
        // decode() refuses models without a graph; a caller that removed it gets an empty one.
        static EMPTY: std::sync::OnceLock<GraphProto> = std::sync::OnceLock::new();
        self.proto.graph.as_ref().unwrap_or_else(|| EMPTY.get_or_init(GraphProto::default))
    }

    /// The main graph, to edit.
    pub fn graph_mut(&mut self) -> Result<&mut GraphProto> {
        self.proto.graph.as_mut().ok_or_else(|| Error::Graph("the model has no graph".into()))
    }

    /// The version of the default ("" or "ai.onnx") operator set.
    pub fn opset(&self) -> Option<i64> {
        self.proto.opset_import.iter().find(|o| matches!(o.domain.as_deref(), None | Some("") | Some("ai.onnx"))).and_then(|o| o.version)
    }

    /// The encoded model with every weight inline; fails past protobuf's 2 GiB.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let len = self.proto.encoded_len();
        if len >= PROTOBUF_LIMIT {
            return Err(Error::Unsupported {
                operation: "encoding a model",
                problem: format!("{len} bytes is past protobuf's 2 GiB limit; save it with external data"),
            });
        }
        Ok(self.proto.encode_to_vec())
    }

    /// Writes the model to `path`, weights stored as `storage` says.
    pub fn save(&self, path: impl AsRef<Path>, storage: &WeightStorage) -> Result<()> {
        let path = path.as_ref();
        let io = |source| Error::Io { path: path.into(), source };
        let external = match storage {
            WeightStorage::Inline => None,
            WeightStorage::External(p) => Some(p.clone()),
            WeightStorage::Auto if self.proto.encoded_len() >= PROTOBUF_LIMIT => {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                Some(PathBuf::from(format!("{name}.data")))
            }
            WeightStorage::Auto => None,
        };
        let Some(location) = external else {
            return std::fs::write(path, self.to_bytes()?).map_err(io);
        };
        check_relative(&location).map_err(|problem| Error::ExternalData {
            tensor: "(all)".into(),
            location: location.display().to_string(),
            problem,
        })?;
        let data_path = path.parent().unwrap_or(Path::new(".")).join(&location);
        let mut model = self.clone();
        let mut data: Vec<u8> = Vec::new();
        let loc = location.to_string_lossy().replace('\\', "/");
        for_each_tensor(model.graph_mut()?, &mut |t| {
            let Some(raw) = t.raw_data.as_ref().filter(|r| r.len() >= EXTERNAL_THRESHOLD) else {
                return Ok(());
            };
            let offset = (data.len() as u64).div_ceil(EXTERNAL_ALIGN) * EXTERNAL_ALIGN;
            data.resize(offset as usize, 0);
            data.extend_from_slice(raw);
            let entry = |k: &str, v: String| StringStringEntryProto { key: Some(k.into()), value: Some(v) };
            t.external_data =
                vec![entry("location", loc.clone()), entry("offset", offset.to_string()), entry("length", raw.len().to_string())];
            t.data_location = Some(DataLocation::External as i32);
            t.raw_data = None;
            Ok(())
        })?;
        std::fs::write(&data_path, &data).map_err(|source| Error::Io { path: data_path.clone(), source })?;
        std::fs::write(path, model.to_bytes()?).map_err(io)
    }
}

/// Calls `f` on every tensor of the graph that can hold weights: initializers,
/// and tensor attributes of nodes (Constant), in subgraphs too.
pub(crate) fn for_each_tensor(graph: &mut GraphProto, f: &mut dyn FnMut(&mut TensorProto) -> Result<()>) -> Result<()> {
    for t in &mut graph.initializer {
        f(t)?;
    }
    for s in &mut graph.sparse_initializer {
        for t in s.values.iter_mut().chain(s.indices.iter_mut()) {
            f(t)?;
        }
    }
    for node in &mut graph.node {
        for a in &mut node.attribute {
            if let Some(t) = a.t.as_mut() {
                f(t)?;
            }
            for t in &mut a.tensors {
                f(t)?;
            }
            if let Some(g) = a.g.as_mut() {
                for_each_tensor(g, f)?;
            }
            for g in &mut a.graphs {
                for_each_tensor(g, f)?;
            }
        }
    }
    Ok(())
}

fn is_external(t: &TensorProto) -> bool {
    t.data_location == Some(DataLocation::External as i32)
}

fn external_error(t: &TensorProto, problem: impl Into<String>) -> Error {
    let location = t.external_data.iter().find(|e| e.key.as_deref() == Some("location")).and_then(|e| e.value.clone()).unwrap_or_default();
    Error::ExternalData { tensor: t.name.clone().unwrap_or_default(), location, problem: problem.into() }
}

/// A location must name a file under the model's folder: no absolute paths, no `..`.
fn check_relative(location: &Path) -> std::result::Result<(), String> {
    if location.as_os_str().is_empty() {
        return Err("empty location".into());
    }
    if location.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
        Ok(())
    } else {
        Err("the location must be a relative path inside the model's folder".into())
    }
}

/// Reads a tensor's external data into `raw_data` and clears the external fields.
fn inline_external(t: &mut TensorProto, dir: &Path, files: &mut std::collections::HashMap<PathBuf, Bytes>) -> Result<()> {
    if !is_external(t) {
        return Ok(());
    }
    let mut location = None;
    let (mut offset, mut length) = (0u64, None);
    for e in &t.external_data {
        let value = e.value.clone().unwrap_or_default();
        let number = |v: &str| v.parse::<u64>().map_err(|_| external_error(t, format!("'{v}' is not a byte count")));
        match e.key.as_deref() {
            Some("location") => location = Some(value),
            Some("offset") => offset = number(&value)?,
            Some("length") => length = Some(number(&value)?),
            _ => {}
        }
    }
    let location = location.ok_or_else(|| external_error(t, "no location entry"))?;
    check_relative(Path::new(&location)).map_err(|p| external_error(t, p))?;
    let file = dir.join(&location);
    let all = match files.get(&file) {
        Some(b) => b.clone(),
        None => {
            let b = std::fs::read(&file).map_err(|e| external_error(t, format!("cannot read {}: {e}", file.display())))?;
            files.entry(file.clone()).or_insert(Bytes::from(b)).clone()
        }
    };
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    let end = match length {
        Some(n) => start.saturating_add(usize::try_from(n).unwrap_or(usize::MAX)),
        None => all.len(),
    };
    if start > all.len() || end > all.len() {
        return Err(external_error(t, format!("bytes {start}..{end} asked for, but {} has {} bytes", file.display(), all.len())));
    }
    t.raw_data = Some(all.slice(start..end));
    t.external_data.clear();
    t.data_location = None;
    Ok(())
}
