//! Token classification (named entities), as transformers'
//! `TokenClassificationPipeline` computes it from a token classifier's
//! `[batch, sequence, labels]` logits: per-token softmax, then one of its
//! five aggregation strategies, with character offsets from the tokenizer.
//!
//! | step | what |
//! |---|---|
//! | tokens | the text tokenized with offsets (characters, as the Python tokenizers count them), truncated where the model cuts; special tokens are never labelled |
//! | scores | softmax over the labels of each token's logits (FP32, shifted by the maximum) |
//! | words | [`Aggregation::First`], [`Max`](Aggregation::Max), [`Average`](Aggregation::Average): a token joins the previous word when it is a subword piece (its vocabulary string is not as long as its text, so `##` pieces join and an unknown token never does) |
//! | groups | every strategy but [`None`](Aggregation::None): consecutive tokens (or words) with the same tag (label without `B-`/`I-`) join unless one starts with `B-`; score = the mean |
//! | filter | entities labelled `O` (a group tagged `O`) are dropped |
//!
//! [`TextModel::token_classify`] does it all; [`TextModel::ner_rows`] and
//! [`TextModel::entities`] are its two halves, for a caller that runs the
//! rows through its own queue (trt-serve's batching).
//!
//! A word or group's text is the tokenizer's decoder over its pieces (the
//! WordPiece decoder glues `##` pieces and `.`, `,`, `!`, `?` to the
//! previous token), except that an unknown token's text is the text's own
//! characters.

use std::sync::{Mutex, PoisonError};

use tokenizers::{Decoder, ModelWrapper, Tokenizer};

use crate::texts::for_each_row_batch;
use crate::{Error, Labels, Result, TextModel, TokenRow};

/// How tokens' labels become entities (transformers' `aggregation_strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Aggregation {
    /// One entity per token not labelled `O`.
    None,
    /// Tokens grouped by tag, each labelled by its own best score.
    #[default]
    Simple,
    /// Words labelled by their first token.
    First,
    /// Words labelled by their most confident token.
    Max,
    /// Words labelled by the mean of their tokens' scores.
    Average,
}

impl Aggregation {
    /// Every strategy with its transformers name.
    pub const ALL: [(Aggregation, &'static str); 5] = [
        (Aggregation::None, "none"),
        (Aggregation::Simple, "simple"),
        (Aggregation::First, "first"),
        (Aggregation::Max, "max"),
        (Aggregation::Average, "average"),
    ];

    /// The strategy transformers calls `name`.
    pub fn named(name: &str) -> Option<Aggregation> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(a, _)| *a)
    }
}

/// One entity of a text.
#[derive(Debug, Clone, PartialEq)]
pub struct Entity {
    /// The label ([`Aggregation::None`]: transformers' `entity`) or the tag of
    /// the group (the others: `entity_group`).
    pub label: String,
    /// Its probability (a group's: the mean of its members').
    pub score: f32,
    /// The token's position in the row, special tokens counted ([`Aggregation::None`] only).
    pub index: Option<usize>,
    /// Its text, as the tokenizer's decoder writes its pieces.
    pub word: String,
    /// First character, in the text (Unicode scalar values).
    pub start: usize,
    /// One past the last character.
    pub end: usize,
}

impl Entity {
    /// The entity as transformers' pipeline writes it: `entity`, `score`,
    /// `index`, `word`, `start`, `end` for [`Aggregation::None`]; `entity_group`,
    /// `score`, `word`, `start`, `end` for the others (the HF Inference API's
    /// token-classification answer).
    pub fn to_json(&self) -> serde_json::Value {
        match self.index {
            Some(index) => serde_json::json!({
                "entity": self.label, "score": self.score, "index": index, "word": self.word, "start": self.start, "end": self.end,
            }),
            None => serde_json::json!({
                "entity_group": self.label, "score": self.score, "word": self.word, "start": self.start, "end": self.end,
            }),
        }
    }
}

/// One labelled token of a text, as the aggregation sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenScores {
    /// Its position in the row (special tokens counted).
    pub index: usize,
    /// Its vocabulary string (an unknown token's: the text's characters).
    pub word: String,
    /// Probabilities by label.
    pub scores: Vec<f32>,
    /// First character in the text.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
    /// Whether it continues the previous token's word.
    pub is_subword: bool,
}

