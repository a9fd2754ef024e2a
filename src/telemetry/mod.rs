//! What the server counts and writes about itself: each request per route (`requests`), the
//! connections and access-control refusals, `GET /metrics` (the core's series with these),
//! and the log writer (`logbuf`: the access log and every other line).

pub mod logbuf;
pub mod requests;

/// Everything for `GET /metrics`: the core's series (storage, caches, the CPU pool) and the
/// requests served per route.
pub fn render() -> String {
    let mut text = zarrd_core::ops::metrics::render();
    text.push_str(&requests::render());
    text
}

/// A request refused by access control (`zarrd_auth_denied_total{reason}`, one of a fixed
/// set of reasons: `auth::Denied::reason`).
pub fn auth_denied(reason: &'static str) {
    metrics::counter!("zarrd_auth_denied_total", "reason" => reason).increment(1);
}

/// An accept error that paused accepting (out of file descriptors or memory).
pub fn accept_error() {
    metrics::counter!("zarrd_accept_errors_total").increment(1);
}

/// An idle connection closed at the connection cap to let a new client in.
pub fn connection_closed_for_room() {
    metrics::counter!("zarrd_connections_closed_for_room_total").increment(1);
}

/// Counts one open client connection until the returned guard is dropped.
pub fn connection_opened() -> OpenConnection {
    metrics::gauge!("zarrd_open_connections").increment(1.0);
    OpenConnection
}

pub struct OpenConnection;

impl Drop for OpenConnection {
    fn drop(&mut self) {
        metrics::gauge!("zarrd_open_connections").decrement(1.0);
    }
}
