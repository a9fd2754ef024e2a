//! Response bodies that carry their share of the memory budget until they are sent (or
//! the connection drops), and bodies streamed band by band from the read path.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use http_body::{Frame, SizeHint};

use zarrd_core::ops::budget::Reservation;
use zarrd_core::read::ReadError;

/// A body holding a reservation: the memory of a response a slow client has not taken
/// yet stays counted in the budget, and is given back when hyper drops the body.
struct Held {
    inner: Body,
    _reservation: Reservation,
}

impl HttpBody for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// `body`, holding `reservation` until it is dropped.
pub fn held(body: Body, reservation: Reservation) -> Body {
    if reservation.bytes() == 0 {
        return body;
    }
    Body::new(Held { inner: body, _reservation: reservation })
}

/// `response` with its body holding `reservation` until the body is dropped (sent, or
/// abandoned with its connection).
pub fn holding(mut response: axum::response::Response, reservation: Reservation) -> axum::response::Response {
    let body = std::mem::take(response.body_mut());
    *response.body_mut() = held(body, reservation);
    response
}

/// `head` (e.g. an `.npy` header), then the bands from the read path, `length` bytes in
/// all. A failed band, or bands that stop short (the task making them died), end the body
/// with an error, which makes hyper abort the connection: the client sees a cut body (under
/// any encoding), never a wrong byte or a short body that looks whole.
pub fn head_and_bands(
    head: Vec<u8>,
    mut bands: tokio::sync::mpsc::Receiver<Result<Bytes, ReadError>>,
    length: u64,
) -> Body {
    let first = futures::stream::iter((!head.is_empty()).then(|| Ok::<_, ReadError>(Bytes::from(head))));
    let rest = futures::stream::poll_fn(move |cx| bands.poll_recv(cx));
    crate::http::body::streamed(futures::StreamExt::chain(first, rest), length)
}

/// `head` then `data`, sent without copying `data` (a cached chunk's bytes), with its
/// exact length known up front (so hyper sends `Content-Length`).
pub fn head_and(head: Vec<u8>, data: Bytes) -> Body {
    Body::new(HeadAnd { frames: [Some(Bytes::from(head)), Some(data)] })
}

struct HeadAnd {
    frames: [Option<Bytes>; 2],
}

impl HttpBody for HeadAnd {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let next = self.get_mut().frames.iter_mut().find_map(Option::take);
        Poll::Ready(next.map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.frames.iter().all(Option::is_none)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.frames.iter().flatten().map(|b| b.len() as u64).sum())
    }
}
