//! `config.json` of the rotary families (ModernBERT, NomicBERT, GTE and the
//! decoders: Qwen3, Qwen2, Mistral): their
//! dimensions in [`ArchConfig`]'s shape and their rotary settings in
//! [`Rotary`], from either form a config takes.
//!
//! | setting | transformers 5 writes | hub configs hold |
//! |---|---|---|
//! | theta | `rope_parameters.rope_theta`, or per layer type (`rope_parameters.full_attention.rope_theta`) | `rope_theta`; ModernBERT: `global_rope_theta`, `local_rope_theta`; NomicBERT: `rotary_emb_base` |
//! | dimensions | `hidden_size`, `num_attention_heads`, `num_hidden_layers`, `intermediate_size`, `max_position_embeddings`, `layer_norm_eps`, `hidden_act` | NomicBERT (nomic-embed-text-v1.5): `n_embd`, `n_head`, `n_layer`, `n_inner`, `n_positions`, `layer_norm_epsilon`, `activation_function` (`swiglu`) |
//! | switches of the remote code | - | NomicBERT: `qkv_proj_bias`, `mlp_fc1_bias`, `mlp_fc2_bias`, `prenorm`, `parallel_block`, `use_rms_norm`, `causal`, `rotary_emb_fraction` (1.0), `rotary_emb_interleaved`, `rotary_scaling_factor`; GTE: `pack_qkv`, `logn_attention_scale`, `layer_norm_type`, `position_embedding_type` (`rope`) |
//! | which layers slide | `layer_types` (`full_attention` / `sliding_attention`) | ModernBERT: `global_attn_every_n_layers` (layer i is global iff i % n == 0); Qwen2: layers i >= `max_window_layers` when `use_sliding_window`; Mistral: every layer when `sliding_window` is set (absent: 4096, as transformers defaults it) |
//! | window | ModernBERT: `local_attention` (half of it either side) | decoders: `sliding_window` (the key j of query i is seen iff i - sliding_window < j <= i) |
//! | scaling | `rope_parameters.rope_type` | `rope_scaling` |
//!
//! What the graph does not compute is refused by name (rope scaling other
//! than `default`, biases the family does not have, Qwen3's sliding window),
//! never imported wrong. Qwen2's q/k/v biases and Mistral's lack of any are
//! fixed by their modeling code, not by a config field.

use crate::arch::{Activation, ArchConfig, Family, Rotary, Task, MAX_DIM, MAX_LAYERS};
use crate::json::Fields;
use crate::{Error, Result};

