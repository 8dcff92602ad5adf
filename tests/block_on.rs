//! A minimal executor for tests that await many futures at once on one
//! thread (included with `#[path]`; not a test target): polls every future,
//! parks between rounds until a waker unparks it, and gives up (fails the
//! test) after a time limit. No async runtime crate is needed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Every future's output, in order; panics if they are not all done within `limit`.
pub fn block_on_all<F: Future>(futures: Vec<F>, limit: Duration) -> Vec<F::Output> {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    let end = Instant::now() + limit;
    while out.iter().any(Option::is_none) {
        for (f, o) in futures.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                    *o = Some(v);
                }
            }
        }
        assert!(Instant::now() < end, "the futures did not finish within {limit:?}");
        if out.iter().any(Option::is_none) {
            // A lost wake-up would only cost this long, never hang the test.
            std::thread::park_timeout(Duration::from_millis(50));
        }
    }
    out.into_iter().flatten().collect()
}
