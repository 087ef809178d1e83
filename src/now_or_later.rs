//! [`NowOrLater`]: an answer given at once when nothing needed I/O, else by a future; what a store's
//! decision ([`Decided`](crate::Decided)) and a limit's ([`Limited`](crate::ratelimit::Limited)) are.

use crate::error::{Error, Result};
use crate::maybe_send::BoxFuture;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// An answer at once ([`NowOrLater::Now`]) or later. Awaiting it works either way; a caller that can
/// answer without a future looks at [`NowOrLater::Now`] first.
pub enum NowOrLater<'a, T> {
    /// Answered at once (taken by the first poll).
    Now(Option<Result<T>>),
    /// Answered when the future completes.
    Later(BoxFuture<'a, Result<T>>),
}

impl<T> NowOrLater<'_, T> {
    /// An answer given at once.
    pub fn now(answer: Result<T>) -> Self {
        Self::Now(Some(answer))
    }

    /// The answer, when it was given at once.
    pub fn at_once(self) -> Option<Result<T>> {
        match self {
            Self::Now(answer) => answer,
            Self::Later(_) => None,
        }
    }
}

impl<T: Unpin> Future for NowOrLater<'_, T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Self::Now(answer) => Poll::Ready(answer.take().unwrap_or_else(|| {
                Err(Error::Unsupported {
                    what: "polling an answer given at once after it was taken".to_owned(),
                })
            })),
            Self::Later(future) => future.as_mut().poll(context),
        }
    }
}