/// The rotary family `family`'s config in `f`.
pub(crate) fn read(
    f: &Fields,
    family: Family,
    model_type: String,
    architecture: Option<String>,
    task: Task,
    labels: Vec<String>,
    problem_type: Option<String>,
) -> Result<ArchConfig> {
    // NomicBERT's hub configs (nomic-embed-text-v1.5) use GPT-2's names; transformers' its own.
    let name = |native: &'static str, hub: &'static str| {
        if family == Family::NomicBert && f.value(native).is_none() && f.value(hub).is_some() {
            hub
        } else {
            native
        }
    };
    let hidden = f.count(name("hidden_size", "n_embd"), MAX_DIM)?;
    let heads = f.count(name("num_attention_heads", "n_head"), MAX_DIM)?;
    let layers = f.count(name("num_hidden_layers", "n_layer"), MAX_LAYERS)?;
    let kv_heads = match f.opt_usize("num_key_value_heads")? {
        Some(_) => f.count("num_key_value_heads", MAX_DIM)?,
        None => heads,
    };
    if heads % kv_heads != 0 {
        return Err(f.error("num_key_value_heads", format!("{kv_heads} key/value heads do not divide the {heads} query heads")));
    }
    let head_size = match f.opt_usize("head_dim")? {
        Some(_) => f.count("head_dim", MAX_DIM)?,
        None if hidden % heads == 0 => hidden / heads,
        None => return Err(f.error("num_attention_heads", format!("{heads} heads do not divide the hidden size {hidden}"))),
    };
    // ModernBERT's fused Wqkv holds three hidden-sized blocks: its heads must tile the hidden size.
    if family == Family::ModernBert && heads * head_size != hidden {
        return Err(f.error("head_dim", format!("{heads} heads of {head_size} do not make the hidden size {hidden}")));
    }
    if head_size % 2 != 0 {
        return Err(f.error("head_dim", format!("{head_size}: rotary positions rotate pairs of a head's values, so it must be even")));
    }
    let (act_field, default_act, eps_field, default_eps) = match family {
        Family::ModernBert => ("hidden_activation", Activation::Gelu, "norm_eps", 1e-5),
        Family::NomicBert => {
            (name("hidden_act", "activation_function"), Activation::Silu, name("layer_norm_eps", "layer_norm_epsilon"), 1e-12)
        }
        Family::Gte => ("hidden_act", Activation::Gelu, "layer_norm_eps", 1e-12),
        _ => ("hidden_act", Activation::Silu, "rms_norm_eps", 1e-6),
    };
    let act = match f.opt_str(act_field)? {
        // The hub's NomicBERT names the gated unit: SwiGLU is SiLU on the gate, GeGLU GELU.
        Some("swiglu") if act_field == "activation_function" => Activation::Silu,
        Some("geglu") if act_field == "activation_function" => Activation::Gelu,
        Some(a) => Activation::named(a, f.path(), act_field)?,
        None => default_act,
    };
    if matches!(family, Family::NomicBert | Family::Gte) {
        check_encoder_flags(f)?;
    }
    let bias_fields: &[&str] = match family {
        Family::ModernBert => &["attention_bias", "mlp_bias", "norm_bias"],
        Family::Qwen3 => &["attention_bias", "mlp_bias"],
        Family::NomicBert => &["qkv_proj_bias", "mlp_fc1_bias", "mlp_fc2_bias"],
        _ => &[],
    };
    for field in bias_fields {
        if f.opt_bool(field)? == Some(true) {
            return Err(unsupported(f, format!("{field} true"), &[&format!("{field} false (no biases)")]));
        }
    }
    let rotary = match family {
        Family::ModernBert => modernbert_rotary(f, layers)?,
        Family::NomicBert | Family::Gte => {
            let theta = theta(f, if family == Family::NomicBert { 1000.0 } else { 160000.0 })?;
            Rotary { theta, local_theta: theta, sliding: vec![false; layers], window: 0, causal: false }
        }
        _ => decoder_rotary(f, family, layers)?,
    };
    for t in [rotary.theta, rotary.local_theta] {
        if t <= 1.0 {
            return Err(f.error("rope_theta", format!("{t}: a rotary base must be above 1")));
        }
    }
    Ok(ArchConfig {
        model_type,
        family,
        architecture,
        task,
        vocab_size: f.count("vocab_size", 1 << 24)?,
        hidden,
        embedding_size: hidden,
        layers,
        heads,
        intermediate: f.count(name("intermediate_size", "n_inner"), MAX_DIM)?,
        max_positions: f.count(name("max_position_embeddings", "n_positions"), MAX_DIM)?,
        type_vocab_size: match family {
            Family::NomicBert => f.opt_usize("type_vocab_size")?.unwrap_or(2).min(MAX_DIM),
            Family::Gte => f.opt_usize("type_vocab_size")?.unwrap_or(1).min(MAX_DIM),
            _ => 0,
        },
        layer_norm_eps: f.opt_f64(eps_field)?.unwrap_or(default_eps) as f32,
        act,
        pad_token_id: f.opt_usize("pad_token_id")?.unwrap_or(0),
        relative_buckets: 0,
        labels,
        problem_type,
        kv_heads,
        head_size,
        rotary: Some(rotary),
    })
}