/// Softmax of one token's logits, as numpy computes it in FP32.
pub fn token_softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = logits.iter().map(|&l| (l - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.iter().map(|e| e / sum).collect()
}

fn argmax(v: &[f32]) -> usize {
    // The first of equal maxima, as numpy's argmax.
    v.iter().enumerate().fold(0, |best, (i, &x)| if x > v[best] { i } else { best })
}

/// `B`/`I` and the tag of a label; a label without a prefix counts as `I`.
fn tag(label: &str) -> (bool, &str) {
    match (label.strip_prefix("B-"), label.strip_prefix("I-")) {
        (Some(t), _) => (true, t),
        (_, Some(t)) => (false, t),
        _ => (false, label),
    }
}

/// The entities of one text's `tokens` under `strategy`; `join` writes the
/// text of several pieces (the tokenizer's decoder); labels in `ignore`
/// (transformers: `O`) are dropped.
pub fn aggregate(
    tokens: &[TokenScores],
    labels: &Labels,
    strategy: Aggregation,
    ignore: &[&str],
    join: &dyn Fn(&[&str]) -> String,
) -> Vec<Entity> {
    let labelled = |t: &TokenScores| {
        let best = argmax(&t.scores);
        Entity {
            label: labels.name(best).into_owned(),
            score: t.scores[best],
            index: Some(t.index),
            word: t.word.clone(),
            start: t.start,
            end: t.end,
        }
    };
    let entities: Vec<Entity> = match strategy {
        Aggregation::None | Aggregation::Simple => tokens.iter().map(labelled).collect(),
        _ => words(tokens).into_iter().map(|w| word_entity(w, labels, strategy, join)).collect(),
    };
    let out = if strategy == Aggregation::None { entities } else { group(&entities, join) };
    out.into_iter().filter(|e| !ignore.contains(&e.label.as_str())).collect()
}

/// Tokens in words: a subword piece joins the word before it.
fn words(tokens: &[TokenScores]) -> Vec<&[TokenScores]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=tokens.len() {
        if i == tokens.len() || !tokens[i].is_subword {
            if i > start {
                out.push(&tokens[start..i]);
            }
            start = i;
        }
    }
    out
}

fn word_entity(word: &[TokenScores], labels: &Labels, strategy: Aggregation, join: &dyn Fn(&[&str]) -> String) -> Entity {
    let scores: Vec<f32> = match strategy {
        Aggregation::First => word[0].scores.clone(),
        Aggregation::Max => {
            // The first token of the largest maximum, as Python's max().
            let best = word.iter().fold(&word[0], |b, t| if t.scores[argmax(&t.scores)] > b.scores[argmax(&b.scores)] { t } else { b });
            best.scores.clone()
        }
        _ => {
            let n = word.len() as f32;
            (0..word[0].scores.len()).map(|j| word.iter().map(|t| t.scores[j]).sum::<f32>() / n).collect()
        }
    };
    let best = argmax(&scores);
    let pieces: Vec<&str> = word.iter().map(|t| t.word.as_str()).collect();
    Entity {
        label: labels.name(best).into_owned(),
        score: scores[best],
        index: None,
        word: join(&pieces),
        start: word[0].start,
        end: word[word.len() - 1].end,
    }
}

/// Consecutive entities of one tag, split where one starts with `B-`.
fn group(entities: &[Entity], join: &dyn Fn(&[&str]) -> String) -> Vec<Entity> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=entities.len() {
        let split = i == entities.len() || {
            let (b, t) = tag(&entities[i].label);
            b || t != tag(&entities[i - 1].label).1
        };
        if split && i > start {
            let members = &entities[start..i];
            let pieces: Vec<&str> = members.iter().map(|e| e.word.as_str()).collect();
            out.push(Entity {
                label: tag(&members[0].label).1.to_string(),
                score: members.iter().map(|e| e.score).sum::<f32>() / members.len() as f32,
                index: None,
                word: join(&pieces),
                start: members[0].start,
                end: members[members.len() - 1].end,
            });
            start = i;
        }
    }
    out
}

/// What the tokenizer says about its pieces: the unknown token's id and
/// whether subwords are told by their length (a model with a continuing
/// subword prefix) or by the text around them.
struct Pieces {
    unk: Option<u32>,
    by_length: bool,
}

