//! Sparse embeddings (SPLADE): a vocabulary-sized vector per text, computed
//! inside an imported sparse encoder's graph (output `sparse`), handed back
//! as its non-zero entries.
//!
//! | piece | what |
//! |---|---|
//! | [`SparseVector`] | `(token id, weight)` pairs of the non-zeros, by token id |
//! | [`TextModel::sparse_embed`] | texts in (the model's default prompt before each), one vector per text out |

use std::sync::{Mutex, PoisonError};

use crate::texts::for_each_batch;
use crate::{Error, Result, TextModel};

/// The output a sparse encoder's graph computes (`trt_hf::SPARSE_OUTPUT`).
pub const SPARSE: &str = "sparse";

/// The non-zero entries of one text's vocabulary-sized vector, by token id.
pub type SparseVector = Vec<(u32, f32)>;

/// `(index, value)` of the non-zeros of `row`, by index.
pub fn non_zeros(row: &[f32]) -> SparseVector {
    row.iter().enumerate().filter(|(_, &v)| v != 0.0).map(|(i, &v)| (i as u32, v)).collect()
}

impl TextModel {
    /// The sparse vector of each text, in their order, with the model's
    /// default prompt before each where it has one (as
    /// sentence-transformers' `SparseEncoder.encode`). The model must have a
    /// `[batch, vocab]` output called `sparse` (an imported SPLADE folder).
    /// ```
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight SPLADE model made by sentence-transformers (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/splade");
    /// let model = trt_nlp::TextModel::open(path)?;
    /// let vectors = model.sparse_embed(&["sparse retrieval with SPLADE"])?;
    /// let v = &vectors[0];
    /// assert!(v.windows(2).all(|w| w[0].0 < w[1].0), "by token id");
    /// assert!(v.iter().all(|&(_, w)| w > 0.0), "SPLADE's weights are log(1 + relu(x)): only positive ones are kept");
    /// # Ok(())
    /// # }
    /// ```
    pub fn sparse_embed<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Vec<SparseVector>> {
        if !self.layout().model_outputs().any(|o| o.name == SPARSE && o.rank == 2) {
            return Err(Error::UnsupportedModel { reason: format!("sparse embeddings need a [batch, vocab] output called {SPARSE}") });
        }
        let prefix = self.head().prompts.text(None)?;
        let prompted: Vec<String> = texts.iter().map(|t| format!("{prefix}{}", t.as_ref())).collect();
        let selection = self.select(&[SPARSE])?;
        let all: Mutex<Vec<SparseVector>> = Mutex::new(vec![Vec::new(); texts.len()]);
        for_each_batch(&**self.backend(), self.pipeline(), &prompted, &self.reads(&selection), |rows, layout, outputs| {
            let out = selection.tensors(layout, outputs, rows.len())?.swap_remove(0);
            let mut all = all.lock().unwrap_or_else(PoisonError::into_inner);
            for (k, &i) in rows.iter().enumerate() {
                all[i] = non_zeros(out.row(k).unwrap_or_default());
            }
            Ok(())
        })?;
        Ok(all.into_inner().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn non_zeros_keep_their_token_ids_in_order() {
        assert_eq!(super::non_zeros(&[0.0, 1.5, 0.0, 0.25]), vec![(1, 1.5), (3, 0.25)]);
    }
}
