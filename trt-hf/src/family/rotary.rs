//! The blocks the rotary families (ModernBERT, NomicBERT, GTE, the
//! decoders) are made of, written once, in standard operators and, where a
//! block has one, in ONNX Runtime's fused operators: RMSNorm, rotary
//! position tables and their application, the attention masks (padding,
//! causal, sliding window), grouped-query attention and the gated
//! feed-forward.
//!
//! | block | what | precision in an FP16 model |
//! |---|---|---|
//! | [`rms_norm`] | `x / sqrt(mean(x²) + eps) * w` (opset 17 has no RMSNormalization) | FP32, as transformers computes it |
//! | [`rope`] | `cos` and signed `sin` tables `[max_positions, head_dim]`, computed here in FP32 and sliced to the sequence | the tables follow their consumers |
//! | [`attention_bias`] | the additive `[B, 1, 1, S, S]` bias: padding, and causal, a band of half-width `window`, or both | follows its inputs |
//! | [`attention`] | grouped-query attention with rotary Q and K, optional per-head RMSNorm of Q and K | Softmax FP32 |
//! | [`gated_mlp`] | `out(act(a(x)) * b(x))`, `out` with or without a bias | follows its inputs |
//! | [`cache`] | the same angles as `cos` and `sin` caches `[max_positions, head_dim / 2]`, ONNX Runtime's layout | follow their consumers |
//! | [`pattern_bias`] | the `[1, 1, S, S]` bias of a pattern alone (the fused attention takes each row's length) | follows its inputs |
//! | [`Positions`] | an encoder layer's rotation and mask: standard operators, RotaryEmbedding + MultiHeadAttention, or their packed forms | the fused attention FP16 |
//! | [`pre_norm`] | `norm(x + pending)` keeping the sum: one Skip(Simplified)LayerNormalization when fused | follows its inputs (statistics FP32 inside) |
//!
//! Grouped-query attention is written without copying K and V per query
//! head: Q is laid out `[B, kv_heads, group, S, head_dim]` and K, V
//! `[B, kv_heads, 1, S, head_dim]`, so the MatMuls broadcast each key/value
//! head over its group (query head h reads key/value head h / group, as
//! transformers' `repeat_kv`).
//!
//! Positions are 0..n-1 from the left of each row, which the right padding
//! of this project's pipeline keeps; rotary scores depend only on i - j, so
//! a left-padded reference computes the same numbers for the real tokens.

use crate::graph::{attr_int, attr_ints, Graph, Norm, RotaryCache, MASK_BIAS};
use crate::weights::Tensor;

/// `x * w / sqrt(mean(x², last axis) + eps)`, all of it FP32.
pub fn rms_norm(g: &mut Graph, x: &str, w: &Tensor, eps: f32, name: &str) -> String {
    let w = g.weight(w);
    g.in_fp32(|g| {
        let sq = g.op("Mul", &format!("{name}/rms/Square"), &[x, x], vec![]);
        let mean = g.op("ReduceMean", &format!("{name}/rms/ReduceMean"), &[&sq], vec![attr_ints("axes", &[-1]), attr_int("keepdims", 1)]);
        let eps = g.scalar(eps);
        let var = g.op("Add", &format!("{name}/rms/AddEps"), &[&mean, &eps], vec![]);
        let root = g.op("Sqrt", &format!("{name}/rms/Sqrt"), &[&var], vec![]);
        let y = g.op("Div", &format!("{name}/rms/Div"), &[x, &root], vec![]);
        g.op("Mul", &format!("{name}/rms/Weight"), &[&y, &w], vec![])
    })
}

/// LayerNorm with weight and no bias (ModernBERT's `norm_bias: false`).
pub fn layer_norm_no_bias(g: &mut Graph, x: &str, w: &Tensor, eps: f32, name: &str) -> String {
    let zero = Tensor { name: format!("{}.zero_bias", w.name), shape: w.shape.clone(), data: vec![0.0; w.data.len()] };
    g.layer_norm(x, w, &zero, eps, name)
}

/// The `[S, head_dim]` rotary tables of one `theta`, sliced to the sequence.
#[derive(Debug, Clone)]
pub struct Rope {
    cos: String,
    /// `sin`, negated on the first half, so that `rotate_half(x) * sin` is
    /// `swap_halves(x) * sin_signed` (no negation in the graph).
    sin_signed: String,
    half: usize,
}

