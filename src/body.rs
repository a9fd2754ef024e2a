//! A response body that reports, once, how many bytes were actually handed to the
//! connection. hyper sets `Content-Length` only after the middleware has returned, and a
//! streamed body has none at all, so the only truthful count is the one taken while the
//! frames are polled; the report runs when the body is dropped, which hyper does right
//! after the last frame is sent or as soon as the client goes away.
//!
//! Large data frames are handed out in slices of [`SLICE`] bytes (zero-copy): hyper asks
//! for the next frame only when it has room to write it, so the count stays within
//! hyper's write buffer of what reached the socket, even for a body that is one buffer of
//! many megabytes and a client that stops reading.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use http_body::{Body as _, Frame, SizeHint};

/// What became of a response body: the data bytes polled from it, and whether it reached
/// its end (false when the client disconnected or the connection was cut first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    pub bytes: u64,
    pub complete: bool,
}

type Report = Box<dyn FnOnce(Sent) + Send>;

/// The largest data frame handed to the connection at once.
pub const SLICE: usize = 64 * 1024;

/// Wraps `inner` so that `report` runs exactly once, when the body is dropped. `length`
/// is the response's `Content-Length`, if set: hyper stops polling a body once that many
/// bytes are written (streamed bodies never say they ended), so reaching it is the end.
pub fn tracked(inner: Body, length: Option<u64>, report: impl FnOnce(Sent) + Send + 'static) -> Body {
    Body::new(Tracked { inner, rest: Bytes::new(), sent: 0, length, ended: false, report: Some(Box::new(report)) })
}

struct Tracked {
    inner: Body,
    /// What is left of a data frame larger than [`SLICE`].
    rest: Bytes,
    sent: u64,
    length: Option<u64>,
    ended: bool,
    report: Option<Report>,
}

impl Tracked {
    fn next_slice(&mut self) -> Frame<Bytes> {
        let slice = self.rest.split_to(self.rest.len().min(SLICE));
        self.sent += slice.len() as u64;
        Frame::data(slice)
    }
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if !this.rest.is_empty() {
            return Poll::Ready(Some(Ok(this.next_slice())));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => {
                    this.rest = data;
                    Poll::Ready(Some(Ok(this.next_slice())))
                }
                Err(trailers) => Poll::Ready(Some(Ok(trailers))),
            },
            Poll::Ready(None) => {
                this.ended = true;
                Poll::Ready(None)
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.inner.is_end_stream()
    }

    // Passed through so hyper still sends `Content-Length` for bodies of known size.
    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let rest = self.rest.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(report) = self.report.take() {
            // hyper never polls a body that says it is already at its end (empty bodies).
            let complete =
                self.ended || (self.rest.is_empty() && self.inner.is_end_stream()) || self.length == Some(self.sent);
            report(Sent { bytes: self.sent, complete });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use http_body_util::BodyExt;

    use super::*;

    fn recorder() -> (Arc<Mutex<Vec<Sent>>>, impl FnOnce(Sent) + Send + 'static) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        (seen, move |s| sink.lock().unwrap().push(s))
    }

    #[tokio::test]
    async fn reports_the_bytes_sent_once() {
        let (seen, report) = recorder();
        let body = tracked(Body::from(vec![7u8; 1000]), None, report);
        assert_eq!(body.size_hint().exact(), Some(1000));
        assert_eq!(body.collect().await.unwrap().to_bytes().len(), 1000);
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: 1000, complete: true }]);
    }

    #[tokio::test]
    async fn large_frames_are_handed_out_in_slices() {
        let (seen, report) = recorder();
        let mut body = tracked(Body::from(vec![1u8; 3 * SLICE + 5]), None, report);
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(first.len(), SLICE);
        assert_eq!(body.size_hint().exact(), Some(2 * SLICE as u64 + 5), "Content-Length stays right");
        assert!(!body.is_end_stream());
        drop(body);
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: SLICE as u64, complete: false }]);
    }

    #[tokio::test]
    async fn a_body_dropped_early_reports_what_was_sent() {
        let (seen, report) = recorder();
        let chunks =
            futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"abc")), Ok(Bytes::from_static(b"de"))]);
        let mut body = tracked(Body::from_stream(chunks), None, report);
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&first[..], b"abc");
        drop(body);
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: 3, complete: false }]);
        let (seen, report) = recorder();
        drop(tracked(Body::empty(), None, report));
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: 0, complete: true }]);
    }
}
