//! A one-shot slot for a command's reply: the caller that sends a coalesced batch fills it, the caller
//! that issued the command waits on it.

use super::json::Value;
use crate::error::{Error, Result};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

/// The shared state: the reply once there is one, and who to wake for it.
#[derive(Default)]
struct State {
    reply: Option<Result<Value>>,
    filled: bool,
    waker: Option<Waker>,
}

type Shared = Arc<Mutex<State>>;

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    // Nothing panics while the lock is held, so a poisoned lock still holds a consistent state.
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new slot: the end that fills it and the end that waits for it.
pub(crate) fn slot() -> (Filler, Reply) {
    let shared = Shared::default();
    (Filler(shared.clone()), Reply(shared))
}

/// The end that fills the slot; dropped unfilled (its batch was cancelled), it fills it with an error.
pub(crate) struct Filler(Shared);

impl Filler {
    /// Fills the slot with `reply` and wakes the waiting caller.
    pub(crate) fn fill(&self, reply: Result<Value>) {
        let mut state = lock(&self.0);
        if !state.filled {
            state.filled = true;
            state.reply = Some(reply);
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
        }
    }
}

impl Drop for Filler {
    fn drop(&mut self) {
        self.fill(Err(Error::Network {
            message: "the caller sending this command's batch was cancelled".to_owned(),
        }));
    }
}

/// The end that waits: a future of the reply.
pub(crate) struct Reply(Shared);

impl Future for Reply {
    type Output = Result<Value>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Result<Value>> {
        let mut state = lock(&self.0);
        match state.reply.take() {
            Some(reply) => Poll::Ready(reply),
            None => {
                state.waker = Some(context.waker().clone());
                Poll::Pending
            }
        }
    }
}
