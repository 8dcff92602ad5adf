//! Which outputs a caller wants of a text model, and computing them from a
//! batch's outputs while they are still in the backend's buffers: for the
//! whole batch ([`Selection::tensors`], one request's batch) or cut per row
//! ([`Selection::split`], the batching scheduler's rows of many requests).
//!
//! | source | per row |
//! |---|---|
//! | [`Source::Raw`] | the model output as it is, f32; a `[batch, seq, ...]` output's sequence axis cut to the row's length by [`split`](Selection::split) |
//! | [`Source::Pooled`] | a `[batch, seq, dim]` output pooled under the attention mask, L2-normalised when the selection says so: `[dim]` |
//!
//! Pooling a batch at once under its mask and pooling one row cut to its
//! length are the same sums, so a row's embedding does not depend on the
//! path that computed it.

use std::sync::Arc;

use ndarray::{Array2, ArrayD, ArrayViewD, Axis, Ix3, Slice};

use super::tensor::OutputRows;
use crate::backend::{OutputView, Outputs, ViewFn};
use crate::{l2_normalize, BatchLayout, Error, FloatElement, ModelLayout, Pooling, Result};

/// The name under which a pooled embedding is selected by name
/// ([`Selection::by_names`]) when the model has no output of that name.
pub const EMBEDDING: &str = "embedding";

/// Where a selected output comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// The model output of that name, as it is.
    Raw(String),
    /// The model output of that name (`[batch, seq, dim]` hidden states),
    /// pooled to `[batch, dim]` and, when the selection normalises, L2-normalised.
    Pooled(String),
}

/// One output of a [`Selection`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// The name it comes back under.
    pub name: String,
    /// What it is computed from.
    pub source: Source,
}

/// The outputs a caller wants, in its order, and how pooled ones pool.
/// Built against a model's [`ModelLayout`], so every source is an output of
/// that model with the rank its source needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    outputs: Vec<Selected>,
    pooling: Pooling,
    normalize: bool,
}

/// One row's outputs, by name, in selection order.
pub(crate) type RowOutputs = Vec<(String, ArrayD<f32>)>;

impl Selection {
    /// Every output of the model, as it is.
    pub fn raw(layout: &ModelLayout) -> Self {
        let outputs = layout.model_outputs().map(|o| Selected { name: o.name.clone(), source: Source::Raw(o.name.clone()) }).collect();
        Selection { outputs, pooling: Pooling::default(), normalize: false }
    }

    /// The model's hidden states pooled (and normalised if `normalize`),
    /// named [`EMBEDDING`]: what [`TextModel::embed`](super::TextModel::embed) computes.
    pub fn embedding(layout: &ModelLayout, pooling: Pooling, normalize: bool) -> Result<Self> {
        Self::by_names(layout, &[EMBEDDING], pooling, normalize)
    }

    /// The outputs called `names`, in that order: each an output of the
    /// model, except [`EMBEDDING`] (unless the model has an output of that
    /// name), which is its `[batch, seq, dim]` output pooled with `pooling`
    /// and normalised if `normalize`. An unknown name is an
    /// [`Error::NoSuchOutput`] that lists the names there are.
    pub fn by_names<S: AsRef<str>>(layout: &ModelLayout, names: &[S], pooling: Pooling, normalize: bool) -> Result<Self> {
        let mut outputs = Vec::with_capacity(names.len());
        for name in names {
            let name = name.as_ref();
            let source = if layout.model_outputs().any(|o| o.name == name) {
                Source::Raw(name.to_string())
            } else if name == EMBEDDING {
                let hidden = layout.output_of_rank(3).ok_or_else(|| {
                    Error::unsupported(format!("output '{EMBEDDING}' needs a [batch, seq, hidden] model output; the model has none"))
                })?;
                // Pooled inside the graph where the backend did it this way: one row per text comes back.
                match layout.pooled_output(&hidden.name, pooling, normalize) {
                    Some(pooled) => Source::Raw(pooled.name.clone()),
                    None => Source::Pooled(hidden.name.clone()),
                }
            } else {
                let available = layout.model_outputs().map(|o| o.name.clone()).chain([EMBEDDING.to_string()]).collect();
                return Err(Error::NoSuchOutput { name: name.to_string(), available });
            };
            outputs.push(Selected { name: name.to_string(), source });
        }
        Ok(Selection { outputs, pooling, normalize })
    }

    /// The selected outputs, in order.
    pub fn outputs(&self) -> &[Selected] {
        &self.outputs
    }

