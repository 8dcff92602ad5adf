//! The ONNX parser: ONNX model to a TensorRT network.
//!
//! TensorRT's parser owns the weights it reads and the network points into
//! them until the engine is built, so the parser must outlive the build. A
//! [`ParsedNetwork`] therefore owns both and drops the parser only with the
//! network; it dereferences to [`Network`] for inspection and building.

use std::ops::Deref;
use std::path::Path;

use trt_sys::ffi;

use crate::call::call;
use crate::network::Network;
use crate::{Builder, Error, OnnxError, Result};

/// A network populated from an ONNX model, together with the parser that owns its weights.
pub struct ParsedNetwork<'b> {
    // Field order is drop order: the parser (weights) goes with the network.
    parser: cxx::UniquePtr<ffi::IParser>,
    network: Network<'b>,
}

impl<'b> Deref for ParsedNetwork<'b> {
    type Target = Network<'b>;
    fn deref(&self) -> &Network<'b> {
        &self.network
    }
}

impl std::fmt::Debug for ParsedNetwork<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.network.fmt(f)
    }
}

impl<'b> ParsedNetwork<'b> {
    /// Does the parser support this ONNX operator?
    pub fn supports_operator(&self, op: &str) -> bool {
        self.parser.as_ref().map(|p| ffi::parser_supports_operator(p, op).unwrap_or(false)).unwrap_or(false)
    }

    /// The network, with the parser kept alive.
    pub fn network(&self) -> &Network<'b> {
        &self.network
    }
}

/// Parses ONNX models into networks.
#[derive(Debug)]
pub struct OnnxParser;

impl OnnxParser {
    /// Parse an ONNX file into a strongly typed network. External weight files
    /// are found next to it.
    pub fn parse_file<'b>(builder: &'b Builder, path: impl AsRef<Path>) -> Result<ParsedNetwork<'b>> {
        Self::parse_file_with(builder, path, true)
    }

    /// Parse an ONNX file, choosing the network's typing. Only TensorRT 10.x has
    /// weakly typed networks (where the FP16/INT8 builder flags apply); on 11.x and
    /// TensorRT-RTX every network is strongly typed and `strongly_typed` is ignored.
    pub fn parse_file_with<'b>(builder: &'b Builder, path: impl AsRef<Path>, strongly_typed: bool) -> Result<ParsedNetwork<'b>> {
        let path = path.as_ref();
        let base = path.to_str().ok_or_else(|| {
            Error::InvalidArgument(format!("{}: TensorRT's parser needs a UTF-8 path (for external weights)", path.display()))
        })?;
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::parse_impl(builder, &bytes, &path.display().to_string(), base, strongly_typed)
    }

    /// Parse an ONNX model from memory. `base_path`, when given, is where
    /// external weight files are looked up (the model's original file path).
    pub fn parse_bytes<'b>(builder: &'b Builder, model: &[u8], base_path: Option<&Path>) -> Result<ParsedNetwork<'b>> {
        let base = match base_path {
            Some(p) => p.to_str().ok_or_else(|| {
                Error::InvalidArgument(format!("{}: TensorRT's parser needs a UTF-8 path (for external weights)", p.display()))
            })?,
            None => "",
        };
        Self::parse_impl(builder, model, "<bytes>", base, true)
    }

    fn parse_impl<'b>(builder: &'b Builder, model: &[u8], source: &str, base: &str, strongly_typed: bool) -> Result<ParsedNetwork<'b>> {
        let fail = |errors: Vec<OnnxError>| Error::OnnxParse { source_name: source.to_owned(), errors };
        if model.is_empty() {
            return Err(fail(vec![synthetic("INVALID_GRAPH", "the model is empty (0 bytes)")]));
        }
        if let Some(node) = crate::onnx_guard::find_node_without_outputs(model) {
            let non_empty = |s: String| (!s.is_empty()).then_some(s);
            return Err(fail(vec![OnnxError {
                code: "INVALID_NODE".to_owned(),
                description: format!(
                    "node {} ({}) of the graph or a subgraph has no outputs; refused before parsing \
                     (TensorRT-RTX 1.7's parser crashes on such a node)",
                    node.index,
                    if node.operator.is_empty() { "no operator" } else { &node.operator }
                ),
                node_index: Some(node.index),
                node_name: non_empty(node.name),
                operator: non_empty(node.operator),
                location: String::new(),
            }]));
        }
        let network = builder.network(strongly_typed)?;
        let factory = builder.library().parser_factory()?;
        // SAFETY: createNvOnnxParser_INTERNAL of the loaded parser library; the
        // parser keeps a reference to the network, which outlives it (ParsedNetwork).
        let (raw, messages) = call("createNvOnnxParser", || unsafe { ffi::create_onnx_parser(factory, network.pin()) })?;
        if raw.is_null() || !messages.is_empty() {
            return Err(Error::TensorRt { operation: "createNvOnnxParser", messages });
        }
        // SAFETY: a fresh parser created by the factory, owned from here on.
        let mut parser = unsafe { cxx::UniquePtr::from_raw(raw) };
        let pinned = parser.as_mut().expect("non-null parser");
        let (ok, logged) = call("IParser::parse", || ffi::parser_parse(pinned, model, base))?;
        let recorded = call("IParser::getError", || ffi::parser_errors(parser.as_ref().expect("parser")))?.0;
        if !ok || !recorded.is_empty() {
            let mut errors: Vec<OnnxError> = recorded.into_iter().map(convert).collect();
            if errors.is_empty() {
                errors.extend(logged.into_iter().map(|m| synthetic("INTERNAL_ERROR", &m.text)));
            }
            if errors.is_empty() {
                errors.push(synthetic("INVALID_GRAPH", "the parser rejected the model without a message"));
            }
            return Err(fail(errors));
        }
        Ok(ParsedNetwork { parser, network })
    }
}

fn convert(e: ffi::OnnxParserError) -> OnnxError {
    let non_empty = |s: String| (!s.is_empty()).then_some(s);
    OnnxError {
        code: e.code_name,
        description: e.description,
        node_index: (e.node >= 0).then_some(e.node),
        node_name: non_empty(e.node_name),
        operator: non_empty(e.node_operator),
        location: format!("{}:{} ({})", e.file, e.line, e.function),
    }
}

fn synthetic(code: &str, description: &str) -> OnnxError {
    OnnxError {
        code: code.to_owned(),
        description: description.to_owned(),
        node_index: None,
        node_name: None,
        operator: None,
        location: String::new(),
    }
}
