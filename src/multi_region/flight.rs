//! [`Flight`]: requests to several regions at once, their results taken in the order they arrive.

use crate::maybe_send::BoxFuture;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::task::Poll;

/// Futures run together, each tagged with its region; [`Flight::next`] yields each result as soon as
/// it is ready, so the first reply is never held up by a slow one, and the rest keep running for
/// whoever drives the flight afterwards (the `pending` work). No executor is needed: the caller's
/// polls drive them all.
pub struct Flight<T> {
    running: Vec<Option<(usize, BoxFuture<'static, T>)>>,
    ready: VecDeque<(usize, T)>,
}

impl<T> Flight<T> {
    /// An empty flight.
    pub fn new() -> Self {
        Self {
            running: Vec::new(),
            ready: VecDeque::new(),
        }
    }

    /// Adds `future`, tagged with `region`.
    pub fn push(&mut self, region: usize, future: BoxFuture<'static, T>) {
        match self.running.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => *slot = Some((region, future)),
            None => self.running.push(Some((region, future))),
        }
    }

    /// The next result to arrive, with its region; `None` once every future has finished.
    pub async fn next(&mut self) -> Option<(usize, T)> {
        poll_fn(|context| {
            if self.ready.is_empty() {
                for slot in &mut self.running {
                    if let Some((region, future)) = slot {
                        if let Poll::Ready(result) = future.as_mut().poll(context) {
                            self.ready.push_back((*region, result));
                            *slot = None;
                        }
                    }
                }
            }
            match self.ready.pop_front() {
                Some(result) => Poll::Ready(Some(result)),
                None if self.running.iter().all(Option::is_none) => Poll::Ready(None),
                None => Poll::Pending,
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_channel::oneshot;

    #[test]
    fn results_come_in_the_order_they_are_ready_whatever_the_order_pushed() {
        let (slow_sender, slow) = oneshot::channel::<u32>();
        let (fast_sender, fast) = oneshot::channel::<u32>();
        let mut flight = Flight::new();
        flight.push(0, Box::pin(async move { slow.await.unwrap_or(0) }));
        flight.push(1, Box::pin(async move { fast.await.unwrap_or(0) }));
        fast_sender.send(10).unwrap();
        pollster::block_on(async {
            assert_eq!(flight.next().await, Some((1, 10)));
            slow_sender.send(20).unwrap();
            assert_eq!(flight.next().await, Some((0, 20)));
            assert_eq!(flight.next().await, None);
            flight.push(2, Box::pin(async { 30 }));
            assert_eq!(flight.next().await, Some((2, 30)));
            assert_eq!(flight.next().await, None);
        });
    }
}
