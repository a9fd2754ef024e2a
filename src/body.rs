//! A response body that reports, once, how many bytes were actually handed to the
//! connection. hyper sets `Content-Length` only after the middleware has returned, and a
//! streamed body has none at all, so the only truthful count is the one taken while the
//! frames are polled; the report runs when the body is dropped, which hyper does right
//! after the last frame is sent or as soon as the client goes away.

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

/// Wraps `inner` so that `report` runs exactly once, when the body is dropped.
pub fn tracked(inner: Body, report: impl FnOnce(Sent) + Send + 'static) -> Body {
    Body::new(Tracked { inner, sent: 0, ended: false, report: Some(Box::new(report)) })
}

struct Tracked {
    inner: Body,
    sent: u64,
    ended: bool,
    report: Option<Report>,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.sent += data.len() as u64;
                }
            }
            Poll::Ready(None) => this.ended = true,
            Poll::Ready(Some(Err(_))) | Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    // Passed through so hyper still sends `Content-Length` for bodies of known size.
    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(report) = self.report.take() {
            // hyper never polls a body that says it is already at its end (empty bodies).
            let complete = self.ended || self.inner.is_end_stream();
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
        let body = tracked(Body::from(vec![7u8; 1000]), report);
        assert_eq!(body.size_hint().exact(), Some(1000));
        assert_eq!(body.collect().await.unwrap().to_bytes().len(), 1000);
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: 1000, complete: true }]);
    }

    #[tokio::test]
    async fn a_body_dropped_early_reports_what_was_sent() {
        let (seen, report) = recorder();
        let chunks =
            futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"abc")), Ok(Bytes::from_static(b"de"))]);
        let mut body = tracked(Body::from_stream(chunks), report);
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&first[..], b"abc");
        drop(body);
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: 3, complete: false }]);
        let (seen, report) = recorder();
        drop(tracked(Body::empty(), report));
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: 0, complete: true }]);
    }
}