/// The tables for positions 0..`max_positions` (transformers' default rope:
/// `inv_freq = 1 / theta^(2i / head_dim)`, angles `position * inv_freq` in
/// FP32, each angle used for both halves of the head).
pub fn rope(g: &mut Graph, theta: f64, head_dim: usize, max_positions: usize, name: &str) -> Rope {
    let half = head_dim / 2;
    let angles = angles(theta, head_dim, max_positions);
    let mut cos = Vec::with_capacity(max_positions * head_dim);
    let mut sin = Vec::with_capacity(max_positions * head_dim);
    for row in angles.chunks(half) {
        for i in 0..head_dim {
            let angle = row[i % half];
            cos.push(angle.cos() as f32);
            sin.push(if i < half { -angle.sin() as f32 } else { angle.sin() as f32 });
        }
    }
    let cos = g.floats(&format!("{name}/cos_table"), &[max_positions, head_dim], &cos);
    let sin = g.floats(&format!("{name}/sin_table"), &[max_positions, head_dim], &sin);
    let len = g.seq_len("input_ids");
    Rope { cos: g.leading(&cos, &len, &[0], &format!("{name}/cos")), sin_signed: g.leading(&sin, &len, &[0], &format!("{name}/sin")), half }
}

/// The angles `position * inv_freq[i]`, `[max_positions, head_dim / 2]`,
/// each rounded to FP32 as torch's product rounds it.
fn angles(theta: f64, head_dim: usize, max_positions: usize) -> Vec<f64> {
    let half = head_dim / 2;
    let inv_freq: Vec<f32> = (0..half).map(|i| (1.0 / theta.powf((2 * i) as f64 / head_dim as f64)) as f32).collect();
    (0..max_positions).flat_map(|p| inv_freq.iter().map(move |&f| f64::from(p as f32 * f))).collect()
}

/// The same rotation as [`rope`] in ONNX Runtime's layout, for its
/// RotaryEmbedding and GroupQueryAttention nodes: `cos` and `sin` of the
/// angles, `[max_positions, head_dim / 2]` (the node uses each angle for
/// both halves and signs the sine itself).
pub fn cache(g: &mut Graph, theta: f64, head_dim: usize, max_positions: usize, name: &str) -> RotaryCache {
    let angles = angles(theta, head_dim, max_positions);
    let cos: Vec<f32> = angles.iter().map(|a| a.cos() as f32).collect();
    let sin: Vec<f32> = angles.iter().map(|a| a.sin() as f32).collect();
    RotaryCache {
        cos: g.floats(&format!("{name}/cos_cache"), &[max_positions, head_dim / 2], &cos),
        sin: g.floats(&format!("{name}/sin_cache"), &[max_positions, head_dim / 2], &sin),
    }
}

impl Rope {
    /// `x * cos + rotate_half(x) * sin` for `x` of shape `[..., S, head_dim]`.
    pub fn apply(&self, g: &mut Graph, x: &str, name: &str) -> String {
        let h = self.half as i64;
        let axes = g.ints(&format!("{name}/rope/axes"), &[1], &[-1]);
        let (zero, mid, end) = (
            g.ints(&format!("{name}/rope/zero"), &[1], &[0]),
            g.ints(&format!("{name}/rope/half"), &[1], &[h]),
            g.ints(&format!("{name}/rope/end"), &[1], &[2 * h]),
        );
        let first = g.op("Slice", &format!("{name}/rope/First"), &[x, &zero, &mid, &axes], vec![]);
        let second = g.op("Slice", &format!("{name}/rope/Second"), &[x, &mid, &end, &axes], vec![]);
        let swapped = g.op("Concat", &format!("{name}/rope/Swap"), &[&second, &first], vec![attr_int("axis", -1)]);
        let a = g.op("Mul", &format!("{name}/rope/MulCos"), &[x, &self.cos], vec![]);
        let b = g.op("Mul", &format!("{name}/rope/MulSin"), &[&swapped, &self.sin_signed], vec![]);
        g.op("Add", &format!("{name}/rope/Add"), &[&a, &b], vec![])
    }
}

/// Which keys a query may see besides the padding rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Every key that is not padding.
    Full,
    /// Keys j <= i (decoders).
    Causal,
    /// Keys with |i - j| <= this (ModernBERT's local layers).
    Window(usize),
    /// Keys with 0 <= i - j <= this (decoders' sliding layers).
    CausalWindow(usize),
}