impl Pieces {
    fn of(t: &Tokenizer) -> Self {
        let (unk, by_length) = match t.get_model() {
            ModelWrapper::WordPiece(w) => (Some(w.unk_token.clone()), !w.continuing_subword_prefix.is_empty()),
            ModelWrapper::BPE(b) => (b.unk_token.clone(), b.continuing_subword_prefix.as_deref().is_some_and(|p| !p.is_empty())),
            _ => (None, false),
        };
        Pieces { unk: unk.and_then(|u| t.token_to_id(&u)), by_length }
    }
}

/// The labelled tokens of `text` (special tokens left out) from its encoding
/// and its `[len, labels]` logits.
fn token_scores(text: &str, e: &tokenizers::Encoding, logits: &[f32], labels: usize, pieces: &Pieces) -> Vec<TokenScores> {
    let chars: Vec<char> = text.chars().collect();
    let slice = |a: usize, b: usize| chars.get(a..b.min(chars.len())).map(|c| c.iter().collect::<String>()).unwrap_or_default();
    let mut out = Vec::new();
    for (i, (&id, &special)) in e.get_ids().iter().zip(e.get_special_tokens_mask()).enumerate() {
        let Some(row) = logits.get(i * labels..(i + 1) * labels) else { break };
        if special == 1 {
            continue;
        }
        let (start, end) = e.get_offsets().get(i).copied().unwrap_or((0, 0));
        let word_ref = slice(start, end);
        let mut word = e.get_tokens().get(i).cloned().unwrap_or_default();
        let mut is_subword = if pieces.by_length {
            word.chars().count() != word_ref.chars().count()
        } else {
            start > 0 && !slice(start - 1, start + 1).contains(' ')
        };
        if Some(id) == pieces.unk {
            word = word_ref;
            is_subword = false;
        }
        out.push(TokenScores { index: i, word, scores: token_softmax(row), start, end, is_subword });
    }
    out
}

/// Texts tokenized for token classification: the rows the model runs and
/// the encodings (with character offsets) the aggregation reads back.
#[derive(Debug, Clone)]
pub struct NerRows {
    encodings: Vec<tokenizers::Encoding>,
    rows: Vec<TokenRow>,
}

impl NerRows {
    /// The token rows, one per text, in order.
    pub fn rows(&self) -> &[TokenRow] {
        &self.rows
    }
}