    /// Which of `layout`'s outputs computing it reads, by position (what a
    /// backend must hand back: [`Backend::run_reading`](crate::Backend::run_reading)).
    pub fn reads(&self, layout: &ModelLayout, wanted: &mut [bool]) {
        for o in &self.outputs {
            let (Source::Raw(name) | Source::Pooled(name)) = &o.source;
            if let Some(i) = layout.outputs.iter().position(|s| &s.name == name) {
                if let Some(w) = wanted.get_mut(i) {
                    *w = true;
                }
            }
        }
    }

    /// Their names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.outputs.iter().map(|o| o.name.as_str())
    }

    /// How pooled outputs pool.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Whether pooled outputs are L2-normalised.
    pub fn normalize(&self) -> bool {
        self.normalize
    }

    /// Shared, for requests to the batching scheduler.
    pub fn shared(self) -> Arc<Self> {
        Arc::new(self)
    }

    /// Every selected output of one batch, its first `rows` rows (the real
    /// texts of a batch padded to the model's smallest), in selection order.
    /// A `[batch, seq, ...]` output keeps the batch's sequence length.
    pub fn tensors(&self, layout: &BatchLayout, outputs: &Outputs<'_>, rows: usize) -> Result<Vec<OutputRows>> {
        let mut pooled: Option<(String, Array2<f32>)> = None;
        let mut tensors = Vec::with_capacity(self.outputs.len());
        for o in &self.outputs {
            let (shape, values) = match &o.source {
                Source::Raw(name) => {
                    let view = outputs.get(name)?;
                    check_rows(view, rows)?;
                    let mut shape = view.shape().to_vec();
                    shape[0] = rows;
                    (shape, view.leading_rows_f32(rows))
                }
                Source::Pooled(name) => {
                    let p = self.pooled(&mut pooled, name, layout, outputs, rows)?;
                    let p = p.slice_axis(Axis(0), Slice::from(..rows));
                    (p.shape().to_vec(), p.iter().copied().collect())
                }
            };
            tensors.push(OutputRows { name: o.name.clone(), shape, values });
        }
        Ok(tensors)
    }

    /// Every selected output of one batch cut per row, for the rows
    /// `indices` (in that order): the batch axis removed, and a
    /// `[batch, seq, ...]` output's sequence axis cut to the row's length,
    /// so no padding is left.
    pub(crate) fn split(&self, layout: &BatchLayout, outputs: &Outputs<'_>, indices: &[usize]) -> Result<Vec<RowOutputs>> {
        let rows = indices.iter().max().map_or(0, |&m| m + 1);
        let mut per_row: Vec<RowOutputs> = indices.iter().map(|_| Vec::with_capacity(self.outputs.len())).collect();
        let mut pooled: Option<(String, Array2<f32>)> = None;
        for o in &self.outputs {
            match &o.source {
                Source::Raw(name) => {
                    let view = outputs.get(name)?;
                    check_rows(view, rows)?;
                    for (&r, out) in indices.iter().zip(per_row.iter_mut()) {
                        let len = layout.lengths.get(r).copied().unwrap_or(layout.seq_len);
                        out.push((o.name.clone(), view.apply(Row { index: r, len, seq_len: layout.seq_len })));
                    }
                }
                Source::Pooled(name) => {
                    let p = self.pooled(&mut pooled, name, layout, outputs, rows)?;
                    for (&r, out) in indices.iter().zip(per_row.iter_mut()) {
                        out.push((o.name.clone(), p.row(r).to_owned().into_dyn()));
                    }
                }
            }
        }
        Ok(per_row)
    }

    /// Whether every source is an output of the model `layout` describes,
    /// with the rank pooling needs: a selection made for another model is
    /// refused before it runs.
    pub fn check(&self, layout: &ModelLayout) -> Result<()> {
        for o in &self.outputs {
            let (name, rank) = match &o.source {
                Source::Raw(name) => (name, None),
                Source::Pooled(name) => (name, Some(3)),
            };
            let spec = layout.outputs.iter().find(|s| &s.name == name).ok_or_else(|| Error::NoSuchOutput {
                name: name.clone(),
                available: layout.outputs.iter().map(|s| s.name.clone()).collect(),
            })?;
            if rank.is_some_and(|r| spec.rank != r) {
                return Err(Error::unsupported(format!(
                    "selected output '{}' pools '{name}', of rank {}; pooling reads [batch, seq, dim]",
                    o.name, spec.rank
                )));
            }
        }
        Ok(())
    }

    /// The batch's pooled (and normalised) `name`, computed once per batch
    /// however many selected outputs name it.
    fn pooled<'p>(
        &self,
        cache: &'p mut Option<(String, Array2<f32>)>,
        name: &str,
        layout: &BatchLayout,
        outputs: &Outputs<'_>,
        rows: usize,
    ) -> Result<&'p Array2<f32>> {
        if cache.as_ref().is_none_or(|(n, _)| n != name) {
            let view = outputs.get(name)?;
            check_rows(view, rows)?;
            let mask = layout.attention_mask();
            let mut pooled = view.apply(Pool { pooling: self.pooling, mask: mask.view() })?;
            if self.normalize {
                l2_normalize(pooled.view_mut());
            }
            *cache = Some((name.to_string(), pooled));
        }
        Ok(&cache.as_ref().expect("set above").1)
    }
}