/// The additive score bias `[B, 1, 1, S, S]` (`[B, 1, 1, 1, S]` for
/// [`Pattern::Full`]): 0 where query i may see key j, [`MASK_BIAS`] elsewhere.
pub fn attention_bias(g: &mut Graph, pattern: Pattern, max_positions: usize, name: &str) -> String {
    let mask = g.op("Cast", &format!("{name}/mask/Cast"), &["attention_mask"], vec![attr_int("to", 1)]);
    let axes = g.ints(&format!("{name}/mask/axes"), &[3], &[1, 2, 3]);
    let mut allowed = g.op("Unsqueeze", &format!("{name}/mask/Unsqueeze"), &[&mask, &axes], vec![]);
    if let Some(hidden) = hidden_pairs(g, pattern, max_positions, name) {
        let seen = g.op("Not", &format!("{name}/Not"), &[&hidden], vec![]);
        let seen = g.op("Cast", &format!("{name}/Cast"), &[&seen], vec![attr_int("to", 1)]);
        allowed = g.op("Mul", &format!("{name}/Combine"), &[&allowed, &seen], vec![]);
    }
    let one = g.scalar(1.0);
    let hidden = g.op("Sub", &format!("{name}/Sub"), &[&one, &allowed], vec![]);
    let bias = g.scalar(MASK_BIAS);
    g.op("Mul", &format!("{name}/Mul"), &[&hidden, &bias], vec![])
}

/// The additive `[1, 1, S, S]` bias of `pattern` alone (no padding: the fused
/// attention takes each row's length instead), or `None` for [`Pattern::Full`].
pub fn pattern_bias(g: &mut Graph, pattern: Pattern, max_positions: usize, name: &str) -> Option<String> {
    let hidden = hidden_pairs(g, pattern, max_positions, name)?;
    let hidden = g.op("Cast", &format!("{name}/Cast"), &[&hidden], vec![attr_int("to", 1)]);
    let bias = g.scalar(MASK_BIAS);
    let bias = g.op("Mul", &format!("{name}/Mul"), &[&hidden, &bias], vec![]);
    let axes = g.ints(&format!("{name}/axes"), &[2], &[0, 1]);
    Some(g.op("Unsqueeze", &format!("{name}/Unsqueeze"), &[&bias, &axes], vec![]))
}

/// `[S, S]` BOOL: true where `pattern` hides key j from query i (padding
/// aside); `None` when it hides nothing.
fn hidden_pairs(g: &mut Graph, pattern: Pattern, max_positions: usize, name: &str) -> Option<String> {
    let (causal, window) = match pattern {
        Pattern::Full => return None,
        Pattern::Causal => (true, None),
        Pattern::Window(w) => (false, Some(w)),
        Pattern::CausalWindow(w) => (true, Some(w)),
    };
    let table: Vec<f32> = (0..max_positions).map(|p| p as f32).collect();
    let table = g.floats(&format!("{name}/positions"), &[max_positions], &table);
    let len = g.seq_len("input_ids");
    let p = g.leading(&table, &len, &[0], &format!("{name}/positions"));
    let (ax0, ax1) = (g.ints(&format!("{name}/axis0"), &[1], &[0]), g.ints(&format!("{name}/axis1"), &[1], &[1]));
    let i = g.op("Unsqueeze", &format!("{name}/query"), &[&p, &ax1], vec![]);
    let j = g.op("Unsqueeze", &format!("{name}/key"), &[&p, &ax0], vec![]);
    let later = causal.then(|| g.op("Greater", &format!("{name}/causal/Greater"), &[&j, &i], vec![]));
    let Some(w) = window else { return later };
    let d = g.op("Sub", &format!("{name}/window/Sub"), &[&i, &j], vec![]);
    let d = g.op("Abs", &format!("{name}/window/Abs"), &[&d], vec![]);
    let w = g.scalar(w as f32);
    let far = g.op("Greater", &format!("{name}/window/Greater"), &[&d, &w], vec![]);
    Some(match later {
        Some(later) => g.op("Or", &format!("{name}/Or"), &[&later, &far], vec![]),
        None => far,
    })
}

/// Head counts of an attention layer.
#[derive(Debug, Clone, Copy)]
pub struct Heads {
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (dividing `heads`).
    pub kv_heads: usize,
    /// Per-head size.
    pub head_dim: usize,
}

/// Per-head RMSNorm of Q and K before the rotation (Qwen3's `q_norm`, `k_norm`).
#[derive(Debug, Clone, Copy)]
pub struct QkNorm<'a> {
    /// `q_norm.weight`, `[head_dim]`.
    pub q: &'a Tensor,
    /// `k_norm.weight`, `[head_dim]`.
    pub k: &'a Tensor,
    /// Epsilon.
    pub eps: f32,
}

