//! How a [`Scheduler`](super::Scheduler) forms batches and bounds its queue.
//!
//! Plain data with defaults that suit a CPU or GPU service of single texts;
//! checked once against the model's layout and the pipeline when the
//! scheduler is made, so a bad setting fails there, not at the first request.

use std::time::Duration;

use crate::{Error, ModelLayout, Result, TokenizerPipeline};

/// Which queued rows go into one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Grouping {
    /// Oldest first (within a priority level), as they came: the batch pads
    /// every row to its longest (text-embeddings-inference's policy).
    Fifo,
    /// Length-aware: the oldest row always goes in, with the queued rows
    /// (same priority level) closest to it in length, so that short texts
    /// are not padded to a long one's length. Rows of lower levels join only
    /// when they add no padding.
    #[default]
    ByLength,
}

/// Settings of a [`Scheduler`](super::Scheduler). Start from
/// [`BatchingConfig::default`] and set what differs.
///
/// ```
/// use std::time::Duration;
/// let mut config = trt_nlp::batching::BatchingConfig::default();
/// config.max_batch_size = 64;
/// config.max_queue_delay = Duration::from_millis(5);
/// config.max_batch_tokens = Some(64 * 128);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BatchingConfig {
    /// Most rows (texts) in one batch; at most the model's `max_batch`. Default 32.
    pub max_batch_size: usize,
    /// How long the oldest queued row may wait for others to join its batch
    /// before a smaller batch is cut. Zero (default): a batch is cut as soon
    /// as a worker is free, from whatever is queued; under load rows pile up
    /// while every worker is busy, so batches still grow with the load, and
    /// at low load nothing waits for company that does not come.
    pub max_queue_delay: Duration,
    /// Triton's meaning: as soon as the rows available reach one of these
    /// sizes, a batch of the largest such size is cut at once; otherwise the
    /// scheduler waits up to `max_queue_delay`. Empty (default): cut when the
    /// batch is full or the delay is over.
    pub preferred_batch_sizes: Vec<usize>,
    /// Most padded tokens in one batch, `rows * padded_len(longest)`
    /// (text-embeddings-inference's meaning). `None` (default): no token limit.
    pub max_batch_tokens: Option<usize>,
    /// How rows are chosen for a batch. Default [`Grouping::ByLength`].
    pub grouping: Grouping,
    /// Least share of real tokens in a batch, `real / (rows * padded_len(longest))`
    /// in `0.0..=1.0`: a row joins only if the batch stays at or above it (a
    /// row alone always runs). On a CPU a padded token costs as much as a
    /// real one, so e.g. 0.9 keeps batching from losing to unbatched runs.
    /// Default 0.0: no limit.
    pub min_padding_efficiency: f32,
    /// Whether a cut takes at most its share of the queue, `ceil(queued rows
    /// / workers)`, so that rows queued at once are spread over the workers
    /// rather than all run by the first one free. Where a batch costs about
    /// the sum of its rows (CPU sessions) one big batch leaves the other
    /// workers' cores idle while its rows wait; on one shared device (a GPU)
    /// big batches are what pays. Changes only how many rows a batch takes,
    /// never when it is cut. `None` (default): the backend says
    /// ([`parallel_instances`](crate::backend::Capabilities::parallel_instances)).
    pub spread_across_workers: Option<bool>,
    /// Whether a batch is cut at once, whatever `max_queue_delay` says, when
    /// no batch is running: the delay then applies only while the device is
    /// busy, since waiting for company while it idles only adds latency (one
    /// client would pay the whole delay on every request). `None` (default):
    /// on where the backend's instances share one device (a GPU:
    /// [`parallel_instances`](crate::backend::Capabilities::parallel_instances) is
    /// `false`), off where they run side by side (CPU sessions, where the
    /// delay is a chosen trade of latency for fuller batches).
    pub cut_when_idle: Option<bool>,
    /// Most rows waiting at once; a request that would go past it is
    /// refused at once with [`SubmitError::Overloaded`](super::SubmitError::Overloaded). Default 4096.
    pub max_queue_size: usize,
    /// Priority levels; level 0 is served first. Default 3.
    pub priority_levels: usize,
    /// Level of a request that names none. Default 1.
    pub default_priority: usize,
    /// Timeout of a request that sets no deadline. `None` (default): none.
    pub default_timeout: Option<Duration>,
    /// Worker threads, each running one batch at a time. `None` (default):
    /// the backend's [`instances`](crate::backend::Capabilities::instances).
    pub workers: Option<usize>,
}

impl Default for BatchingConfig {
    fn default() -> Self {
        BatchingConfig {
            max_batch_size: 32,
            max_queue_delay: Duration::ZERO,
            preferred_batch_sizes: Vec::new(),
            max_batch_tokens: None,
            grouping: Grouping::default(),
            min_padding_efficiency: 0.0,
            spread_across_workers: None,
            cut_when_idle: None,
            max_queue_size: 4096,
            priority_levels: 3,
            default_priority: 1,
            default_timeout: None,
            workers: None,
        }
    }
}

impl BatchingConfig {
    /// Checks the settings against the model and the pipeline that will pack its batches.
    pub(crate) fn check(&self, layout: &ModelLayout, pipeline: &TokenizerPipeline) -> Result<()> {
        let bad = |option, value: &dyn std::fmt::Display, expected: String| {
            Err(Error::InvalidOption { option, value: value.to_string(), expected })
        };
        if self.max_batch_size == 0 || self.max_batch_size > layout.max_batch {
            return bad(
                "batching.max_batch_size",
                &self.max_batch_size,
                format!("within the model's batch range 1..={}", layout.max_batch),
            );
        }
        if let Some(p) = self.preferred_batch_sizes.iter().find(|&&p| p == 0 || p > self.max_batch_size) {
            return bad("batching.preferred_batch_sizes", p, format!("within 1..={} (max_batch_size)", self.max_batch_size));
        }
        if self.max_batch_tokens == Some(0) {
            return bad("batching.max_batch_tokens", &0, "at least 1 (0 admits no batch)".into());
        }
        if !(0.0..=1.0).contains(&self.min_padding_efficiency) {
            return bad("batching.min_padding_efficiency", &self.min_padding_efficiency, "within 0.0..=1.0".into());
        }
        if self.max_queue_size == 0 {
            return bad("batching.max_queue_size", &0, "at least 1 (0 admits no request)".into());
        }
        if self.priority_levels == 0 || self.default_priority >= self.priority_levels {
            return bad(
                "batching.default_priority",
                &self.default_priority,
                format!("one of the {} priority levels", self.priority_levels),
            );
        }
        if self.workers == Some(0) {
            return bad("batching.workers", &0, "at least 1".into());
        }
        if pipeline.max_len() > layout.max_seq {
            return bad("max_len", &pipeline.max_len(), format!("at most the model's max_seq {} (the pipeline's)", layout.max_seq));
        }
        // Rows are never empty, so every row has at least one token.
        if pipeline.min_len().max(1) < layout.min_seq {
            return bad(
                "min_len",
                &pipeline.min_len(),
                format!("at least the {} tokens the model needs per row (the pipeline's)", layout.min_seq),
            );
        }
        Ok(())
    }

    /// The preferred size to cut at when `available` rows can go in, if any.
    pub(crate) fn preferred_cut(&self, available: usize) -> Option<usize> {
        self.preferred_batch_sizes.iter().copied().filter(|&p| p <= available).max()
    }
}
