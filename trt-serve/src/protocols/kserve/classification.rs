//! Triton's classification extension: an output requested with
//! `"classification": k` comes back as BYTES `[batch, k]`, each element
//! `"score:index:label"` (or `"score:index"` without labels), highest score
//! first. Scores are the output's own values (logits stay logits), printed
//! with six decimals as Triton does.

use trt_nlp::Labels;

use super::OutputData;
use crate::error::{ServeError, ServeResult};

/// Top-`k` classes of each row of a `[rows, classes]` FP32 output.
pub fn classify(name: &str, values: &[f32], shape: &[usize], k: usize, labels: Option<&Labels>) -> ServeResult<(Vec<usize>, OutputData)> {
    let &[rows, classes] = shape else {
        return Err(ServeError::invalid(format!("output '{name}' has shape {shape:?}; classification needs [batch, classes]")));
    };
    if k == 0 {
        return Err(ServeError::invalid(format!("output '{name}': classification count must be at least 1")));
    }
    let k = k.min(classes);
    let mut out = Vec::with_capacity(rows * k);
    for row in values.chunks_exact(classes.max(1)).take(rows) {
        let mut order: Vec<usize> = (0..classes).collect();
        order.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
        for &i in &order[..k] {
            let s = match labels.filter(|l| i < l.len()) {
                Some(l) => format!("{:.6}:{i}:{}", row[i], l.name(i)),
                None => format!("{:.6}:{i}", row[i]),
            };
            out.push(s.into_bytes());
        }
    }
    Ok((vec![rows, k], OutputData::Bytes(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_strings_in_triton_format() {
        let labels = Labels::from_names(["neg", "pos", "mid"]);
        let (shape, data) = classify("logits", &[0.1, 2.5, -1.0, 3.0, 1.0, 2.0], &[2, 3], 2, Some(&labels)).unwrap();
        assert_eq!(shape, [2, 2]);
        let OutputData::Bytes(s) = data else { panic!("not BYTES") };
        let s: Vec<_> = s.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
        assert_eq!(s, ["2.500000:1:pos", "0.100000:0:neg", "3.000000:0:neg", "2.000000:2:mid"]);
        let (_, data) = classify("logits", &[1.0, 2.0], &[1, 2], 5, None).unwrap();
        assert_eq!(data, OutputData::Bytes(vec![b"2.000000:1".to_vec(), b"1.000000:0".to_vec()]));
        assert!(classify("h", &[0.0; 8], &[1, 2, 4], 1, None).is_err());
    }
}