fn check_rows(view: &OutputView<'_>, rows: usize) -> Result<()> {
    match view.shape().first() {
        Some(&b) if b >= rows => Ok(()),
        _ => Err(Error::Shape { what: "batched output vs batch rows", expected: vec![rows], got: view.shape().to_vec() }),
    }
}

/// One row of an output: batch axis removed, a sequence axis (the second
/// axis of a rank-3+ output, of the batch's padded length) cut to `len`.
struct Row {
    index: usize,
    len: usize,
    seq_len: usize,
}

impl ViewFn for Row {
    type Output = ArrayD<f32>;
    fn call<T: FloatElement>(self, v: &ArrayViewD<'_, T>) -> ArrayD<f32> {
        let row = v.index_axis(Axis(0), self.index);
        let row = if v.ndim() >= 3 && v.shape()[1] == self.seq_len { row.slice_axis(Axis(0), Slice::from(..self.len)) } else { row };
        row.mapv(T::to_f32)
    }
}

/// Hidden states pooled under the batch's attention mask.
struct Pool<'m> {
    pooling: Pooling,
    mask: ndarray::ArrayView2<'m, i32>,
}

impl ViewFn for Pool<'_> {
    type Output = Result<Array2<f32>>;
    fn call<T: FloatElement>(self, v: &ArrayViewD<'_, T>) -> Result<Array2<f32>> {
        let hidden =
            v.view().into_dimensionality::<Ix3>().map_err(|source| Error::ArrayShape { what: "hidden states to pool".into(), source })?;
        self.pooling.pool(hidden, self.mask)
    }
}

#[cfg(test)]
mod tests {
    use half::f16;
    use ndarray::{array, ArrayD, IxDyn};

    use super::*;
    use crate::{mean_pool, OutputSpec};

    fn layout(outputs: &[(&str, usize)]) -> ModelLayout {
        let spec = |&(name, rank): &(&str, usize)| OutputSpec { name: name.into(), dtype: crate::ElementType::F32, rank, pooled: None };
        ModelLayout { inputs: vec![], outputs: outputs.iter().map(spec).collect(), min_batch: 1, max_batch: 4, min_seq: 1, max_seq: 8 }
    }

    /// A batch of 3 rows (the third is padding) at sequence 3: row 0 has 3
    /// tokens, row 1 one; hidden states in f16, logits in f32.
    fn batch() -> (BatchLayout, ArrayD<f16>, ArrayD<f32>) {
        let l = BatchLayout { batch: 3, seq_len: 3, lengths: vec![3, 1, 1], truncated: vec![] };
        let hidden: Vec<f16> = (0..18).map(|i| f16::from_f32(i as f32 - 4.0)).collect();
        let hidden = ArrayD::from_shape_vec(IxDyn(&[3, 3, 2]), hidden).unwrap();
        let logits = ArrayD::from_shape_vec(IxDyn(&[3, 2]), vec![0.5, -1.0, 2.0, 3.0, 9.0, 9.0]).unwrap();
        (l, hidden, logits)
    }

    fn outputs<'a>(hidden: &'a ArrayD<f16>, logits: &'a ArrayD<f32>) -> Outputs<'a> {
        let mut o = Outputs::new();
        o.push("last_hidden_state", OutputView::F16(hidden.view()));
        o.push("logits", OutputView::F32(logits.view()));
        o
    }