fn unsupported(f: &Fields, what: String, supported: &[&str]) -> Error {
    Error::Unsupported { path: f.path().to_owned(), what, supported: supported.iter().map(|s| s.to_string()).collect() }
}

/// `theta` and the rope type of one `rope_parameters` object (or the
/// config itself, for the top-level fields); `None` when it names no theta.
fn rope_object(f: &Fields, prefix: &str) -> Result<Option<f64>> {
    if let Some(t) = f.opt_str("rope_type")?.or(f.opt_str("type")?) {
        if t != "default" {
            return Err(unsupported(f, format!("{prefix}rope_type '{t}'"), &["default (no rope scaling)"]));
        }
    }
    f.opt_f64("rope_theta")
}

/// `rope_scaling` (the older name of the scaling settings): absent, null or default only.
fn check_rope_scaling(f: &Fields) -> Result<()> {
    if let Some(s) = f.object("rope_scaling")? {
        rope_object(&s, "rope_scaling.")?;
    }
    Ok(())
}

/// `layer_types`, when given: whether each layer slides.
fn layer_types(f: &Fields, layers: usize, allowed: &[&str]) -> Result<Option<Vec<bool>>> {
    let Some(types) = f.opt_strings("layer_types")? else { return Ok(None) };
    if types.len() != layers {
        return Err(f.error("layer_types", format!("{} entries for {layers} layers", types.len())));
    }
    types
        .iter()
        .map(|t| match t.as_str() {
            t if !allowed.contains(&t) => Err(unsupported(f, format!("layer_types entry '{t}'"), allowed)),
            "sliding_attention" => Ok(true),
            _ => Ok(false),
        })
        .collect::<Result<Vec<bool>>>()
        .map(Some)
}

/// The one rotary theta of a family without sliding layers of their own
/// theta: `rope_parameters.rope_theta`, else `rope_theta`, else NomicBERT's
/// `rotary_emb_base`, else `default`; rope scaling refused.
fn theta(f: &Fields, default: f64) -> Result<f64> {
    check_rope_scaling(f)?;
    let nested = match f.object("rope_parameters")? {
        Some(p) => rope_object(&p, "rope_parameters.")?,
        None => None,
    };
    Ok(match nested {
        Some(t) => t,
        None => f.opt_f64("rope_theta")?.or(f.opt_f64("rotary_emb_base")?).unwrap_or(default),
    })
}

/// The hub configs' switches of NomicBERT's and GTE's remote code that
/// change what they compute: each must say what the graph computes.
fn check_encoder_flags(f: &Fields) -> Result<()> {
    for (field, want) in [
        ("prenorm", false),
        ("parallel_block", false),
        ("use_rms_norm", false),
        ("causal", false),
        ("rotary_emb_interleaved", false),
        ("logn_attention_scale", false),
        ("pack_qkv", true),
    ] {
        if f.opt_bool(field)?.is_some_and(|v| v != want) {
            return Err(unsupported(f, format!("{field} {}", !want), &[&format!("{field} {want}")]));
        }
    }
    if let Some(fraction) = f.opt_f64("rotary_emb_fraction")? {
        if fraction != 1.0 {
            return Err(unsupported(f, format!("rotary_emb_fraction {fraction}"), &["rotary_emb_fraction 1.0 (every dimension rotated)"]));
        }
    }
    for field in ["rotary_scaling_factor", "rotary_emb_scale_base"] {
        if let Some(v) = f.value(field) {
            return Err(unsupported(f, format!("{field} {v}"), &[&format!("{field} null (no rope scaling)")]));
        }
    }
    for (field, want) in [("layer_norm_type", "layer_norm"), ("position_embedding_type", "rope")] {
        if let Some(v) = f.opt_str(field)?.filter(|v| *v != want) {
            return Err(unsupported(f, format!("{field} '{v}'"), &[want]));
        }
    }
    Ok(())
}

