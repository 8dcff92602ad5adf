//! The thread pool tokenization runs on, and how its size is chosen.
//!
//! The pipeline owns (or shares) a rayon [`ThreadPool`] instead of using
//! rayon's global pool, so the caller decides how many cores tokenization
//! takes, independently of anything else in the process that uses rayon.
//!
//! `tokenizers` itself only goes parallel in its batch and padding functions,
//! which the pipeline does not call (it encodes one text per task with
//! `encode_fast` and pads by itself). Those would in any case run on the pool
//! they are called from, ours. So `TOKENIZERS_PARALLELISM` and
//! `RAYON_NUM_THREADS` only matter when no thread count is given; see
//! [`default_threads`].

use std::sync::Arc;

use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::error::Result;

/// The thread count used when the caller gives none, following the same
/// environment variables as the Python `tokenizers` package:
///
/// - `TOKENIZERS_PARALLELISM` set to a false value (`false`, `0`, `off`, `no`,
///   empty, ...; or `tokenizers::parallelism::set_parallelism(false)`) → 1;
/// - otherwise `RAYON_NUM_THREADS` when set to a positive number;
/// - otherwise every available core.
pub fn default_threads() -> usize {
    if !tokenizers::parallelism::get_parallelism() {
        return 1;
    }
    let from_env = std::env::var("RAYON_NUM_THREADS").ok().and_then(|v| v.parse::<usize>().ok());
    match from_env {
        Some(n) if n > 0 => n,
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// A pool of `threads` workers (`None`: [`default_threads`]).
pub(crate) fn build_pool(threads: Option<usize>) -> Result<Arc<ThreadPool>> {
    let threads = threads.unwrap_or_else(default_threads);
    let pool = ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("trt-nlp-{i}")).build()?;
    Ok(Arc::new(pool))
}
