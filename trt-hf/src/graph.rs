//! The graph builder every family writes through: nodes with names derived
//! from the checkpoint's own tensor names, weights as FP32 initializers, and
//! the building blocks an encoder is made of (linear layers, LayerNorm,
//! activations, multi-head attention).
//!
//! The graph is opset 17 (LayerNormalization is native; GELU is written as
//! its erf formula, the pattern runtimes fuse) and IR 8, the version that
//! shipped with opset 17, so older ONNX parsers (TensorRT's among them)
//! accept it. Only operators TensorRT's ONNX parser and ONNX Runtime's CPU
//! provider both implement are used.

use std::collections::HashMap;

use trt_onnx::graph::proto::attribute_proto::AttributeType;
use trt_onnx::graph::proto::tensor_proto::DataType;
use trt_onnx::graph::proto::{
    tensor_shape_proto, type_proto, AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, StringStringEntryProto,
    TensorProto, TensorShapeProto, TypeProto, ValueInfoProto,
};
use trt_onnx::graph::Model;

use crate::arch::Activation;
use crate::weights::Tensor;

/// The opset written.
pub const OPSET: i64 = 17;
/// The IR version that shipped with opset 17.
pub const IR_VERSION: i64 = 8;
/// The additive bias on masked attention scores: exactly representable in
/// FP16 and large enough that `exp` of it is 0 in the FP32 Softmax.
pub const MASK_BIAS: f32 = -10000.0;
/// What a packed graph rounds its sequence up to when its attention adds a
/// bias to the scores: ONNX Runtime's CUDA provider runs such a
/// PackedAttention in its memory-efficient kernel only at a sequence length
/// that is a multiple of 8 in FP16 (otherwise it writes out every score and
/// runs a separate softmax).
pub const SEQUENCE_ALIGN: i64 = 8;

