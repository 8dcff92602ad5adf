//! Causal-LM rerankers (Qwen3-Reranker): a (query, document) pair written
//! into the model's prompt, tokenized as its model card tokenizes it, and
//! scored `P(yes) = sigmoid(yes - no)` from the two logits the imported
//! graph computes at the last position.
//!
//! | piece | what |
//! |---|---|
//! | [`rerank_prompt`] | the content: the template with `{instruction}`, `{query}`, `{doc}` filled in |
//! | [`TextModel::rerank_rows`] | prefix ids + content ids (cut to what the length leaves; the row says whether it was cut) + suffix ids, each tokenized apart without special tokens around prefix and suffix |
//! | [`TextModel::rerank_scores`] | one score per document, in their order |
//!
//! The format comes from the import's descriptor ([`trt_hf::rerank::RerankFormat`]).

use std::sync::{Mutex, PoisonError};

use tokenizers::{TruncationDirection, TruncationParams, TruncationStrategy};

use crate::texts::for_each_row_batch;
use crate::{Error, Result, TextModel, TokenRow};

/// `template` with `{instruction}`, `{query}` and `{doc}` replaced in one
/// pass (as Python's `str.format`: a brace inside the query is not a field).
pub fn rerank_prompt(template: &str, instruction: &str, query: &str, doc: &str) -> String {
    let mut out = String::with_capacity(template.len() + instruction.len() + query.len() + doc.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open..];
        let field = [("{instruction}", instruction), ("{query}", query), ("{doc}", doc)].into_iter().find(|(f, _)| after.starts_with(f));
        match field {
            Some((f, value)) => {
                out.push_str(value);
                rest = &after[f.len()..];
            }
            None => {
                out.push('{');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

impl TextModel {
    /// The token rows of `(query, doc)` for each of `docs`, as the model's
    /// card builds them: `instruction` (the format's default when `None`)
    /// and the pair in the template, cut to `max_length` tokens (the
    /// format's, never past the model's) with the prefix and suffix.
    pub fn rerank_rows<S: AsRef<str>>(
        &self,
        query: &str,
        docs: &[S],
        instruction: Option<&str>,
        max_length: Option<usize>,
    ) -> Result<Vec<TokenRow>> {
        let format = self.head().rerank.as_ref().ok_or_else(|| Error::UnsupportedModel {
            reason: "the model is not a causal-LM reranker (its import records no prompt format)".into(),
        })?;
        let instruction = instruction.unwrap_or(&format.instruction);
        let max_length = max_length.unwrap_or(format.max_length).min(self.max_seq());
        let mut tokenizer = self.pipeline().tokenizer().clone();
        let bad = |source: tokenizers::Error| Error::TokenizerSetup { what: "reranker prompt".into(), source };
        tokenizer.with_truncation(None).map_err(bad)?;
        let bare = |t: &tokenizers::Tokenizer, text: &str| {
            t.encode_fast(text, false).map(|e| e.get_ids().to_vec()).map_err(|source| Error::Tokenize { index: 0, source })
        };
        let prefix = bare(&tokenizer, &format.prefix)?;
        let suffix = bare(&tokenizer, &format.suffix)?;
        let room = max_length.checked_sub(prefix.len() + suffix.len()).filter(|&r| r > 0).ok_or_else(|| Error::InvalidOption {
            option: "max_length",
            value: max_length.to_string(),
            expected: format!("more than the reranker prompt's prefix ({}) and suffix ({}) tokens", prefix.len(), suffix.len()),
        })?;
        let truncation = TruncationParams {
            max_length: room,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        };
        tokenizer.with_truncation(Some(truncation)).map_err(bad)?;
        docs.iter()
            .enumerate()
            .map(|(i, doc)| {
                let content = tokenizer
                    .encode_fast(rerank_prompt(&format.template, instruction, query, doc.as_ref()), true)
                    .map_err(|source| Error::Tokenize { index: i, source })?;
                let mut row = TokenRow::new([prefix.as_slice(), content.get_ids(), &suffix].concat(), None)?;
                // What the cut left over: a server refuses such a row unless the request allows cutting.
                row.set_truncated(!content.get_overflowing().is_empty());
                Ok(row)
            })
            .collect()
    }

    /// `P(yes)` of each of `docs` for `query` ([`rerank_rows`](Self::rerank_rows)
    /// at the format's length), in their order.
    /// ```
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight Qwen3-Reranker (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/qwen3-reranker");
    /// let model = trt_nlp::TextModel::open(path)?;
    /// let p = model.rerank_scores("What is the capital of France?", &["Paris is its capital.", "Bananas are yellow."], None)?;
    /// assert_eq!(p.len(), 2);
    /// assert!(p.iter().all(|p| (0.0..=1.0).contains(p)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn rerank_scores<S: AsRef<str>>(&self, query: &str, docs: &[S], instruction: Option<&str>) -> Result<Vec<f32>> {
        let rows = self.rerank_rows(query, docs, instruction, None)?;
        let selection = self.logits()?;
        let scores: Mutex<Vec<f32>> = Mutex::new(vec![f32::NAN; rows.len()]);
        for_each_row_batch(&**self.backend(), self.pipeline(), &rows, &self.reads(&selection), |order, layout, outputs| {
            let logits = selection.tensors(layout, outputs, order.len())?.swap_remove(0);
            let mut all = scores.lock().unwrap_or_else(PoisonError::into_inner);
            for (k, &i) in order.iter().enumerate() {
                if let Some(&[yes, no]) = logits.row(k) {
                    all[i] = 1.0 / (1.0 + (no - yes).exp());
                }
            }
            Ok(())
        })?;
        Ok(scores.into_inner().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::rerank_prompt;

    #[test]
    fn fields_are_filled_once_and_braces_in_the_pair_stay_text() {
        let t = "<I>: {instruction} <Q>: {query} <D>: {doc} {other}";
        assert_eq!(rerank_prompt(t, "judge", "a {doc} b", "c"), "<I>: judge <Q>: a {doc} b <D>: c {other}");
    }
}
