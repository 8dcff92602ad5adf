//! Reading the embeddings the Python side of a bench saved with `np.save`.

use std::path::Path;

/// A little-endian f32 .npy file of `rows` rows (numpy's version 1 header), flat.
pub fn read_f32(path: &Path, rows: usize) -> Vec<f32> {
    let bytes = std::fs::read(path).expect("npy written");
    assert!(bytes.starts_with(b"\x93NUMPY"), "not an npy file");
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let values: Vec<f32> = bytes[10 + header_len..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert_eq!(values.len() % rows, 0, "npy size");
    values
}
