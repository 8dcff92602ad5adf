//! Embeddings as the embedding APIs hand them out: Matryoshka truncation
//! (the first `dimensions` components, L2-normalised again) and base64 of
//! the little-endian f32 bytes (OpenAI's `encoding_format: "base64"`, which
//! the `openai` package decodes with `numpy.frombuffer(..., dtype="float32")`).

use base64::Engine;

/// Keeps the first `dimensions` components of `v` (all when `None`) and,
/// when `normalize`, scales the rest to unit length (a zero vector stays zero).
pub fn truncate_dims(mut v: Vec<f32>, dimensions: Option<usize>, normalize: bool) -> Vec<f32> {
    if let Some(d) = dimensions {
        v.truncate(d);
    }
    if normalize {
        let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x = (f64::from(*x) / norm) as f32);
        }
    }
    v
}

/// Base64 (standard alphabet, padded) of `v`'s little-endian f32 bytes.
pub fn base64_f32(v: &[f32]) -> String {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matryoshka_truncates_then_renormalises() {
        let v = truncate_dims(vec![3.0, 4.0, 12.0], Some(2), true);
        assert_eq!(v, [0.6, 0.8]);
        assert_eq!(truncate_dims(vec![3.0, 4.0], None, false), [3.0, 4.0]);
        assert_eq!(truncate_dims(vec![0.0, 0.0], None, true), [0.0, 0.0]);
    }

    #[test]
    fn base64_is_little_endian_f32() {
        // 1.0f32 = 0x3f800000: bytes 00 00 80 3f.
        assert_eq!(base64_f32(&[1.0]), "AACAPw==");
        assert_eq!(base64_f32(&[]), "");
    }
}