/// Attention over the projected `q` (`[B, S, heads * head_dim]`), `k` and
/// `v` (`[B, S, kv_heads * head_dim]`), up to the output projection:
/// `[B, S, heads * head_dim]`. Scores are scaled by `head_dim^-0.5` through
/// Q (after the rotation), then `bias` ([`attention_bias`]) is added.
#[allow(clippy::too_many_arguments)]
pub fn attention(
    g: &mut Graph,
    q: &str,
    k: &str,
    v: &str,
    h: Heads,
    norm: Option<QkNorm<'_>>,
    rope: &Rope,
    bias: &str,
    name: &str,
) -> String {
    let (kv, group, d) = (h.kv_heads as i64, (h.heads / h.kv_heads) as i64, h.head_dim as i64);
    let q_shape = g.ints(&format!("{name}/q/shape"), &[5], &[0, 0, kv, group, d]);
    let kv_shape = g.ints(&format!("{name}/kv/shape"), &[5], &[0, 0, kv, 1, d]);
    let heads_first = [0, 2, 3, 1, 4];
    let split = |g: &mut Graph, x: &str, shape: &str, norm: Option<(&Tensor, f32)>, what: &str| {
        let y = g.op("Reshape", &format!("{name}/{what}/Reshape"), &[x, shape], vec![]);
        let y = match norm {
            Some((w, eps)) => rms_norm(g, &y, w, eps, &format!("{name}/{what}_norm")),
            None => y,
        };
        g.op("Transpose", &format!("{name}/{what}/Transpose"), &[&y], vec![attr_ints("perm", &heads_first)])
    };
    let q = split(g, q, &q_shape, norm.map(|n| (n.q, n.eps)), "q");
    let k = split(g, k, &kv_shape, norm.map(|n| (n.k, n.eps)), "k");
    let v = split(g, v, &kv_shape, None, "v");
    let q = rope.apply(g, &q, &format!("{name}/q"));
    let k = rope.apply(g, &k, &format!("{name}/k"));
    let scale = g.scalar((1.0 / (h.head_dim as f64).sqrt()) as f32);
    let q = g.op("Mul", &format!("{name}/q/Scale"), &[&q, &scale], vec![]);
    let kt = g.op("Transpose", &format!("{name}/k/TransposeLast"), &[&k], vec![attr_ints("perm", &[0, 1, 2, 4, 3])]);
    let scores = g.op("MatMul", &format!("{name}/scores/MatMul"), &[&q, &kt], vec![]);
    let scores = g.op("Add", &format!("{name}/scores/AddMask"), &[&scores, bias], vec![]);
    let probs = g.op("Softmax", &format!("{name}/Softmax"), &[&scores], vec![attr_int("axis", -1)]);
    let ctx = g.op("MatMul", &format!("{name}/context/MatMul"), &[&probs, &v], vec![]);
    let ctx = g.op("Transpose", &format!("{name}/context/Transpose"), &[&ctx], vec![attr_ints("perm", &[0, 3, 1, 2, 4])]);
    let merge = g.ints(&format!("{name}/merge_heads"), &[3], &[0, 0, h.heads as i64 * d]);
    g.op("Reshape", &format!("{name}/context/Reshape"), &[&ctx, &merge], vec![])
}

/// How a bidirectional encoder's attention layer places its tokens: the
/// rotation, and which keys each query sees.
#[derive(Debug, Clone)]
pub enum Positions {
    /// Standard operators: [`rope`]'s tables and an [`attention_bias`].
    Plain {
        /// The rotation.
        rope: Rope,
        /// Padding and pattern as one additive bias.
        bias: String,
    },
    /// ONNX Runtime's fused operators: Q and K rotated by RotaryEmbedding
    /// nodes ([`cache`]), one MultiHeadAttention over each row's length
    /// ([`Graph::mask_index`]), a sliding layer's band as its score bias
    /// ([`pattern_bias`]).
    Fused {
        /// The rotation.
        cache: RotaryCache,
        /// Each row's length.
        lengths: String,
        /// The pattern's bias, if it hides any key.
        bias: Option<String>,
    },
    /// The fused operators over packed tokens (bidirectional, no pattern):
    /// Q and K rotated at each token's position in its row
    /// ([`Graph::packed_positions`]), one PackedMultiHeadAttention.
    Packed {
        /// The rotation.
        cache: RotaryCache,
        /// Each packed token's position, `[tokens, 1]`.
        positions: String,
    },
}