    #[test]
    fn by_names_resolves_raw_outputs_and_the_pooled_embedding() {
        let l = layout(&[("last_hidden_state", 3), ("logits", 2)]);
        let s = Selection::by_names(&l, &["logits", EMBEDDING], Pooling::Cls, true).unwrap();
        assert_eq!(s.names().collect::<Vec<_>>(), ["logits", EMBEDDING]);
        assert_eq!(s.outputs()[0].source, Source::Raw("logits".into()));
        assert_eq!(s.outputs()[1].source, Source::Pooled("last_hidden_state".into()));
        assert_eq!((s.pooling(), s.normalize()), (Pooling::Cls, true));
        let e = Selection::by_names(&l, &["nope"], Pooling::Mean, true).unwrap_err();
        assert!(matches!(&e, Error::NoSuchOutput { name, available } if name == "nope" && available.iter().any(|a| a == "logits")), "{e}");
        assert!(e.to_string().contains("no output 'nope'"), "{e}");
        // No hidden states: no embedding.
        let e = Selection::embedding(&layout(&[("logits", 2)]), Pooling::Mean, true).unwrap_err().to_string();
        assert!(e.contains("needs a [batch, seq, hidden] model output"), "{e}");
        // A model whose own output is called `embedding` gets it raw.
        let own = Selection::embedding(&layout(&[("embedding", 2)]), Pooling::Mean, true).unwrap();
        assert_eq!(own.outputs()[0].source, Source::Raw(EMBEDDING.into()));
        assert_eq!(Selection::raw(&l).names().collect::<Vec<_>>(), ["last_hidden_state", "logits"]);
    }

    #[test]
    fn check_refuses_a_selection_for_another_model() {
        let l = layout(&[("last_hidden_state", 3), ("logits", 2)]);
        let s = Selection::by_names(&l, &["logits", EMBEDDING], Pooling::Mean, true).unwrap();
        s.check(&l).unwrap();
        assert!(s.check(&layout(&[("logits", 2)])).is_err());
        assert!(s.check(&layout(&[("last_hidden_state", 2), ("logits", 2)])).is_err(), "pooling needs rank 3");
    }

    #[test]
    fn tensors_keep_the_real_rows_and_pool_under_the_mask() {
        let l = layout(&[("last_hidden_state", 3), ("logits", 2)]);
        let (b, hidden, logits) = batch();
        let outs = outputs(&hidden, &logits);
        let s = Selection::by_names(&l, &["logits", EMBEDDING, "last_hidden_state"], Pooling::Mean, false).unwrap();
        let t = s.tensors(&b, &outs, 2).unwrap();
        assert_eq!((t[0].shape.as_slice(), t[0].values.as_slice()), (&[2, 2][..], &[0.5, -1.0, 2.0, 3.0][..]));
        let h32 = hidden.mapv(f32::from).into_dimensionality::<ndarray::Ix3>().unwrap();
        let want = mean_pool(h32.view(), b.attention_mask().view()).unwrap();
        assert_eq!(t[1].shape, [2, 2]);
        assert_eq!(t[1].values, want.slice(ndarray::s![..2, ..]).iter().copied().collect::<Vec<_>>());
        // Row 1 holds one token: its mean is its first state.
        assert_eq!(t[1].row(1), Some(&[2.0, 3.0][..]));
        assert_eq!(t[2].shape, [2, 3, 2]);
        // More rows than the batch has: refused, typed.
        assert!(matches!(s.tensors(&b, &outs, 4), Err(Error::Shape { .. })));
    }

    #[test]
    fn split_cuts_rows_to_their_length_and_pools_like_the_batch() {
        let l = layout(&[("last_hidden_state", 3), ("logits", 2)]);
        let (b, hidden, logits) = batch();
        let outs = outputs(&hidden, &logits);
        let s = Selection::by_names(&l, &[EMBEDDING, "last_hidden_state", "logits"], Pooling::Mean, true).unwrap();
        let whole = s.tensors(&b, &outs, 2).unwrap();
        let rows = s.split(&b, &outs, &[1, 0]).unwrap();
        assert_eq!(rows.len(), 2);
        // In the order asked for: row 1, then row 0.
        assert_eq!(rows[0][0].1.as_slice().unwrap(), whole[0].row(1).unwrap());
        assert_eq!(rows[1][0].1.as_slice().unwrap(), whole[0].row(0).unwrap());
        let norm: f32 = rows[1][0].1.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-6, "{norm}");
        // Hidden states cut to each row's tokens: 1 and 3 positions.
        assert_eq!(rows[0][1].1.shape(), [1, 2]);
        assert_eq!(rows[1][1].1.shape(), [3, 2]);
        assert_eq!(rows[0][1].1, array![[2.0f32, 3.0]].into_dyn());
        assert_eq!(rows[0][2], ("logits".to_string(), array![2.0f32, 3.0].into_dyn()));
        // The rows, stacked again, are the batch's tensors (hidden states
        // padded with zeros instead of the padding positions' states).
        let stacked = OutputRows::stack(EMBEDDING, [&rows[1][0].1, &rows[0][0].1]).unwrap();
        assert_eq!(stacked, whole[0]);
    }
}