impl TextModel {
    /// The entities of each text, in their order, as transformers'
    /// token-classification pipeline finds them with `strategy` (labels
    /// `O` dropped). The model's output `logits` must be
    /// `[batch, sequence, labels]` (an imported `*ForTokenClassification`
    /// checkpoint). Texts longer than the model's limit are cut; their
    /// tokens past it are not labelled.
    /// ```
    /// use trt_nlp::ner::Aggregation;
    /// use trt_nlp::TextModel;
    ///
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight BertForTokenClassification (PER, ORG, LOC, MISC) (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-ner");
    /// let model = TextModel::open(path)?;
    /// let entities = model.token_classify(&["Ada Lovelace worked with Charles Babbage in London."], Aggregation::Simple)?;
    /// assert_eq!(entities.len(), 1); // one list per text
    /// for e in &entities[0] {
    ///     assert_ne!(e.label, "O");
    ///     assert!(e.start <= e.end && (0.0..=1.0).contains(&e.score));
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn token_classify<S: AsRef<str> + Sync>(&self, texts: &[S], strategy: Aggregation) -> Result<Vec<Vec<Entity>>> {
        let tokenized = self.ner_rows(texts)?;
        let selection = self.select(&["logits"])?;
        let labels = self.labels().len().max(1);
        let rows = tokenized.rows();
        let logits: Mutex<Vec<Vec<f32>>> = Mutex::new(vec![Vec::new(); rows.len()]);
        for_each_row_batch(&**self.backend(), self.pipeline(), rows, &self.reads(&selection), |order, batch, outputs| {
            let out = selection.tensors(batch, outputs, order.len())?.swap_remove(0);
            let mut all = logits.lock().unwrap_or_else(PoisonError::into_inner);
            for (k, &i) in order.iter().enumerate() {
                let row = out.row(k).unwrap_or_default();
                all[i] = row[..(rows[i].len() * labels).min(row.len())].to_vec();
            }
            Ok(())
        })?;
        let logits = logits.into_inner().unwrap_or_else(PoisonError::into_inner);
        let logits: Vec<&[f32]> = logits.iter().map(Vec::as_slice).collect();
        self.entities(texts, &tokenized, &logits, strategy)
    }

    /// The first half of [`token_classify`](Self::token_classify), for a
    /// caller that runs the rows itself (a server's queue): `texts`
    /// tokenized with character offsets, cut where the model cuts. Refused
    /// unless the model's `logits` are `[batch, sequence, labels]`.
    pub fn ner_rows<S: AsRef<str>>(&self, texts: &[S]) -> Result<NerRows> {
        if !self.layout().model_outputs().any(|o| o.name == "logits" && o.rank == 3) {
            return Err(Error::UnsupportedModel {
                reason: "token classification needs a [batch, sequence, labels] output called logits".into(),
            });
        }
        let tokenizer = self.pipeline().tokenizer();
        let encodings = texts
            .iter()
            .enumerate()
            .map(|(index, t)| tokenizer.encode_char_offsets(t.as_ref(), true).map_err(|source| Error::Tokenize { index, source }))
            .collect::<Result<Vec<_>>>()?;
        let rows =
            encodings.iter().map(|e| TokenRow::new(e.get_ids().to_vec(), Some(e.get_type_ids().to_vec()))).collect::<Result<Vec<_>>>()?;
        Ok(NerRows { encodings, rows })
    }

    /// The second half: the entities of each of `texts` from its row's
    /// `logits` (`[len, labels]` row-major, at least the row's length;
    /// padding past it is ignored).
    pub fn entities<S: AsRef<str>>(
        &self,
        texts: &[S],
        tokenized: &NerRows,
        logits: &[&[f32]],
        strategy: Aggregation,
    ) -> Result<Vec<Vec<Entity>>> {
        if texts.len() != tokenized.rows.len() || logits.len() != texts.len() {
            return Err(Error::Shape {
                what: "texts, token rows and logits rows (one of each per text)",
                expected: vec![texts.len(); 3],
                got: vec![texts.len(), tokenized.rows.len(), logits.len()],
            });
        }
        let tokenizer = self.pipeline().tokenizer();
        let labels = self.labels().len().max(1);
        let pieces = Pieces::of(tokenizer);
        let join = |parts: &[&str]| match tokenizer.get_decoder() {
            Some(d) => d.decode(parts.iter().map(|p| p.to_string()).collect()).unwrap_or_else(|_| parts.join(" ")),
            None => parts.join(" "),
        };
        Ok(texts
            .iter()
            .zip(&tokenized.encodings)
            .zip(logits)
            .map(|((t, e), l)| aggregate(&token_scores(t.as_ref(), e, l, labels, &pieces), self.labels(), strategy, &["O"], &join))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(index: usize, word: &str, scores: [f32; 3], span: (usize, usize), is_subword: bool) -> TokenScores {
        TokenScores { index, word: word.into(), scores: scores.to_vec(), start: span.0, end: span.1, is_subword }
    }

    #[test]
    fn groups_split_at_b_and_at_a_new_tag_and_drop_o() {
        let labels = Labels::from_names(["O", "B-PER", "I-PER"]);
        let join = |p: &[&str]| p.join("|");
        let tokens = [
            token(1, "ann", [0.1, 0.8, 0.1], (0, 3), false),
            token(2, "##a", [0.1, 0.2, 0.7], (3, 4), true),
            token(3, "met", [0.9, 0.05, 0.05], (5, 8), false),
            token(4, "bo", [0.2, 0.3, 0.5], (9, 11), false),
        ];
        let simple = aggregate(&tokens, &labels, Aggregation::Simple, &["O"], &join);
        let got: Vec<(&str, &str, usize, usize)> = simple.iter().map(|e| (e.label.as_str(), e.word.as_str(), e.start, e.end)).collect();
        // I-PER after B-PER joins it; after O, an I-PER starts its own group.
        assert_eq!(got, [("PER", "ann|##a", 0, 4), ("PER", "bo", 9, 11)]);
        assert!((simple[0].score - 0.75).abs() < 1e-6);
        // first: the word "ann##a" is labelled by its first token.
        let first = aggregate(&tokens, &labels, Aggregation::First, &["O"], &join);
        assert_eq!((first[0].label.as_str(), first[0].score), ("PER", 0.8));
        let none = aggregate(&tokens, &labels, Aggregation::None, &["O"], &join);
        assert_eq!(none.iter().map(|e| e.index.unwrap()).collect::<Vec<_>>(), [1, 2, 4]);
    }
}
