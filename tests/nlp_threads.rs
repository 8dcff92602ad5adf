//! How the pipeline picks its thread count from the environment.
//!
//! Runs on the CPU (no GPU); needs `scripts/setup` for `.deps/minilm`. It sets
//! process-wide environment variables, so it lives in its own test binary,
//! as one sequential test.

#[path = "nlp_support.rs"]
mod support;

use trt_nlp::{default_threads, TokenizerPipeline};

fn pipeline_threads(explicit: Option<usize>) -> usize {
    let builder = TokenizerPipeline::builder(32);
    let builder = match explicit {
        Some(n) => builder.threads(n),
        None => builder,
    };
    builder.from_file(support::tokenizer_json()).unwrap().threads()
}

#[test]
fn environment_sets_the_default_and_an_explicit_count_wins() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::env::remove_var("TOKENIZERS_PARALLELISM");
    std::env::remove_var("RAYON_NUM_THREADS");
    assert_eq!(default_threads(), cores);
    assert_eq!(pipeline_threads(None), cores);

    std::env::set_var("RAYON_NUM_THREADS", "3");
    assert_eq!(default_threads(), 3);
    assert_eq!(pipeline_threads(None), 3);

    // Unusable values are ignored, as rayon does.
    std::env::set_var("RAYON_NUM_THREADS", "zero");
    assert_eq!(default_threads(), cores);

    // TOKENIZERS_PARALLELISM=false (any of the package's false spellings) means one thread.
    for off in ["false", "0", "off", "NO", ""] {
        std::env::set_var("TOKENIZERS_PARALLELISM", off);
        assert_eq!(default_threads(), 1, "TOKENIZERS_PARALLELISM={off:?}");
    }
    assert_eq!(pipeline_threads(None), 1);
    // An explicit count wins over the environment.
    assert_eq!(pipeline_threads(Some(2)), 2);

    std::env::set_var("TOKENIZERS_PARALLELISM", "true");
    std::env::set_var("RAYON_NUM_THREADS", "2");
    assert_eq!(default_threads(), 2);
    std::env::remove_var("TOKENIZERS_PARALLELISM");
    std::env::remove_var("RAYON_NUM_THREADS");
}
