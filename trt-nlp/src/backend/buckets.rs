//! Shape buckets for executors that specialise per shape (CUDA graphs): a
//! graph replays one fixed shape, so batches are rounded up to a few shapes
//! and each bucket gets its own graph.
//!
//! - Sequence: the pipeline pads rows to a multiple of the backend's
//!   [`sequence_multiple`](super::Capabilities::sequence_multiple) (8 where an
//!   executor specialises per shape: TensorRT's kernels, CUDA graphs), so
//!   the sequence length is already a bucket.
//! - Batch: the next power of two, at most the model's largest batch.
//!
//! So at most `(log2(max_batch) + 2) * (max_seq / 8)` graphs exist per session.

/// The batch bucket of a batch of `rows` rows: the next power of two, at most `max_batch`.
pub fn batch_bucket(rows: usize, max_batch: usize) -> usize {
    rows.max(1).checked_next_power_of_two().unwrap_or(usize::MAX).min(max_batch.max(rows))
}

/// A graph id unique per (batch bucket, sequence length).
pub fn graph_id(batch_bucket: usize, seq: usize) -> u32 {
    ((batch_bucket.min(0xffff) as u32) << 16) | (seq.min(0xffff) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_round_up_to_powers_of_two_within_the_maximum() {
        let got: Vec<usize> = [1, 2, 3, 5, 8, 9, 17, 31, 32].iter().map(|&r| batch_bucket(r, 32)).collect();
        assert_eq!(got, [1, 2, 4, 8, 8, 16, 32, 32, 32]);
        assert_eq!(batch_bucket(20, 24), 24, "capped at the model's largest batch");
        assert_eq!(batch_bucket(0, 8), 1);
    }

    #[test]
    fn graph_ids_differ_per_bucket_and_sequence() {
        let mut ids = std::collections::HashSet::new();
        for b in [1, 2, 4, 8, 16, 24, 32] {
            for s in (8..=512).step_by(8) {
                assert!(ids.insert(graph_id(b, s)), "({b}, {s})");
            }
        }
    }
}
