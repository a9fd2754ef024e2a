//! What the connection layer knows of each open connection: its requests in flight and
//! since when it has been idle ([`Activity`]), and the registry of open connections
//! ([`Open`]) from which, at the connection cap, the one idle the longest is asked to close
//! so that a new client gets in, as nginx does with idle keep-alive connections.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio::time::Instant as Clock;

/// Connections beyond `http.max_connections` kept for health and readiness probes, for
/// when every connection is busy: they answer `/healthz` and `/readyz` (503 to anything
/// else) and close after one response.
pub const PROBE_RESERVE: usize = 8;

/// A request from a connection that names no single host: an HTTP/1.1 request without a
/// `Host` header, or with several (RFC 9112 §3.2: answered 400). HTTP/2 names it in the
/// URI's authority. Marked by the connection layer and answered by the router's outermost
/// error layer, so the answer is logged and counted like any other.
#[derive(Debug, Clone, Copy)]
pub struct HostProblem(&'static str);

impl HostProblem {
    pub fn of<B>(request: &axum::http::Request<B>) -> Option<Self> {
        if request.version() != axum::http::Version::HTTP_11 {
            return None;
        }
        match request.headers().get_all(axum::http::header::HOST).iter().count() {
            0 if request.uri().authority().is_none() => Some(Self("an HTTP/1.1 request must carry a Host header")),
            0 | 1 => None,
            _ => Some(Self("an HTTP/1.1 request must carry exactly one Host header, not several")),
        }
    }

    pub fn detail(self) -> &'static str {
        self.0
    }
}

/// Marks the requests of a connection over the probes' reserve: the request guard
/// (`middleware`) answers anything but a probe there with 503, through the same layers
/// (request id, access log, metrics, CORS) as every other response.
#[derive(Debug, Clone, Copy)]
pub struct ProbeOnly;

/// A connection's place: under the cap, or one of the probes' reserve.
pub enum Slot {
    Full(OwnedSemaphorePermit),
    Probe(OwnedSemaphorePermit),
}

/// The open connections, each with its activity and a signal asking it to close.
#[derive(Default)]
pub struct Open {
    next: u64,
    members: HashMap<u64, Member>,
}

struct Member {
    activity: Arc<Activity>,
    close: Arc<Notify>,
    asked: bool,
}

/// A connection's membership of [`Open`]; it leaves when this is dropped.
pub struct Membership {
    open: Arc<Mutex<Open>>,
    id: u64,
}

impl Open {
    fn lock(open: &Mutex<Self>) -> std::sync::MutexGuard<'_, Self> {
        open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a connection; `close` is notified when it should close to make room.
    pub fn join(open: &Arc<Mutex<Self>>, activity: Arc<Activity>, close: Arc<Notify>) -> Membership {
        let mut o = Self::lock(open);
        let id = o.next;
        o.next += 1;
        o.members.insert(id, Member { activity, close, asked: false });
        Membership { open: Arc::clone(open), id }
    }

    /// Asks the connection idle the longest (no request in flight) to close; `false` when
    /// every connection is busy (or already asked).
    pub fn close_oldest_idle(open: &Mutex<Self>) -> bool {
        let mut o = Self::lock(open);
        let oldest = o
            .members
            .iter()
            .filter(|(_, m)| !m.asked)
            .filter_map(|(&id, m)| m.activity.idle_since().map(|since| (since, id)))
            .min();
        let Some((_, id)) = oldest else { return false };
        if let Some(member) = o.members.get_mut(&id) {
            member.asked = true;
            member.close.notify_one();
        }
        true
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        Open::lock(&self.open).members.remove(&self.id);
    }
}

/// Requests in flight on one connection and since when it has had none.
pub struct Activity {
    state: Mutex<ActivityState>,
    changed: Notify,
}

struct ActivityState {
    in_flight: usize,
    idle_since: Clock,
    served: bool,
}

/// One request in flight; dropped when its response body is done.
pub struct Busy(Arc<Activity>);

impl Default for Activity {
    fn default() -> Self {
        Self::new()
    }
}

impl Activity {
    pub fn new() -> Self {
        Self {
            state: Mutex::new(ActivityState { in_flight: 0, idle_since: Clock::now(), served: false }),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ActivityState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn begin(self: &Arc<Self>) -> Busy {
        {
            let mut s = self.lock();
            s.in_flight += 1;
            s.served = true;
        }
        self.changed.notify_one();
        Busy(Arc::clone(self))
    }

    /// Since when the connection has had no request in flight; `None` while one is.
    pub fn idle_since(&self) -> Option<Clock> {
        let s = self.lock();
        (s.in_flight == 0).then_some(s.idle_since)
    }

    /// When the connection, idle now, should be closed; `None` while a request is in flight.
    pub fn deadline(&self, first_request: Duration, keep_alive: Duration) -> Option<Clock> {
        let s = self.lock();
        (s.in_flight == 0).then(|| s.idle_since + if s.served { keep_alive } else { first_request })
    }

    /// Resolves once the connection has been idle too long. `notify_one` keeps a wake-up
    /// for a change that happens between reading the state and waiting, so none is lost.
    pub async fn idle_expired(&self, first_request: Duration, keep_alive: Duration) {
        loop {
            match self.deadline(first_request, keep_alive) {
                None => self.changed.notified().await,
                Some(deadline) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {
                            if self.deadline(first_request, keep_alive).is_some_and(|d| d <= Clock::now()) {
                                return;
                            }
                        }
                        () = self.changed.notified() => {}
                    }
                }
            }
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        {
            let mut s = self.0.lock();
            s.in_flight -= 1;
            if s.in_flight == 0 {
                s.idle_since = Clock::now();
            }
        }
        self.0.changed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connection_is_idle_only_without_requests_in_flight() {
        let (first, keep_alive) = (Duration::from_millis(20), Duration::from_hours(1));
        let bound = Duration::from_secs(5);
        let activity = Arc::new(Activity::new());
        tokio::time::timeout(bound, activity.idle_expired(first, keep_alive)).await.expect("idle before a request");
        let busy = activity.begin();
        assert!(activity.deadline(first, keep_alive).is_none());
        let waited = tokio::time::timeout(Duration::from_millis(200), activity.idle_expired(first, keep_alive)).await;
        assert!(waited.is_err(), "a request in flight keeps the connection");
        drop(busy);
        let deadline = activity.deadline(first, keep_alive).unwrap();
        assert!(deadline > Clock::now() + Duration::from_mins(1), "after a response the keep-alive time applies");
        tokio::time::timeout(bound, activity.idle_expired(first, first)).await.expect("idle after the response");
    }
}
