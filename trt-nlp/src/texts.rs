//! Texts through a backend, batch by batch: the loop the classifier and the
//! embedder share.
//!
//! A call's texts are ordered by length (bytes, a cheap stand-in for tokens,
//! as sentence-transformers' `encode` does) and cut into batches of at most
//! the model's largest batch, so that each batch pads to a length close to
//! its texts' own: fewer padded tokens computed. The callback is told which
//! input text each row is, so results come back in the caller's order. A
//! batch smaller than the model's smallest is padded with empty texts, rows
//! the callback does not see. The caller says which outputs it reads
//! ([`Selection::reads`](crate::Selection::reads)); a GPU backend leaves the
//! others on the device.
//!
//! A backend with several instances (sessions, contexts) gets that many
//! batches at once, from as many threads: while one batch computes on the
//! device, the next is tokenized and the last one pooled, and on a GPU the
//! instances' streams overlap. With one instance the batches run in turn on
//! the caller's thread. The first error stops the batches not yet started
//! and is returned.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::backend::{Backend, Outputs};
use crate::{BatchLayout, Error, Result, TokenRow, TokenizerPipeline};

/// Runs `texts` through `backend`, tokenized by `pipeline`. `each` sees every
/// batch's outputs with the input index of each real row (row `r` of the
/// outputs is text `rows[r]`; rows past `rows.len()` are padding).
pub(crate) fn for_each_batch<S: AsRef<str> + Sync>(
    backend: &dyn Backend,
    pipeline: &TokenizerPipeline,
    texts: &[S],
    wanted: &[bool],
    each: impl Fn(&[usize], &BatchLayout, &Outputs<'_>) -> Result<()> + Sync,
) -> Result<()> {
    let layout = backend.layout();
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].as_ref().len());
    let chunks: Vec<&[usize]> = order.chunks(layout.max_batch.max(1)).collect();
    in_parallel(chunks.len(), backend.capabilities().instances, |c| {
        let rows = chunks[c];
        let mut batch_texts: Vec<&str> = Vec::with_capacity(rows.len().max(layout.min_batch));
        batch_texts.extend(rows.iter().map(|&i| texts[i].as_ref()));
        if batch_texts.len() < layout.min_batch {
            batch_texts.resize(layout.min_batch, "");
        }
        backend.run_reading(wanted, &mut |batch| pipeline.encode_into(&batch_texts, batch), &mut |l, o| each(rows, l, o))
    })
}

/// [`for_each_batch`] over rows tokenized earlier (text pairs): ordered by
/// length, cut at the model's largest batch, a batch below the model's
/// smallest padded with copies of its first row, which `each` does not see.
pub(crate) fn for_each_row_batch(
    backend: &dyn Backend,
    pipeline: &TokenizerPipeline,
    rows: &[TokenRow],
    wanted: &[bool],
    each: impl Fn(&[usize], &BatchLayout, &Outputs<'_>) -> Result<()> + Sync,
) -> Result<()> {
    let layout = backend.layout();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| rows[i].len());
    let chunks: Vec<&[usize]> = order.chunks(layout.max_batch.max(1)).collect();
    in_parallel(chunks.len(), backend.capabilities().instances, |c| {
        let chunk = chunks[c];
        let mut batch: Vec<&TokenRow> = chunk.iter().map(|&i| &rows[i]).collect();
        while batch.len() < layout.min_batch {
            batch.push(batch[0]);
        }
        backend.run_reading(wanted, &mut |b| pipeline.pack(batch.iter().copied(), b), &mut |l, o| each(chunk, l, o))
    })
}

/// Runs `job(0..n)`, on up to `workers` threads at once (the caller's alone
/// when one is enough); returns the first error, after which no new job starts.
fn in_parallel(n: usize, workers: usize, job: impl Fn(usize) -> Result<()> + Sync) -> Result<()> {
    let workers = workers.clamp(1, n.max(1));
    if workers == 1 {
        return (0..n).try_for_each(job);
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let first: Mutex<Option<Error>> = Mutex::new(None);
    let work = || {
        while !stop.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            if let Err(e) = job(i) {
                stop.store(true, Ordering::Relaxed);
                first.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..workers {
            scope.spawn(work);
        }
        work();
    });
    match first.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_runs_once_on_several_threads() {
        let seen = Mutex::new(Vec::new());
        let threads = Mutex::new(std::collections::HashSet::new());
        in_parallel(64, 4, |i| {
            seen.lock().unwrap().push(i);
            threads.lock().unwrap().insert(std::thread::current().id());
            std::thread::sleep(std::time::Duration::from_millis(1));
            Ok(())
        })
        .unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.sort_unstable();
        assert_eq!(seen, (0..64).collect::<Vec<_>>());
        assert!(threads.into_inner().unwrap().len() > 1, "the jobs ran on more than one thread");
    }

    #[test]
    fn the_first_error_is_returned_and_stops_new_jobs() {
        let started = AtomicUsize::new(0);
        let err = in_parallel(1000, 3, |i| {
            started.fetch_add(1, Ordering::Relaxed);
            if i == 5 {
                return Err(Error::Internal("job 5".into()));
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
            Ok(())
        })
        .expect_err("job 5 fails");
        assert!(err.to_string().contains("job 5"), "{err}");
        assert!(started.load(Ordering::Relaxed) < 1000, "jobs after the error were not started");
    }

    #[test]
    fn one_worker_runs_in_order_on_the_callers_thread() {
        let me = std::thread::current().id();
        let seen = Mutex::new(Vec::new());
        in_parallel(5, 1, |i| {
            assert_eq!(std::thread::current().id(), me);
            seen.lock().unwrap().push(i);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.into_inner().unwrap(), vec![0, 1, 2, 3, 4]);
    }
}