/// A decoder's rotary theta and sliding layers.
fn decoder_rotary(f: &Fields, family: Family, layers: usize) -> Result<Rotary> {
    let theta = theta(f, 10000.0)?;
    let (sliding, window) = match family {
        Family::Qwen2 => qwen2_sliding(f, layers)?,
        Family::Mistral => match mistral_window(f)? {
            Some(w) => (vec![true; layers], w),
            None => (vec![false; layers], 0),
        },
        _ => {
            if f.opt_bool("use_sliding_window")? == Some(true) {
                return Err(unsupported(f, "use_sliding_window true".into(), &["use_sliding_window false (full causal attention)"]));
            }
            layer_types(f, layers, &["full_attention"])?;
            (vec![false; layers], 0)
        }
    };
    Ok(Rotary { theta, local_theta: theta, sliding, window, causal: true })
}

/// `sliding_window` as the largest distance i - j a sliding layer sees
/// (`sliding_window - 1`), when given.
fn window_field(f: &Fields) -> Result<Option<usize>> {
    match f.opt_usize("sliding_window")? {
        Some(_) => Ok(Some(f.count("sliding_window", MAX_DIM)? - 1)),
        None => Ok(None),
    }
}

/// Mistral: `sliding_window` applies to every layer; absent, transformers' default 4096; null, none.
fn mistral_window(f: &Fields) -> Result<Option<usize>> {
    if !f.map().contains_key("sliding_window") {
        return Ok(Some(4096 - 1));
    }
    window_field(f)
}

/// Qwen2: the window applies only with `use_sliding_window`, to the layers
/// `layer_types` names, else to layers from `max_window_layers` on.
fn qwen2_sliding(f: &Fields, layers: usize) -> Result<(Vec<bool>, usize)> {
    let window = if f.opt_bool("use_sliding_window")?.unwrap_or(false) { window_field(f)? } else { None };
    let sliding = match layer_types(f, layers, &["full_attention", "sliding_attention"])? {
        Some(s) => s,
        None => {
            let from = if window.is_some() { f.opt_usize("max_window_layers")?.unwrap_or(28) } else { layers };
            (0..layers).map(|i| i >= from).collect()
        }
    };
    match window {
        Some(w) => Ok((sliding, w)),
        None if sliding.contains(&true) => {
            Err(f.error("layer_types", "sliding_attention layers need use_sliding_window true and a sliding_window"))
        }
        None => Ok((sliding, 0)),
    }
}

fn modernbert_rotary(f: &Fields, layers: usize) -> Result<Rotary> {
    check_rope_scaling(f)?;
    let sliding = match layer_types(f, layers, &["full_attention", "sliding_attention"])? {
        Some(s) => s,
        None => {
            let every = match f.opt_usize("global_attn_every_n_layers")? {
                Some(_) => f.count("global_attn_every_n_layers", MAX_LAYERS)?,
                None => 3,
            };
            (0..layers).map(|i| i % every != 0).collect()
        }
    };
    let (mut theta, mut local_theta) = (None, None);
    if let Some(p) = f.object("rope_parameters")? {
        let full = p.object("full_attention")?;
        let local = p.object("sliding_attention")?;
        if full.is_none() && local.is_none() {
            theta = rope_object(&p, "rope_parameters.")?;
            local_theta = theta;
        }
        if let Some(full) = full {
            theta = rope_object(&full, "rope_parameters.full_attention.")?;
        }
        if let Some(local) = local {
            local_theta = rope_object(&local, "rope_parameters.sliding_attention.")?;
        }
    }
    let theta = match theta {
        Some(t) => t,
        None => f.opt_f64("global_rope_theta")?.unwrap_or(160000.0),
    };
    let local_theta = match local_theta {
        Some(t) => t,
        None => f.opt_f64("local_rope_theta")?.unwrap_or(10000.0),
    };
    let local_attention = f.opt_usize("local_attention")?.unwrap_or(128).min(MAX_DIM);
    Ok(Rotary { theta, local_theta, sliding, window: local_attention / 2, causal: false })
}