impl Positions {
    /// The positions of `pattern` in the graph's form.
    pub fn new(
        g: &mut Graph,
        theta: f64,
        head_dim: usize,
        max_positions: usize,
        pattern: Pattern,
        lengths: Option<&str>,
        name: &str,
    ) -> Self {
        match lengths {
            Some(lengths) => Positions::Fused {
                cache: cache(g, theta, head_dim, max_positions, &format!("rope/{name}")),
                lengths: lengths.to_string(),
                bias: pattern_bias(g, pattern, max_positions, &format!("{name}_mask")),
            },
            None => Positions::Plain {
                rope: rope(g, theta, head_dim, max_positions, &format!("rope/{name}")),
                bias: attention_bias(g, pattern, max_positions, &format!("{name}_mask")),
            },
        }
    }

    /// The positions of full attention over the packed tokens `packed`
    /// ([`Graph::remove_padding`]'s output).
    pub fn packed(g: &mut Graph, theta: f64, head_dim: usize, max_positions: usize, packed: &str) -> Self {
        Positions::Packed { cache: cache(g, theta, head_dim, max_positions, "rope/global"), positions: g.packed_positions(packed) }
    }

    /// Attention over the projected `q`, `k`, `v`, up to the output projection.
    pub fn attention(&self, g: &mut Graph, q: &str, k: &str, v: &str, h: Heads, name: &str) -> String {
        match self {
            Positions::Plain { rope, bias } => attention(g, q, k, v, h, None, rope, bias, name),
            Positions::Fused { cache, lengths, bias } => {
                let q = g.rotary_embedding(q, cache, h.heads, &format!("{name}/q"));
                let k = g.rotary_embedding(k, cache, h.heads, &format!("{name}/k"));
                g.multi_head_attention(&q, &k, v, h.heads, lengths, bias.as_deref(), name)
            }
            Positions::Packed { cache, positions } => {
                let q = g.packed_rotary_embedding(q, cache, positions, h.heads, &format!("{name}/q"));
                let k = g.packed_rotary_embedding(k, cache, positions, h.heads, &format!("{name}/k"));
                g.packed_multi_head_attention(&q, &k, v, h.heads, name)
            }
        }
    }
}

/// The input of a pre-norm block, `norm(x + pending)`, where `pending` is
/// the previous block's output not yet added to the residual stream `x`;
/// `x` becomes the sum. In the fused form the addition and the norm are one
/// SkipLayerNormalization / SkipSimplifiedLayerNormalization node.
pub fn pre_norm(g: &mut Graph, x: &mut String, pending: Option<String>, norm: Norm<'_>, eps: f32, name: &str) -> String {
    match pending {
        Some(p) if g.is_fused() => {
            let (y, sum) = g.skip_norm(&p, x, norm, None, eps, true, name);
            *x = sum.expect("the sum was asked for");
            return y;
        }
        Some(p) => *x = g.op("Add", &format!("{name}/Residual"), &[x, &p], vec![]),
        None => {}
    }
    match norm {
        Norm::Rms(w) if g.is_fused() => g.simplified_layer_norm(x, w, eps, name),
        Norm::Rms(w) => rms_norm(g, x, w, eps, name),
        Norm::Layer(w, Some(b)) => g.layer_norm(x, w, b, eps, name),
        Norm::Layer(w, None) => layer_norm_no_bias(g, x, w, eps, name),
    }
}

/// `out(act(a(x)) * b(x)) (+ out_bias)`: Qwen3's `down(silu(gate(x)) * up(x))`,
/// ModernBERT's `Wo(gelu(input) * gate)`, GTE's `down(gelu(gate(x)) * up(x)) + b`.
#[allow(clippy::too_many_arguments)]
pub fn gated_mlp(
    g: &mut Graph,
    x: &str,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    out_bias: Option<&Tensor>,
    act: crate::arch::Activation,
    name: &str,
) -> String {
    let ya = g.linear(x, a, None, &format!("{name}/act_in"));
    let ya = g.activation(&ya, act, &format!("{name}/act"));
    let yb = g.linear(x, b, None, &format!("{name}/mul_in"));
    let y = g.op("Mul", &format!("{name}/Gate"), &[&ya, &yb], vec![]);
    g.linear(&y, out, out_bias, &format!("{name}/out"))
}

/// Rows `range` of a 2-D tensor, or elements of a 1-D one (a fused projection's part).
pub fn rows(t: &Tensor, range: std::ops::Range<usize>) -> Tensor {
    let cols = t.shape.get(1).copied().unwrap_or(1);
    Tensor {
        name: format!("{}[{}..{}]", t.name, range.start, range.end),
        shape: if t.shape.len() == 1 { vec![range.len()] } else { vec![range.len(), cols] },
        data: t.data[range.start * cols..range.end * cols].to_vec(),
    }
}
