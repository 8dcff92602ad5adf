//! Row-wise softmax, and the score activations of classifiers.

use ndarray::{Array2, ArrayView2, Axis};

use super::element::FloatElement;

/// Softmax of each row of `logits` (`[batch, classes]`), in f32.
///
/// Numerically stable: the row's maximum is subtracted before `exp`, so large
/// logits do not overflow. Like NumPy and PyTorch, a row holding NaN or only
/// `-inf` gives NaN.
///
/// ```
/// use ndarray::array;
/// let p = trt_nlp::softmax(array![[1000.0f32, 1000.0]].view());
/// assert_eq!(p, array![[0.5f32, 0.5]]);
/// ```
pub fn softmax<T: FloatElement>(logits: ArrayView2<'_, T>) -> Array2<f32> {
    let mut out = logits.mapv(T::to_f32);
    for mut row in out.axis_iter_mut(Axis(0)) {
        let max = row.fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        row.mapv_inplace(|x| (x - max).exp());
        let sum = row.sum();
        row.mapv_inplace(|x| x / sum);
    }
    out
}

/// Scores from logits as `activation` says: softmax over each row, a
/// sigmoid per value (multi-label classifiers, one-logit cross-encoders),
/// or the logits as they are.
///
/// ```
/// use ndarray::array;
/// use trt_nlp::{scores, ScoreActivation};
/// let s = scores(array![[0.0f32]].view(), ScoreActivation::Sigmoid);
/// assert_eq!(s, array![[0.5f32]]);
/// ```
pub fn scores<T: FloatElement>(logits: ArrayView2<'_, T>, activation: trt_hf::ScoreActivation) -> Array2<f32> {
    match activation {
        trt_hf::ScoreActivation::Sigmoid => logits.mapv(|x| 1.0 / (1.0 + (-x.to_f32()).exp())),
        trt_hf::ScoreActivation::Identity => logits.mapv(T::to_f32),
        _ => softmax(logits),
    }
}
