//! Sentence embeddings from token hidden states (sentence-transformers semantics).

use std::path::Path;

use ndarray::{Array2, ArrayView2, ArrayView3, ArrayViewMut2, Axis, Zip};

use super::element::{FloatElement, MaskElement};
use crate::error::{Error, Result};

/// How token hidden states become one vector per text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Pooling {
    /// Mean over the positions the attention mask marks (see [`mean_pool`]).
    #[default]
    Mean,
    /// The first token's state (`[CLS]`; see [`cls_pool`]).
    Cls,
}

#[derive(serde::Deserialize)]
struct StPoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

impl Pooling {
    /// The mode a sentence-transformers `1_Pooling/config.json` selects.
    /// Max and sqrt-length pooling, or several modes at once, are refused
    /// with [`Error::UnsupportedModel`].
    pub fn from_config_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let c: StPoolingConfig = super::read_json_config(path)?;
        match (c.pooling_mode_mean_tokens, c.pooling_mode_cls_token, c.pooling_mode_max_tokens, c.pooling_mode_mean_sqrt_len_tokens) {
            (true, false, false, false) => Ok(Self::Mean),
            (false, true, false, false) => Ok(Self::Cls),
            _ => Err(Error::unsupported(format!("{}: only a single mean or CLS pooling mode is supported", path.display()))),
        }
    }

    /// Pools `hidden` (`[batch, seq, dim]`) under `mask` (`[batch, seq]`; CLS
    /// pooling checks its shape but does not read it).
    pub fn pool<T: FloatElement, M: MaskElement>(self, hidden: ArrayView3<'_, T>, mask: ArrayView2<'_, M>) -> Result<Array2<f32>> {
        check_mask(&hidden, &mask)?;
        match self {
            Self::Mean => mean_pool(hidden, mask),
            Self::Cls => cls_pool(hidden),
        }
    }
}

fn check_mask<T, M>(hidden: &ArrayView3<'_, T>, mask: &ArrayView2<'_, M>) -> Result<()> {
    let (b, s, _) = hidden.dim();
    if mask.dim() != (b, s) {
        return Err(Error::Shape {
            what: "attention mask vs hidden states [batch, seq]",
            expected: vec![b, s],
            got: mask.shape().to_vec(),
        });
    }
    Ok(())
}

/// Mean of each text's hidden states over the positions where `mask` is set:
/// `sum(h * m) / max(sum(m), 1e-9)`, as sentence-transformers computes it.
/// A text with no set position gets a zero vector, not NaN.
///
/// ```
/// use ndarray::array;
/// let hidden = array![[[1.0f32, 2.0], [3.0, 4.0], [100.0, 100.0]]];
/// let mask = array![[1i64, 1, 0]];
/// assert_eq!(trt_nlp::mean_pool(hidden.view(), mask.view())?, array![[2.0f32, 3.0]]);
/// # Ok::<(), trt_nlp::Error>(())
/// ```
pub fn mean_pool<T: FloatElement, M: MaskElement>(hidden: ArrayView3<'_, T>, mask: ArrayView2<'_, M>) -> Result<Array2<f32>> {
    check_mask(&hidden, &mask)?;
    let (b, _, dim) = hidden.dim();
    let mut out = Array2::<f32>::zeros((b, dim));
    Zip::from(out.rows_mut()).and(hidden.outer_iter()).and(mask.outer_iter()).for_each(|mut acc, states, mask| {
        let mut count = 0.0f32;
        for (state, &m) in states.outer_iter().zip(mask.iter()) {
            if m.is_token() {
                Zip::from(&mut acc).and(&state).for_each(|a, &x| *a += x.to_f32());
                count += 1.0;
            }
        }
        let count = count.max(1e-9);
        acc.mapv_inplace(|a| a / count);
    });
    Ok(out)
}

/// The hidden state of each text's first token (`[batch, seq, dim]` →
/// `[batch, dim]`). Fails on `seq == 0`.
pub fn cls_pool<T: FloatElement>(hidden: ArrayView3<'_, T>) -> Result<Array2<f32>> {
    let (b, s, dim) = hidden.dim();
    if s == 0 {
        return Err(Error::Shape { what: "hidden states need a first position", expected: vec![b, 1, dim], got: vec![b, s, dim] });
    }
    Ok(hidden.index_axis(Axis(1), 0).mapv(T::to_f32))
}

/// Scales each row to unit L2 norm, in place: `x / max(||x||, 1e-12)` as
/// `torch.nn.functional.normalize` does, so a zero row stays zero.
///
/// ```
/// use ndarray::array;
/// let mut e = array![[3.0f32, 4.0], [0.0, 0.0]];
/// trt_nlp::l2_normalize(e.view_mut());
/// assert_eq!(e, array![[0.6f32, 0.8], [0.0, 0.0]]);
/// ```
pub fn l2_normalize(mut embeddings: ArrayViewMut2<'_, f32>) {
    for mut row in embeddings.rows_mut() {
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        row.mapv_inplace(|x| x / norm);
    }
}