/// A dimension of a graph input or output.
#[derive(Debug, Clone)]
pub enum Dim {
    /// A named, dynamic axis.
    Named(&'static str),
    /// A fixed size.
    Fixed(usize),
}

/// The domain of ONNX Runtime's fused operators.
pub const MS_DOMAIN: &str = "com.microsoft";

/// An ONNX graph being written.
#[derive(Debug, Default)]
pub struct Graph {
    /// Write ONNX Runtime's fused operators where they exist ([`Graph::fused`]).
    fused: bool,
    /// Run the encoder layers on the real tokens only ([`Graph::packed`]).
    packed: bool,
    /// While the layers run packed: the token offsets and the cumulative
    /// sequence lengths [`Graph::remove_padding`] wrote.
    packing: Option<(String, String)>,
    /// GroupQueryAttention's length inputs, once written.
    gqa_lengths: Option<(String, String)>,
    nodes: Vec<NodeProto>,
    inits: Vec<TensorProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    scalars: HashMap<u32, String>,
    taken: HashMap<String, usize>,
    /// Nodes added while [`Graph::fp32_region`] is on.
    fp32_nodes: Vec<String>,
    fp32_region: bool,
}

/// An attribute of a node.
pub fn attr_int(name: &str, v: i64) -> AttributeProto {
    AttributeProto { name: Some(name.into()), r#type: Some(AttributeType::Int as i32), i: Some(v), ..Default::default() }
}

/// A float attribute.
pub fn attr_float(name: &str, v: f32) -> AttributeProto {
    AttributeProto { name: Some(name.into()), r#type: Some(AttributeType::Float as i32), f: Some(v), ..Default::default() }
}

/// An attribute holding a list of ints.
pub fn attr_ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto { name: Some(name.into()), r#type: Some(AttributeType::Ints as i32), ints: v.to_vec(), ..Default::default() }
}

fn tensor_value(name: &str, elem_type: i32, dims: &[Dim]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| tensor_shape_proto::Dimension {
            value: Some(match d {
                Dim::Named(n) => tensor_shape_proto::dimension::Value::DimParam(n.to_string()),
                Dim::Fixed(n) => tensor_shape_proto::dimension::Value::DimValue(*n as i64),
            }),
            ..Default::default()
        })
        .collect();
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(elem_type),
                shape: Some(TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

impl Graph {
    /// A graph in ONNX Runtime's fused operators (`com.microsoft` Attention,
    /// SkipLayerNormalization, BiasGelu) where a layer allows them: fewer,
    /// larger kernels for its CUDA provider. ONNX Runtime only; TensorRT's
    /// parser knows none of them.
    pub fn fused() -> Self {
        Graph { fused: true, ..Graph::default() }
    }

    /// Whether this graph is written in fused operators.
    pub fn is_fused(&self) -> bool {
        self.fused
    }

    /// A graph in fused operators whose encoder layers run on the batch's
    /// real tokens only: ONNX Runtime's `RemovePadding` packs the
    /// embeddings to `[tokens, hidden]`, the layers' matrix products and
    /// `PackedAttention` cost what the texts hold instead of rows x the
    /// longest, and `RestorePadding` lays the last state out as `[B, S,
    /// hidden]` again for the heads. Those three operators exist on ONNX
    /// Runtime's CUDA provider only.
    pub fn packed() -> Self {
        Graph { fused: true, packed: true, ..Graph::default() }
    }

    /// Whether the encoder layers run packed ([`Graph::packed`]).
    pub fn is_packed(&self) -> bool {
        self.packed
    }

    /// `x` (`[B, S, hidden]`, right-padded) without its padding,
    /// `[tokens, hidden]`, given `mask_index` (each row's length). Until
    /// [`Graph::restore_padding`], [`Graph::fused_attention`] writes
    /// `PackedAttention` over these offsets.
    pub fn remove_padding(&mut self, x: &str, mask_index: &str) -> String {
        let outputs = [Some("packed"), Some("token_offset"), Some("cumulative_lengths"), Some("max_length")];
        let outs = self.node(Some(MS_DOMAIN), "RemovePadding", "RemovePadding", &[x, mask_index], &outputs, vec![]);
        self.packing = Some((outs[1].clone(), outs[2].clone()));
        outs[0].clone()
    }

    /// The packed `x` (`[tokens, hidden]`) back at `[B, S, hidden]`, padding
    /// rows zero; the layers after it are written unpacked again.
    pub fn restore_padding(&mut self, x: &str) -> String {
        let (offsets, _) = self.packing.take().expect("restore_padding follows remove_padding");
        self.ms_op("RestorePadding", "RestorePadding", &[x, &offsets], vec![])
    }

    /// A node of ONNX Runtime's operator `op` (domain `com.microsoft`).
    pub fn ms_op(&mut self, op: &str, name: &str, inputs: &[&str], attrs: Vec<AttributeProto>) -> String {
        self.node(Some(MS_DOMAIN), op, name, inputs, &[Some("out")], attrs).remove(0)
    }

    /// A fresh name based on `base` (a suffix is added when it is taken).
    fn fresh(&mut self, base: &str) -> String {
        let n = self.taken.entry(base.to_string()).or_insert(0);
        *n += 1;
        if *n == 1 {
            base.to_string()
        } else {
            format!("{base}_{n}")
        }
    }

    /// Adds an INT32 `[batch, sequence]` token input.
    pub fn token_input(&mut self, name: &str) -> String {
        self.inputs.push(tensor_value(name, DataType::Int32 as i32, &[Dim::Named("batch"), Dim::Named("sequence")]));
        name.to_string()
    }

    /// Declares `tensor` a FLOAT graph output called `name` (an Identity
    /// gives it that name).
    pub fn output(&mut self, tensor: &str, name: &str, dims: &[Dim]) {
        self.nodes.push(NodeProto {
            op_type: Some("Identity".into()),
            name: Some(format!("{name}/Identity")),
            input: vec![tensor.to_string()],
            output: vec![name.to_string()],
            ..Default::default()
        });
        self.outputs.push(tensor_value(name, DataType::Float as i32, dims));
    }

    /// Nodes added from now until [`Graph::end_fp32`] stay FP32 in the FP16 model.
    pub fn begin_fp32(&mut self) {
        self.fp32_region = true;
    }

    /// Ends the region [`Graph::begin_fp32`] started.
    pub fn end_fp32(&mut self) {
        self.fp32_region = false;
    }

    /// Runs `f`, every node it adds staying FP32 in the FP16 model; regions
    /// nest (the state before is restored, not switched off).
    pub fn in_fp32<R>(&mut self, f: impl FnOnce(&mut Graph) -> R) -> R {
        let was = self.fp32_region;
        self.fp32_region = true;
        let r = f(self);
        self.fp32_region = was;
        r
    }

    /// The names of the nodes that stay FP32.
    pub fn fp32_nodes(&self) -> &[String] {
        &self.fp32_nodes
    }

    /// A node of `op` over `inputs` with one output, named `name`; returns the output.
    pub fn op(&mut self, op: &str, name: &str, inputs: &[&str], attrs: Vec<AttributeProto>) -> String {
        self.node(None, op, name, inputs, &[Some("out")], attrs).remove(0)
    }

    /// A node of `op` in `domain` (the default one for `None`), named from
    /// `name`; `outputs` names each output by a suffix, `None` leaving an
    /// optional output out. Returns the outputs' names.
    fn node(
        &mut self,
        domain: Option<&str>,
        op: &str,
        name: &str,
        inputs: &[&str],
        outputs: &[Option<&str>],
        attrs: Vec<AttributeProto>,
    ) -> Vec<String> {
        let node = self.fresh(name);
        let outs: Vec<String> = outputs.iter().map(|o| o.map(|o| format!("{node}_{o}")).unwrap_or_default()).collect();
        if self.fp32_region {
            self.fp32_nodes.push(node.clone());
        }
        self.nodes.push(NodeProto {
            op_type: Some(op.to_string()),
            name: Some(node),
            domain: domain.map(str::to_string),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outs.clone(),
            attribute: attrs,
            ..Default::default()
        });
        outs
    }

    fn init(&mut self, name: &str, dims: &[usize], data_type: DataType, raw: Vec<u8>) -> String {
        let name = self.fresh(name);
        self.inits.push(TensorProto {
            name: Some(name.clone()),
            dims: dims.iter().map(|&d| d as i64).collect(),
            data_type: Some(data_type as i32),
            raw_data: Some(raw.into()),
            ..Default::default()
        });
        name
    }

    /// A FLOAT initializer.
    pub fn floats(&mut self, name: &str, dims: &[usize], data: &[f32]) -> String {
        self.init(name, dims, DataType::Float, data.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// An INT64 initializer (a scalar when `dims` is empty).
    pub fn ints(&mut self, name: &str, dims: &[usize], data: &[i64]) -> String {
        self.init(name, dims, DataType::Int64, data.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// A FLOAT scalar, one initializer per value.
    pub fn scalar(&mut self, v: f32) -> String {
        if let Some(n) = self.scalars.get(&v.to_bits()) {
            return n.clone();
        }
        let n = self.floats(&format!("const/{v}"), &[], &[v]);
        self.scalars.insert(v.to_bits(), n.clone());
        n
    }

    /// A weight as stored.
    pub fn weight(&mut self, t: &Tensor) -> String {
        self.floats(&t.name, &t.shape, &t.data)
    }

    /// A `[out, in]` PyTorch Linear weight as the `[in, out]` MatMul operand.
    pub fn weight_t(&mut self, t: &Tensor) -> String {
        let (rows, cols) = (t.shape[0], t.shape[1]);
        let mut data = vec![0f32; t.data.len()];
        for r in 0..rows {
            for c in 0..cols {
                data[c * rows + r] = t.data[r * cols + c];
            }
        }
        self.floats(&t.name, &[cols, rows], &data)
    }

    /// `x @ wᵀ + b` with a PyTorch Linear's weight `[out, in]`.
    pub fn linear(&mut self, x: &str, w: &Tensor, b: Option<&Tensor>, name: &str) -> String {
        let wt = self.weight_t(w);
        let y = self.op("MatMul", &format!("{name}/MatMul"), &[x, &wt], vec![]);
        match b {
            Some(b) => {
                let b = self.weight(b);
                self.op("Add", &format!("{name}/Add"), &[&y, &b], vec![])
            }
            None => y,
        }
    }

    /// LayerNormalization over the last axis.
    pub fn layer_norm(&mut self, x: &str, w: &Tensor, b: &Tensor, eps: f32, name: &str) -> String {
        let (w, b) = (self.weight(w), self.weight(b));
        self.op(
            "LayerNormalization",
            &format!("{name}/LayerNormalization"),
            &[x, &w, &b],
            vec![attr_int("axis", -1), attr_float("epsilon", eps)],
        )
    }

    /// `act(x)`.
    pub fn activation(&mut self, x: &str, act: Activation, name: &str) -> String {
        match act {
            Activation::Gelu => {
                // x * 0.5 * (1 + erf(x / sqrt 2)): the Gelu operator only exists from opset 20.
                let sqrt2 = self.scalar(std::f32::consts::SQRT_2);
                let d = self.op("Div", &format!("{name}/gelu/Div"), &[x, &sqrt2], vec![]);
                let e = self.op("Erf", &format!("{name}/gelu/Erf"), &[&d], vec![]);
                let one = self.scalar(1.0);
                let e = self.op("Add", &format!("{name}/gelu/Add"), &[&e, &one], vec![]);
                let m = self.op("Mul", &format!("{name}/gelu/Mul"), &[x, &e], vec![]);
                let half = self.scalar(0.5);
                self.op("Mul", &format!("{name}/gelu/Half"), &[&m, &half], vec![])
            }
            Activation::GeluTanh => {
                // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as transformers' NewGELU.
                let x2 = self.op("Mul", &format!("{name}/gelu_tanh/Square"), &[x, x], vec![]);
                let x3 = self.op("Mul", &format!("{name}/gelu_tanh/Cube"), &[&x2, x], vec![]);
                let c = self.scalar(0.044715);
                let x3 = self.op("Mul", &format!("{name}/gelu_tanh/MulC"), &[&x3, &c], vec![]);
                let inner = self.op("Add", &format!("{name}/gelu_tanh/Add"), &[x, &x3], vec![]);
                let k = self.scalar((2.0f64 / std::f64::consts::PI).sqrt() as f32);
                let inner = self.op("Mul", &format!("{name}/gelu_tanh/MulK"), &[&inner, &k], vec![]);
                let t = self.op("Tanh", &format!("{name}/gelu_tanh/Tanh"), &[&inner], vec![]);
                let one = self.scalar(1.0);
                let t = self.op("Add", &format!("{name}/gelu_tanh/AddOne"), &[&t, &one], vec![]);
                let m = self.op("Mul", &format!("{name}/gelu_tanh/Mul"), &[x, &t], vec![]);
                let half = self.scalar(0.5);
                self.op("Mul", &format!("{name}/gelu_tanh/Half"), &[&m, &half], vec![])
            }
            Activation::Relu => self.op("Relu", &format!("{name}/Relu"), &[x], vec![]),
            Activation::Tanh => self.op("Tanh", &format!("{name}/Tanh"), &[x], vec![]),
            Activation::Silu => {
                let s = self.op("Sigmoid", &format!("{name}/silu/Sigmoid"), &[x], vec![]);
                self.op("Mul", &format!("{name}/silu/Mul"), &[x, &s], vec![])
            }
        }
    }

    /// Gathers row `index` of axis 1 (`[B, S, H]` → `[B, H]`).
    pub fn token(&mut self, x: &str, index: i64, name: &str) -> String {
        let i = self.ints(&format!("{name}/index"), &[], &[index]);
        self.op("Gather", &format!("{name}/Gather"), &[x, &i], vec![attr_int("axis", 1)])
    }

    /// The `[B, S]` attention mask as the additive `[B, 1, 1, S]` score bias.
    pub fn mask_bias(&mut self, mask: &str) -> String {
        let m = self.op("Cast", "mask/Cast", &[mask], vec![attr_int("to", DataType::Float as i64)]);
        let one = self.scalar(1.0);
        let m = self.op("Sub", "mask/Sub", &[&one, &m], vec![]);
        let bias = self.scalar(MASK_BIAS);
        let m = self.op("Mul", "mask/Mul", &[&m, &bias], vec![]);
        let axes = self.ints("mask/axes", &[2], &[1, 2]);
        self.op("Unsqueeze", "mask/Unsqueeze", &[&m, &axes], vec![])
    }

    /// Multi-head self-attention of `x` (`[B, S, H]`) up to the output
    /// projection (the residual and LayerNorm are the caller's): Q is scaled
    /// before the product, so unscaled scores never exist (FP16 headroom);
    /// `bias` (`[B|1, heads, S, S]`) is added to the scores with the mask.
    pub fn attention(&mut self, x: &str, w: &AttentionWeights, heads: usize, mask_bias: &str, bias: Option<&str>, name: &str) -> String {
        let hidden = w.q.0.shape[0];
        let head_dim = hidden / heads;
        let split = self.ints(&format!("{name}/split_heads"), &[4], &[0, 0, heads as i64, head_dim as i64]);
        let merge = self.ints(&format!("{name}/merge_heads"), &[3], &[0, 0, hidden as i64]);
        let project = |g: &mut Graph, (wt, b): &(Tensor, Tensor), what: &str, perm: &[i64]| {
            let y = g.linear(x, wt, Some(b), &format!("{name}/{what}"));
            let y = g.op("Reshape", &format!("{name}/{what}/Reshape"), &[&y, &split], vec![]);
            g.op("Transpose", &format!("{name}/{what}/Transpose"), &[&y], vec![attr_ints("perm", perm)])
        };
        let q = project(self, &w.q, "q", &[0, 2, 1, 3]);
        let k = project(self, &w.k, "k", &[0, 2, 3, 1]);
        let v = project(self, &w.v, "v", &[0, 2, 1, 3]);
        let scale = self.scalar((1.0 / (head_dim as f64).sqrt()) as f32);
        let q = self.op("Mul", &format!("{name}/q/Scale"), &[&q, &scale], vec![]);
        let mut scores = self.op("MatMul", &format!("{name}/scores/MatMul"), &[&q, &k], vec![]);
        if let Some(b) = bias {
            scores = self.op("Add", &format!("{name}/scores/AddBias"), &[&scores, b], vec![]);
        }
        let scores = self.op("Add", &format!("{name}/scores/AddMask"), &[&scores, mask_bias], vec![]);
        let probs = self.op("Softmax", &format!("{name}/Softmax"), &[&scores], vec![attr_int("axis", -1)]);
        let ctx = self.op("MatMul", &format!("{name}/context/MatMul"), &[&probs, &v], vec![]);
        let ctx = self.op("Transpose", &format!("{name}/context/Transpose"), &[&ctx], vec![attr_ints("perm", &[0, 2, 1, 3])]);
        let ctx = self.op("Reshape", &format!("{name}/context/Reshape"), &[&ctx, &merge], vec![]);
        self.linear(&ctx, &w.o.0, Some(&w.o.1), &format!("{name}/output"))
    }

    /// The model: this graph, its inputs and outputs, and `properties` as metadata.
    pub fn finish(self, name: &str, doc: &str, properties: &[(&str, String)]) -> Model {
        let graph = GraphProto {
            node: self.nodes,
            name: Some(name.to_string()),
            initializer: self.inits,
            input: self.inputs,
            output: self.outputs,
            ..Default::default()
        };
        let mut opset_import = vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(OPSET) }];
        if graph.node.iter().any(|n| n.domain.as_deref() == Some(MS_DOMAIN)) {
            opset_import.push(OperatorSetIdProto { domain: Some(MS_DOMAIN.into()), version: Some(1) });
        }
        let proto = ModelProto {
            ir_version: Some(IR_VERSION),
            opset_import,
            producer_name: Some("trt-hf".into()),
            producer_version: Some(env!("CARGO_PKG_VERSION").into()),
            doc_string: Some(doc.to_string()),
            graph: Some(graph),
            metadata_props: properties
                .iter()
                .map(|(k, v)| StringStringEntryProto { key: Some(k.to_string()), value: Some(v.clone()) })
                .collect(),
            ..Default::default()
        };
        Model { proto }
    }
}

impl Graph {
    /// `[B]` INT32: each row's attended token count, the 1-D mask index of
    /// ONNX Runtime's fused Attention (valid for right padding, which the
    /// tokenizer pipeline produces; its CUDA provider's fused kernels take no
    /// other form).
    pub fn mask_index(&mut self) -> String {
        let axis = self.ints("mask_index/axis", &[1], &[1]);
        self.op("ReduceSum", "mask_index/ReduceSum", &["attention_mask", &axis], vec![attr_int("keepdims", 0)])
    }

    /// Self-attention up to the context (`[B, S, H]`, before the output
    /// projection) as one fused Attention node: Q, K and V packed into one
    /// `[H, 3H]` projection; `bias` (`[1, heads, S, S]`) added to the scores.
    pub fn fused_attention(
        &mut self,
        x: &str,
        w: &AttentionWeights,
        heads: usize,
        mask_index: &str,
        bias: Option<&str>,
        name: &str,
    ) -> String {
        let hidden = w.q.0.shape[0];
        let mut packed = vec![0f32; hidden * 3 * hidden];
        let mut packed_bias = Vec::with_capacity(3 * hidden);
        for (k, (wt, b)) in [&w.q, &w.k, &w.v].into_iter().enumerate() {
            let cols = wt.shape[1];
            for r in 0..hidden {
                for c in 0..cols {
                    // [in, 3 * out]: input row c, output column k * hidden + r.
                    packed[c * 3 * hidden + k * hidden + r] = wt.data[r * cols + c];
                }
            }
            packed_bias.extend_from_slice(&b.data);
        }
        let wq = self.floats(&format!("{name}/qkv.weight"), &[hidden, 3 * hidden], &packed);
        let bq = self.floats(&format!("{name}/qkv.bias"), &[3 * hidden], &packed_bias);
        if let Some((offsets, lengths)) = self.packing.clone() {
            let mut inputs = vec![x, wq.as_str(), bq.as_str(), offsets.as_str(), lengths.as_str()];
            inputs.extend(bias);
            return self.ms_op("PackedAttention", &format!("{name}/PackedAttention"), &inputs, vec![attr_int("num_heads", heads as i64)]);
        }
        let mut inputs = vec![x, wq.as_str(), bq.as_str(), mask_index];
        if let Some(b) = bias {
            inputs.extend(["", b]);
        }
        self.ms_op("Attention", &format!("{name}/Attention"), &inputs, vec![attr_int("num_heads", heads as i64)])
    }

    /// `LayerNorm(x + skip + bias)` as one fused SkipLayerNormalization node.
    /// `norm` is the LayerNorm's `(weight, bias)`.
    pub fn skip_layer_norm(&mut self, x: &str, skip: &str, norm: (&Tensor, &Tensor), bias: &Tensor, eps: f32, name: &str) -> String {
        self.skip_norm(x, skip, Norm::Layer(norm.0, Some(norm.1)), Some(bias), eps, false, name).0
    }

    /// `x @ wᵀ` without a bias (the bias goes into the next fused node).
    pub fn matmul_t(&mut self, x: &str, w: &Tensor, name: &str) -> String {
        let wt = self.weight_t(w);
        self.op("MatMul", &format!("{name}/MatMul"), &[x, &wt], vec![])
    }
}

/// One layer's attention projections, `(weight [out, in], bias)` each.
#[derive(Debug)]
pub struct AttentionWeights {
    /// Query.
    pub q: (Tensor, Tensor),
    /// Key.
    pub k: (Tensor, Tensor),
    /// Value.
    pub v: (Tensor, Tensor),
    /// Output projection.
    pub o: (Tensor, Tensor),
}

impl Graph {
    /// An INT32 initializer (a scalar when `dims` is empty).
    pub fn ints32(&mut self, name: &str, dims: &[usize], data: &[i32]) -> String {
        self.init(name, dims, DataType::Int32, data.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// `[S]`: the sequence length of a `[B, S]` input, as a 1-element INT64 tensor.
    pub fn seq_len(&mut self, input: &str) -> String {
        self.op("Shape", "sequence/Shape", &[input], vec![attr_int("start", 1), attr_int("end", 2)])
    }

    /// `x` (`[B, S, H]`) padded with zero rows from `len` (`S`, a 1-element
    /// INT64 tensor) to `padded_len`.
    pub fn pad_sequence(&mut self, x: &str, len: &str, padded_len: &str, name: &str) -> String {
        let extra = self.op("Sub", &format!("{name}/extra"), &[padded_len, len], vec![]);
        // Pads are [begin of each axis, end of each axis]: only the sequence's end grows.
        let (before, after) =
            (self.ints(&format!("{name}/pads_before"), &[4], &[0; 4]), self.ints(&format!("{name}/pads_after"), &[1], &[0]));
        let pads = self.op("Concat", &format!("{name}/pads"), &[&before, &extra, &after], vec![attr_int("axis", 0)]);
        self.op("Pad", &format!("{name}/Pad"), &[x, &pads], vec![])
    }

    /// `len` (a 1-element INT64 tensor) rounded up to a multiple of `m`.
    pub fn round_up(&mut self, len: &str, m: i64, name: &str) -> String {
        let (m1, m) = (self.ints(&format!("{name}/m_minus_1"), &[1], &[m - 1]), self.ints(&format!("{name}/m"), &[1], &[m]));
        let t = self.op("Add", &format!("{name}/Add"), &[len, &m1], vec![]);
        let q = self.op("Div", &format!("{name}/Div"), &[&t, &m], vec![]);
        self.op("Mul", &format!("{name}/Mul"), &[&q, &m], vec![])
    }

    /// The first `len` entries of `table` along each of `axes` (`len` a 1-element INT64 tensor).
    pub fn leading(&mut self, table: &str, len: &str, axes: &[i64], name: &str) -> String {
        let zeros = self.ints(&format!("{name}/starts"), &[axes.len()], &vec![0; axes.len()]);
        let ends = if axes.len() == 1 {
            len.to_string()
        } else {
            let parts: Vec<&str> = axes.iter().map(|_| len).collect();
            self.op("Concat", &format!("{name}/ends"), &parts, vec![attr_int("axis", 0)])
        };
        let axes = self.ints(&format!("{name}/axes"), &[axes.len()], axes);
        self.op("Slice", &format!("{name}/Slice"), &[table, &zeros, &ends, &axes], vec![])
    }
}

/// The normalisation a fused residual node applies.
#[derive(Debug, Clone, Copy)]
pub enum Norm<'a> {
    /// LayerNorm with its weight and, where the checkpoint has one, its bias.
    Layer(&'a Tensor, Option<&'a Tensor>),
    /// RMSNorm with its weight.
    Rms(&'a Tensor),
}

/// A rotary family's cosine and sine caches in ONNX Runtime's layout:
/// `[max_positions, head_dim / 2]`, one row per position.
#[derive(Debug, Clone)]
pub struct RotaryCache {
    /// `cos(position * inv_freq)`.
    pub cos: String,
    /// `sin(position * inv_freq)`.
    pub sin: String,
}

/// How a grouped-query attention layer attends.
#[derive(Debug, Clone, Copy)]
pub struct GroupQuery<'a> {
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (dividing `heads`).
    pub kv_heads: usize,
    /// Keys seen besides the query's own position, `None` for every earlier key.
    pub window: Option<usize>,
    /// The caches the node rotates Q and K with.
    pub rotary: &'a RotaryCache,
}

impl Graph {
    /// `norm(x + skip (+ bias))` as one SkipLayerNormalization (or, for
    /// RMSNorm, SkipSimplifiedLayerNormalization) node, and the sum itself
    /// when `keep_sum` (the residual stream of a pre-norm layer).
    #[allow(clippy::too_many_arguments)]
    pub fn skip_norm(
        &mut self,
        x: &str,
        skip: &str,
        norm: Norm<'_>,
        bias: Option<&Tensor>,
        eps: f32,
        keep_sum: bool,
        name: &str,
    ) -> (String, Option<String>) {
        let (op, gamma, beta) = match norm {
            Norm::Layer(w, b) => ("SkipLayerNormalization", self.weight(w), b.map(|b| self.weight(b))),
            Norm::Rms(w) => ("SkipSimplifiedLayerNormalization", self.weight(w), None),
        };
        let bias = bias.map(|b| self.weight(b));
        let mut inputs = vec![x, skip, gamma.as_str()];
        // SkipLayerNormalization's inputs are (x, skip, gamma, beta, bias); the
        // simplified one has no beta: (x, skip, gamma, bias).
        if op == "SkipLayerNormalization" {
            inputs.push(beta.as_deref().unwrap_or(""));
        }
        inputs.extend(bias.as_deref());
        while inputs.last() == Some(&"") {
            inputs.pop();
        }
        let outputs: &[Option<&str>] = if keep_sum { &[Some("out"), None, None, Some("sum")] } else { &[Some("out")] };
        let outs = self.node(Some(MS_DOMAIN), op, &format!("{name}/{op}"), &inputs, outputs, vec![attr_float("epsilon", eps)]);
        (outs[0].clone(), keep_sum.then(|| outs[3].clone()))
    }

    /// `x` (`[B, S, heads * head_dim]`, positions 0.. from each row's left)
    /// rotated as transformers' `rotate_half` rotary does, as one
    /// RotaryEmbedding node.
    pub fn rotary_embedding(&mut self, x: &str, cache: &RotaryCache, heads: usize, name: &str) -> String {
        // A 1-element position input is the first position of every row.
        let start = self.ints(&format!("{name}/first_position"), &[1], &[0]);
        self.ms_op(
            "RotaryEmbedding",
            &format!("{name}/RotaryEmbedding"),
            &[x, &start, &cache.cos, &cache.sin],
            vec![attr_int("num_heads", heads as i64)],
        )
    }

    /// Bidirectional attention of the projected (and rotated) `q`, `k`, `v`
    /// (`[B, S, heads * head_dim]`) as one MultiHeadAttention node, up to the
    /// output projection; `mask_index` is each row's length
    /// ([`Graph::mask_index`]), `bias` an additive `[1, 1, S, S]` score bias.
    #[allow(clippy::too_many_arguments)]
    pub fn multi_head_attention(
        &mut self,
        q: &str,
        k: &str,
        v: &str,
        heads: usize,
        mask_index: &str,
        bias: Option<&str>,
        name: &str,
    ) -> String {
        let mut inputs = vec![q, k, v, "", mask_index];
        inputs.extend(bias);
        self.ms_op("MultiHeadAttention", &format!("{name}/MultiHeadAttention"), &inputs, vec![attr_int("num_heads", heads as i64)])
    }

    /// Causal grouped-query attention of the projected `q`
    /// (`[B, S, heads * head_dim]`), `k` and `v` (`[B, S, kv_heads *
    /// head_dim]`), Q and K rotated inside, as one GroupQueryAttention node
    /// over right-padded rows: `[B, S, heads * head_dim]`.
    pub fn group_query_attention(&mut self, q: &str, k: &str, v: &str, a: GroupQuery<'_>, name: &str) -> String {
        let (seqlens, total) = self.gqa_lengths();
        // The window counts the query's own position: i - window < j <= i.
        let window = a.window.map_or(-1, |w| w as i64 + 1);
        let outs = self.node(
            Some(MS_DOMAIN),
            "GroupQueryAttention",
            &format!("{name}/GroupQueryAttention"),
            &[q, k, v, "", "", &seqlens, &total, &a.rotary.cos, &a.rotary.sin],
            &[Some("out"), Some("present_key"), Some("present_value")],
            vec![
                attr_int("num_heads", a.heads as i64),
                attr_int("kv_num_heads", a.kv_heads as i64),
                attr_int("do_rotary", 1),
                attr_int("local_window_size", window),
            ],
        );
        outs[0].clone()
    }

    /// GroupQueryAttention's length inputs, written once: each row's last
    /// position (`[B]` INT32, its length less one) and the padded length
    /// (an INT32 scalar).
    fn gqa_lengths(&mut self) -> (String, String) {
        if let Some(l) = self.gqa_lengths.clone() {
            return l;
        }
        let lengths = self.mask_index();
        let one = self.ints32("gqa/one", &[], &[1]);
        let last = self.op("Sub", "gqa/seqlens_k", &[&lengths, &one], vec![]);
        let len = self.seq_len("input_ids");
        let len = self.op("Cast", "gqa/total/Cast", &[&len], vec![attr_int("to", DataType::Int32 as i64)]);
        let axis = self.ints("gqa/total/axis", &[1], &[0]);
        let total = self.op("Squeeze", "gqa/total_sequence_length", &[&len, &axis], vec![]);
        self.gqa_lengths = Some((last.clone(), total.clone()));
        (last, total)
    }

    /// While the layers run packed ([`Graph::remove_padding`]): each of the
    /// `packed` (`[tokens, ...]`) tokens' position in its row, `[tokens, 1]`
    /// INT64, the position input of a RotaryEmbedding over packed tokens.
    /// RemovePadding's first `tokens` offsets are the real tokens' indices
    /// in the padded `[B * S]` layout, so a position is its offset modulo `S`.
    pub fn packed_positions(&mut self, packed: &str) -> String {
        let (offsets, _) = self.packing.clone().expect("packed positions follow remove_padding");
        let flat = self.ints("packed_positions/flat", &[1], &[-1]);
        let flat = self.op("Reshape", "packed_positions/Flatten", &[&offsets, &flat], vec![]);
        let tokens = self.op("Shape", "packed_positions/Tokens", &[packed], vec![attr_int("start", 0), attr_int("end", 1)]);
        let zero = self.ints("packed_positions/zero", &[1], &[0]);
        let real = self.op("Slice", "packed_positions/Real", &[&flat, &zero, &tokens], vec![]);
        let len = self.seq_len("input_ids");
        let len = self.op("Cast", "packed_positions/Length", &[&len], vec![attr_int("to", DataType::Int32 as i64)]);
        let pos = self.op("Mod", "packed_positions/Mod", &[&real, &len], vec![]);
        let pos = self.op("Cast", "packed_positions/Cast", &[&pos], vec![attr_int("to", DataType::Int64 as i64)]);
        let axis = self.ints("packed_positions/axis", &[1], &[1]);
        self.op("Unsqueeze", "packed_positions/Unsqueeze", &[&pos, &axis], vec![])
    }

    /// `x` (`[tokens, heads * head_dim]`, packed) rotated by one
    /// RotaryEmbedding node at `positions` ([`Graph::packed_positions`]).
    /// Each token is a batch row of one position: a sequence axis of all
    /// the tokens would be longer than the caches, which the node refuses.
    pub fn packed_rotary_embedding(&mut self, x: &str, cache: &RotaryCache, positions: &str, heads: usize, name: &str) -> String {
        let axis = self.ints(&format!("{name}/sequence_axis"), &[1], &[1]);
        let x = self.op("Unsqueeze", &format!("{name}/Unsqueeze"), &[x, &axis], vec![]);
        let y = self.ms_op(
            "RotaryEmbedding",
            &format!("{name}/RotaryEmbedding"),
            &[&x, positions, &cache.cos, &cache.sin],
            vec![attr_int("num_heads", heads as i64)],
        );
        self.op("Squeeze", &format!("{name}/Squeeze"), &[&y, &axis], vec![])
    }

    /// Bidirectional attention of packed `q`, `k`, `v` (`[tokens, heads *
    /// head_dim]`) as one PackedMultiHeadAttention node over the offsets
    /// [`Graph::remove_padding`] wrote.
    pub fn packed_multi_head_attention(&mut self, q: &str, k: &str, v: &str, heads: usize, name: &str) -> String {
        let (offsets, lengths) = self.packing.clone().expect("packed attention follows remove_padding");
        self.ms_op(
            "PackedMultiHeadAttention",
            &format!("{name}/PackedMultiHeadAttention"),
            &[q, k, v, "", &offsets, &lengths],
            vec![attr_int("num_heads", heads as i64)],
        )
    }

    /// `x * w / sqrt(mean(x²) + eps)` over the last axis as one
    /// SimplifiedLayerNormalization node (ONNX Runtime's RMSNorm; its
    /// statistics are FP32 inside at any precision).
    pub fn simplified_layer_norm(&mut self, x: &str, w: &Tensor, eps: f32, name: &str) -> String {
        let w = self.weight(w);
        self.op(
            "SimplifiedLayerNormalization",
            &format!("{name}/SimplifiedLayerNormalization"),
            &[x, &w],
            vec![attr_int("axis", -1), attr_float("epsilon", eps)],
        )
    }
}
