//! A causal LM used as a reranker, as the Qwen3-Reranker model card uses
//! it: the (query, document) pair is written into a chat prompt that asks
//! for "yes" or "no", and the score is P("yes") from a softmax over the
//! two tokens' logits at the last position, `sigmoid(yes - no)`.
//!
//! | piece | what |
//! |---|---|
//! | [`RerankFormat`] | the prompt around a pair (prefix, template, suffix, default instruction), written into the descriptor |
//! | [`head`] | the graph's end: the last real position's state through the two `lm_head` rows of "yes" and "no": `logits [batch, 2]` |
//!
//! The prompt is not in the model folder (the card's code holds it), so
//! the card's text is here, verbatim; a runtime formats pairs with it and
//! tokenizes prefix, content (cut to what the length leaves) and suffix
//! apart, as the card does.

use std::path::Path;

use crate::arch::ArchConfig;
use crate::graph::Graph;
use crate::weights::{Tensor, Weights};
use crate::{Error, Result};

/// How a pair becomes the reranker's input.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct RerankFormat {
    /// Text before the content (the system turn and the user turn's start).
    pub prefix: String,
    /// The content: `{instruction}`, `{query}` and `{doc}` are replaced.
    pub template: String,
    /// Text after the content (the assistant turn's start).
    pub suffix: String,
    /// The instruction used when a caller gives none.
    pub instruction: String,
    /// The token whose probability is the score.
    pub yes_token: String,
    /// The token it is weighed against.
    pub no_token: String,
    /// Prefix, content and suffix together are at most this many tokens.
    pub max_length: usize,
}

/// The Qwen3-Reranker model card's prompt.
pub const QWEN3_PREFIX: &str = "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n";
/// Its content template.
pub const QWEN3_TEMPLATE: &str = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}";
/// Its suffix (an empty thinking block, then the answer).
pub const QWEN3_SUFFIX: &str = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
/// Its default instruction.
pub const QWEN3_INSTRUCTION: &str = "Given a web search query, retrieve relevant passages that answer the query";
/// The card's `max_length`.
pub const QWEN3_MAX_LENGTH: usize = 8192;

impl RerankFormat {
    /// The Qwen3-Reranker card's format, its length capped at `limit` (the model's).
    pub fn qwen3(limit: usize) -> Self {
        RerankFormat {
            prefix: QWEN3_PREFIX.into(),
            template: QWEN3_TEMPLATE.into(),
            suffix: QWEN3_SUFFIX.into(),
            instruction: QWEN3_INSTRUCTION.into(),
            yes_token: "yes".into(),
            no_token: "no".into(),
            max_length: QWEN3_MAX_LENGTH.min(limit),
        }
    }
}

/// `[B, 2]`: the logits of `format`'s yes and no tokens at each row's last
/// real position of `hidden` (the final norm's output).
pub fn head(g: &mut Graph, w: &Weights, cfg: &ArchConfig, hidden: &str, tokenizer: &Path, format: &RerankFormat) -> Result<String> {
    let t: serde_json::Value = crate::json::read(tokenizer)?;
    let id = |token: &str| {
        crate::folder::token_id(&t, token).map(|i| i as usize).filter(|&i| i < cfg.vocab_size).ok_or_else(|| Error::Config {
            path: tokenizer.to_owned(),
            field: "model.vocab".into(),
            problem: format!("no token '{token}' within the model's {} logits; the reranker's score is P('{token}')", cfg.vocab_size),
        })
    };
    let (yes, no) = (id(&format.yes_token)?, id(&format.no_token)?);
    // lm_head, or the token embeddings it is tied to.
    let table = match w.has_exact("lm_head.weight") {
        true => w.get_exact("lm_head.weight", &[cfg.vocab_size, cfg.hidden])?,
        false => w.get("embed_tokens.weight", &[cfg.vocab_size, cfg.hidden])?,
    };
    let h = cfg.hidden;
    let mut rows = table.data[yes * h..(yes + 1) * h].to_vec();
    rows.extend_from_slice(&table.data[no * h..(no + 1) * h]);
    let rows = Tensor { name: format!("{}[yes,no]", table.name), shape: vec![2, h], data: rows };
    let last = crate::sentence::last_token(g, hidden, cfg.max_positions);
    Ok(g.linear(&last, &rows, None, "rerank/lm_head"))
}
