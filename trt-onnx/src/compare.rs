//! How far one executor's outputs are from another's: the figures `trt
//! compare` prints and the quantizer's accuracy gate uses.
//!
//! Rows are the last axis: a `[batch, labels]` output has `batch` rows, a
//! `[batch, sequence, hidden]` one `batch * sequence` (only positions the
//! attention mask keeps, when one is given; the error figures skip padding
//! too). A rank-3 output given with a mask also yields the mean-pooled sentence embedding's cosine, the figure
//! that matters for an embedding model.

use ndarray::{ArrayD, ArrayView2, Axis, Ix2};

use crate::{Error, Result};

/// The figures for one output.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Metrics {
    /// Largest |a - b|.
    pub max_abs: f64,
    /// Largest |a - b| / max(|a|, 1e-6) over elements where |a| > 1e-3 (0 if none).
    pub max_rel: f64,
    /// Cosine of each row of `b` against `a`: smallest.
    pub cosine_min: f64,
    /// ... and mean.
    pub cosine_mean: f64,
    /// Share of rows whose argmax agrees (rank-2 outputs only).
    pub argmax_agreement: Option<f64>,
    /// Mean-pooled embedding cosine, smallest and mean (rank 3 with a mask).
    pub embedding_cosine: Option<(f64, f64)>,
    /// Rows compared.
    pub rows: usize,
}

/// Cosine similarity of two vectors; 1 when both are zero, 0 when one is.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (*x as f64, *y as f64);
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    match (aa == 0.0, bb == 0.0) {
        (true, true) => 1.0,
        (true, false) | (false, true) => 0.0,
        _ => ab / (aa.sqrt() * bb.sqrt()),
    }
}

/// Mean of `hidden` `[batch, sequence, width]` over the positions where `mask` `[batch, sequence]` is non-zero.
pub fn mean_pool(hidden: &ArrayD<f32>, mask: ArrayView2<'_, i64>) -> Result<ndarray::Array2<f32>> {
    let h = hidden.view().into_dimensionality::<ndarray::Ix3>().map_err(|_| Error::Tensor {
        tensor: "(pooling)".into(),
        problem: format!("expected [batch, sequence, width], found {:?}", hidden.shape()),
    })?;
    if mask.dim() != (h.shape()[0], h.shape()[1]) {
        return Err(Error::Tensor {
            tensor: "attention_mask".into(),
            problem: format!("shape {:?} does not match the output's {:?}", mask.shape(), hidden.shape()),
        });
    }
    let mut out = ndarray::Array2::<f32>::zeros((h.shape()[0], h.shape()[2]));
    for (b, mut row) in out.axis_iter_mut(Axis(0)).enumerate() {
        let mut n = 0f32;
        for s in 0..h.shape()[1] {
            if mask[(b, s)] != 0 {
                row += &h.slice(ndarray::s![b, s, ..]);
                n += 1.0;
            }
        }
        if n > 0.0 {
            row /= n;
        }
    }
    Ok(out)
}

