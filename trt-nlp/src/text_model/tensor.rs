//! [`OutputRows`]: one selected output for some texts, as f32 rows, batch
//! axis first; and how rows computed in different batches are put together.
//!
//! Rows of one output agree on every axis but, for `[batch, seq, ...]`
//! outputs, the sequence: each batch pads to its own longest text. Putting
//! rows together ([`OutputRows::concat`]) zero-pads that axis to the longest,
//! as a batch holding all of them would have padded it (padding positions
//! are zero, not the values a model would compute there).

use ndarray::ArrayD;

use crate::{Error, Result};

/// One output for a run of texts: the batch axis first, one row per text,
/// row-major f32 values.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputRows {
    /// The output's name (as selected: `embedding` for the pooled one).
    pub name: String,
    /// Shape, the rows first.
    pub shape: Vec<usize>,
    /// Row-major values, `shape.iter().product()` of them.
    pub values: Vec<f32>,
}

impl OutputRows {
    /// An output from its parts; fails when `values` does not fill `shape`
    /// or the shape has no row axis.
    pub fn new(name: impl Into<String>, shape: Vec<usize>, values: Vec<f32>) -> Result<Self> {
        let name = name.into();
        if shape.is_empty() || shape.iter().product::<usize>() != values.len() {
            return Err(Error::Shape { what: "output values vs shape", expected: shape, got: vec![values.len()] });
        }
        Ok(OutputRows { name, shape, values })
    }

    /// Rows (texts) it holds.
    pub fn rows(&self) -> usize {
        self.shape.first().copied().unwrap_or(0)
    }

    /// Values per row.
    pub fn row_len(&self) -> usize {
        self.shape[1..].iter().product()
    }

    /// Row `i`'s values (`None` past the last row).
    pub fn row(&self, i: usize) -> Option<&[f32]> {
        let n = self.row_len();
        (i < self.rows()).then(|| &self.values[i * n..(i + 1) * n])
    }

    /// Rows `range` (a request's share of a batch); the range is clamped to the rows there are.
    pub fn slice_rows(&self, range: std::ops::Range<usize>) -> OutputRows {
        let end = range.end.min(self.rows());
        let start = range.start.min(end);
        let n = self.row_len();
        let mut shape = self.shape.clone();
        shape[0] = end - start;
        OutputRows { name: self.name.clone(), shape, values: self.values[start * n..end * n].to_vec() }
    }

    /// As an `ndarray` array of [`shape`](Self::shape).
    pub fn into_array(self) -> ArrayD<f32> {
        ArrayD::from_shape_vec(self.shape, self.values).expect("OutputRows keeps values and shape in step")
    }

    /// `parts` one after the other along the rows, all of one output: their
    /// axes after the rows must agree, except the sequence axis of a
    /// `[rows, seq, ...]` output, which is zero-padded to the longest. Fails on no parts, or on
    /// parts of different names or ranks.
    pub fn concat(parts: &[OutputRows]) -> Result<OutputRows> {
        let first = parts.first().ok_or_else(|| Error::EmptyBatch)?;
        let mut inner = first.shape[1..].to_vec();
        for p in parts {
            // Only a `[rows, seq, ...]` output has a sequence axis that may differ.
            let fixed = if first.shape.len() >= 3 { 2 } else { 1 };
            if p.name != first.name || p.shape.len() != first.shape.len() || p.shape.get(fixed..) != first.shape.get(fixed..) {
                return Err(Error::Shape { what: "rows of one output put together", expected: first.shape.clone(), got: p.shape.clone() });
            }
            if let Some(d) = inner.first_mut() {
                *d = (*d).max(p.shape[1]);
            }
        }
        let rows: usize = parts.iter().map(OutputRows::rows).sum();
        let per_row: usize = inner.iter().product();
        let mut values = Vec::with_capacity(rows * per_row);
        for p in parts {
            let n = p.row_len();
            for r in 0..p.rows() {
                // Row-major: a shorter first axis fills the start of the row's slot.
                values.extend_from_slice(&p.values[r * n..(r + 1) * n]);
                values.resize(values.len() + (per_row - n), 0.0);
            }
        }
        let mut shape = vec![rows];
        shape.extend(inner);
        Ok(OutputRows { name: first.name.clone(), shape, values })
    }

