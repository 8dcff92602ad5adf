//! Class labels from a Hugging Face `config.json`, and top-k predictions.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use ndarray::{ArrayView2, Axis};

use super::element::FloatElement;
use crate::error::Result;

/// Names of a classifier's classes (`id2label` of a Hugging Face
/// `config.json`). A class without a name is called `LABEL_{i}`, as
/// `transformers` does.
///
/// ```
/// let labels = trt_nlp::Labels::from_config_json(r#"{"id2label": {"0": "NEGATIVE", "1": "POSITIVE"}}"#)?;
/// assert_eq!(labels.name(1), "POSITIVE");
/// assert_eq!(labels.name(7), "LABEL_7");
/// # Ok::<(), trt_nlp::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels {
    names: BTreeMap<usize, String>,
}

#[derive(serde::Deserialize)]
struct HfConfig {
    // serde_json reads the JSON object's string keys ("0", "1") as integers.
    #[serde(default)]
    id2label: BTreeMap<usize, String>,
}

impl Labels {
    /// Reads `id2label` from a `config.json`; a file without it gives
    /// `LABEL_{i}` for every class.
    pub fn from_config_file(path: impl AsRef<Path>) -> Result<Self> {
        let config: HfConfig = super::read_json_config(path.as_ref())?;
        Ok(Self { names: config.id2label })
    }

    /// [`from_config_file`](Self::from_config_file) on the file's text.
    pub fn from_config_json(json: &str) -> Result<Self> {
        Self::parse(json, Path::new("<memory>"))
    }

    /// Labels named in order: the first is class 0.
    pub fn from_names<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Self { names: names.into_iter().map(Into::into).enumerate().collect() }
    }

    /// The name of class `index`.
    pub fn name(&self, index: usize) -> Cow<'_, str> {
        match self.names.get(&index) {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Owned(format!("LABEL_{index}")),
        }
    }

    /// Number of named classes.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no class is named.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    fn parse(json: &str, path: &Path) -> Result<Self> {
        let config: HfConfig = super::parse_json_config(json, path)?;
        Ok(Self { names: config.id2label })
    }
}

/// One predicted class.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// Class index.
    pub index: usize,
    /// Class name (see [`Labels::name`]).
    pub label: String,
    /// Its score, as given (a probability after [`softmax`](crate::softmax)).
    pub score: f32,
}

/// The `k` best classes of each row of `scores` (`[batch, classes]`), best
/// first; ties go to the lower index, NaN ranks last. `k` larger than the
/// number of classes gives every class.
///
/// ```
/// use ndarray::array;
/// let probs = trt_nlp::softmax(array![[0.1f32, 2.0, 1.0]].view());
/// let top = trt_nlp::top_k(probs.view(), 2, &trt_nlp::Labels::default());
/// assert_eq!(top[0][0].label, "LABEL_1");
/// assert_eq!(top[0][1].index, 2);
/// ```
pub fn top_k<T: FloatElement>(scores: ArrayView2<'_, T>, k: usize, labels: &Labels) -> Vec<Vec<Prediction>> {
    scores
        .axis_iter(Axis(0))
        .map(|row| {
            let score = |i: usize| row[i].to_f32();
            // Numbers before NaN, numbers descending, then ascending index: a total order.
            let order = |a: &usize, b: &usize| {
                let (sa, sb) = (score(*a), score(*b));
                let by_score = match (sa.is_nan(), sb.is_nan()) {
                    (false, false) => sb.total_cmp(&sa),
                    (nan_a, nan_b) => nan_a.cmp(&nan_b),
                };
                by_score.then(a.cmp(b))
            };
            let mut idx: Vec<usize> = (0..row.len()).collect();
            let k = k.min(idx.len());
            if k == 0 {
                return Vec::new();
            }
            if k < idx.len() {
                idx.select_nth_unstable_by(k - 1, order);
                idx.truncate(k);
            }
            idx.sort_unstable_by(order);
            idx.into_iter().map(|i| Prediction { index: i, label: labels.name(i).into_owned(), score: score(i) }).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_ranks_last_and_ties_by_index() {
        let s = ndarray::array![[f32::NAN, 1.0, 1.0, 0.5]];
        let top = top_k(s.view(), 4, &Labels::default());
        let idx: Vec<usize> = top[0].iter().map(|p| p.index).collect();
        assert_eq!(idx, [1, 2, 3, 0]);
    }

    #[test]
    fn ties_go_to_the_lower_index() {
        let s = ndarray::array![[3.0f32, 3.0, 3.0]];
        assert_eq!(top_k(s.view(), 2, &Labels::default())[0].iter().map(|p| p.index).collect::<Vec<_>>(), [0, 1]);
    }
}