/// Compares `b` against the reference `a` (same shape). `mask` is the
/// attention mask of the batch, when there is one.
pub fn compare(name: &str, a: &ArrayD<f32>, b: &ArrayD<f32>, mask: Option<ArrayView2<'_, i64>>) -> Result<Metrics> {
    if a.shape() != b.shape() {
        return Err(Error::Tensor { tensor: name.into(), problem: format!("shapes differ: {:?} and {:?}", a.shape(), b.shape()) });
    }
    let width = a.shape().last().copied().unwrap_or(1).max(1);
    let rows_a = a
        .view()
        .into_shape_with_order((a.len() / width, width))
        .map_err(|e| Error::Tensor { tensor: name.into(), problem: e.to_string() })?;
    let rows_b = b
        .view()
        .into_shape_with_order((b.len() / width, width))
        .map_err(|e| Error::Tensor { tensor: name.into(), problem: e.to_string() })?;
    // Which rows count: with a rank-3 output and a mask, only kept positions.
    let keep: Vec<bool> = match (a.ndim(), mask) {
        (3, Some(m)) if m.len() == rows_a.nrows() => m.iter().map(|&v| v != 0).collect(),
        _ => vec![true; rows_a.nrows()],
    };
    // Errors over the rows that count (padding positions carry no meaning).
    let (mut max_abs, mut max_rel) = (0f64, 0f64);
    for ((ra, rb), _) in rows_a.outer_iter().zip(rows_b.outer_iter()).zip(&keep).filter(|(_, k)| **k) {
        for (x, y) in ra.iter().zip(rb.iter()) {
            let d = (*x as f64 - *y as f64).abs();
            // NaN on either side counts as infinitely far.
            let d = if d.is_nan() { f64::INFINITY } else { d };
            max_abs = max_abs.max(d);
            if x.abs() > 1e-3 {
                max_rel = max_rel.max(d / (x.abs() as f64));
            }
        }
    }
    let cosines: Vec<f64> = rows_a
        .outer_iter()
        .zip(rows_b.outer_iter())
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|((x, y), _)| cosine(&x.to_vec(), &y.to_vec()))
        .collect();
    let (cosine_min, cosine_mean) = min_mean(&cosines);
    let argmax_agreement = (a.ndim() == 2).then(|| {
        let agree = rows_a.outer_iter().zip(rows_b.outer_iter()).filter(|(x, y)| argmax(x.as_slice()) == argmax(y.as_slice())).count();
        agree as f64 / rows_a.nrows().max(1) as f64
    });
    let embedding_cosine = match (a.ndim(), mask) {
        (3, Some(m)) => {
            let (pa, pb) = (mean_pool(a, m)?, mean_pool(b, m)?);
            let c: Vec<f64> = pa.outer_iter().zip(pb.outer_iter()).map(|(x, y)| cosine(&x.to_vec(), &y.to_vec())).collect();
            Some(min_mean(&c))
        }
        _ => None,
    };
    Ok(Metrics { max_abs, max_rel, cosine_min, cosine_mean, argmax_agreement, embedding_cosine, rows: cosines.len() })
}

fn argmax(row: Option<&[f32]>) -> Option<usize> {
    let row = row?;
    row.iter()
        .enumerate()
        .fold(None, |best: Option<(usize, f32)>, (i, &v)| match best {
            Some((_, bv)) if bv >= v => best,
            _ => Some((i, v)),
        })
        .map(|(i, _)| i)
}

fn min_mean(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (1.0, 1.0);
    }
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    (min, v.iter().sum::<f64>() / v.len() as f64)
}

/// Figures accumulated over several batches (rows of different batches may
/// have different sequence lengths, so batches are compared one by one).
#[derive(Debug, Clone, Default)]
pub struct Accumulator {
    max_abs: f64,
    max_rel: f64,
    cos_min: f64,
    cos_sum: f64,
    rows: usize,
    agree: f64,
    agree_rows: usize,
    emb_min: f64,
    emb_sum: f64,
    emb_rows: usize,
    started: bool,
}

impl Accumulator {
    /// Adds one batch's figures (`batch` rows of the embedding, when there is one).
    pub fn add(&mut self, m: &Metrics, batch: usize) {
        if !self.started {
            self.cos_min = f64::INFINITY;
            self.emb_min = f64::INFINITY;
            self.started = true;
        }
        self.max_abs = self.max_abs.max(m.max_abs);
        self.max_rel = self.max_rel.max(m.max_rel);
        self.cos_min = self.cos_min.min(m.cosine_min);
        self.cos_sum += m.cosine_mean * m.rows as f64;
        self.rows += m.rows;
        if let Some(a) = m.argmax_agreement {
            self.agree += a * batch as f64;
            self.agree_rows += batch;
        }
        if let Some((lo, mean)) = m.embedding_cosine {
            self.emb_min = self.emb_min.min(lo);
            self.emb_sum += mean * batch as f64;
            self.emb_rows += batch;
        }
    }

    /// The figures over every batch added.
    pub fn total(&self) -> Metrics {
        Metrics {
            max_abs: self.max_abs,
            max_rel: self.max_rel,
            cosine_min: if self.rows > 0 { self.cos_min } else { 1.0 },
            cosine_mean: if self.rows > 0 { self.cos_sum / self.rows as f64 } else { 1.0 },
            argmax_agreement: (self.agree_rows > 0).then(|| self.agree / self.agree_rows as f64),
            embedding_cosine: (self.emb_rows > 0).then(|| (self.emb_min, self.emb_sum / self.emb_rows as f64)),
            rows: self.rows,
        }
    }
}

/// Rank-2 view helper for callers holding `[batch, sequence]` masks as `ArrayD`.
pub fn mask_view(mask: &ArrayD<i64>) -> Option<ArrayView2<'_, i64>> {
    mask.view().into_dimensionality::<Ix2>().ok()
}