    /// One row per array (each without the row axis), stacked as [`concat`](Self::concat) does.
    pub fn stack<'a>(name: &str, rows: impl IntoIterator<Item = &'a ArrayD<f32>>) -> Result<OutputRows> {
        let parts: Vec<OutputRows> = rows
            .into_iter()
            .map(|a| {
                let mut shape = vec![1];
                shape.extend_from_slice(a.shape());
                OutputRows { name: name.to_string(), shape, values: a.iter().copied().collect() }
            })
            .collect();
        Self::concat(&parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], values: &[f32]) -> OutputRows {
        OutputRows::new("h", shape.to_vec(), values.to_vec()).unwrap()
    }

    #[test]
    fn new_refuses_values_that_do_not_fill_the_shape() {
        assert!(OutputRows::new("x", vec![2, 2], vec![0.0; 3]).is_err());
        assert!(OutputRows::new("x", vec![], vec![]).is_err());
    }

    #[test]
    fn rows_and_slices() {
        let a = t(&[3, 2], &[0., 1., 2., 3., 4., 5.]);
        assert_eq!((a.rows(), a.row_len()), (3, 2));
        assert_eq!(a.row(1), Some(&[2.0, 3.0][..]));
        assert_eq!(a.row(3), None);
        assert_eq!(a.slice_rows(1..3), t(&[2, 2], &[2., 3., 4., 5.]));
        assert_eq!(a.slice_rows(2..9).shape, [1, 2]);
    }

    #[test]
    fn concat_pads_the_sequence_axis_with_zeros() {
        // [1, 1, 2] then [2, 2, 2]: the first part's row grows to sequence 2.
        let a = t(&[1, 1, 2], &[1., 2.]);
        let b = t(&[2, 2, 2], &[3., 4., 5., 6., 7., 8., 9., 10.]);
        let c = OutputRows::concat(&[a, b]).unwrap();
        assert_eq!(c.shape, [3, 2, 2]);
        assert_eq!(c.values, [1., 2., 0., 0., 3., 4., 5., 6., 7., 8., 9., 10.]);
        // Rank 2 (pooled rows, logits) simply concatenates.
        let c = OutputRows::concat(&[t(&[1, 2], &[1., 2.]), t(&[1, 2], &[3., 4.])]).unwrap();
        assert_eq!((c.shape, c.values), (vec![2, 2], vec![1., 2., 3., 4.]));
    }

    #[test]
    fn concat_refuses_parts_that_disagree() {
        assert!(OutputRows::concat(&[]).is_err());
        assert!(OutputRows::concat(&[t(&[1, 2], &[1., 2.]), t(&[1, 1, 2], &[1., 2.])]).is_err());
        assert!(OutputRows::concat(&[t(&[1, 1, 2], &[1., 2.]), t(&[1, 1, 3], &[1., 2., 3.])]).is_err());
        // A rank-2 output has no sequence axis: its widths must agree.
        assert!(OutputRows::concat(&[t(&[1, 2], &[1., 2.]), t(&[1, 3], &[1., 2., 3.])]).is_err());
        let other = OutputRows::new("other", vec![1, 2], vec![1., 2.]).unwrap();
        assert!(OutputRows::concat(&[t(&[1, 2], &[1., 2.]), other]).is_err());
    }

    #[test]
    fn stack_puts_per_row_arrays_under_a_row_axis() {
        let rows =
            [ArrayD::from_shape_vec(vec![1, 2], vec![1., 2.]).unwrap(), ArrayD::from_shape_vec(vec![2, 2], vec![3., 4., 5., 6.]).unwrap()];
        let s = OutputRows::stack("h", &rows).unwrap();
        assert_eq!(s.shape, [2, 2, 2]);
        assert_eq!(s.values, [1., 2., 0., 0., 3., 4., 5., 6.]);
        assert_eq!(s.clone().into_array().shape(), [2, 2, 2]);
    }
}
