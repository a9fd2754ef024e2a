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
//!
//! Every body zarrd sends is safe to poll after its end: the compression layer polls its
//! inner body once more after it ended, and a stream that panics then (`futures`' `unfold`)
//! cut every compressed large body short. Streamed bodies are built only by [`streamed`]
//! (clippy's `disallowed-methods` refuses `Body::from_stream`), which ends for good and
//! checks the declared length, and by [`pieces`], made on demand by the handler's own code; [`tracked`] bodies turn a panic while polling into an error
//! that aborts the connection, so the client sees a cut body, never a complete-looking one.

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use futures::Stream;
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
/// `span` is entered while `inner` is polled, so that a panic there is logged with the
/// request it belongs to.
pub fn tracked(
    inner: Body,
    length: Option<u64>,
    span: tracing::Span,
    report: impl FnOnce(Sent) + Send + 'static,
) -> Body {
    Body::new(Tracked {
        inner,
        rest: Bytes::new(),
        sent: 0,
        length,
        ended: false,
        failed: false,
        span,
        report: Some(Box::new(report)),
    })
}

struct Tracked {
    inner: Body,
    /// What is left of a data frame larger than [`SLICE`].
    rest: Bytes,
    sent: u64,
    length: Option<u64>,
    ended: bool,
    /// `inner` failed (an error frame, or a panic): it is never polled again, and the body
    /// is reported incomplete.
    failed: bool,
    span: tracing::Span,
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
        if this.ended || this.failed {
            return Poll::Ready(None);
        }
        let polled = {
            let _entered = this.span.enter();
            std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut this.inner).poll_frame(cx)))
        };
        let Ok(polled) = polled else {
            // The panic hook has counted and logged it; the error aborts the connection.
            this.failed = true;
            return Poll::Ready(Some(Err(axum::Error::new("the response body panicked"))));
        };
        match polled {
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
            Poll::Ready(Some(Err(e))) => {
                // The connection is cut; the body is over, and it is not whole.
                this.failed = true;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && (self.ended || self.failed || self.inner.is_end_stream())
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
            let complete = !self.failed
                && (self.ended
                    || (self.rest.is_empty() && self.inner.is_end_stream())
                    || self.length == Some(self.sent));
            report(Sent { bytes: self.sent, complete });
        }
    }
}

/// A body of `length` bytes streamed from `stream`. It ends for good (polled after its end it
/// answers `None` again), and it holds the stream to its word: a stream that ends early or
/// runs long ends the body with an error, which aborts the connection — without it, a
/// producer that stopped early (a task that died) would end a chunked or compressed body
/// cleanly, and the client would take a cut body for a whole one.
pub fn streamed<S, E>(stream: S, length: u64) -> Body
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    Body::new(Streamed { stream: Box::pin(stream), remaining: length, done: false })
}

struct Streamed<E> {
    stream: Pin<Box<dyn Stream<Item = Result<Bytes, E>> + Send>>,
    remaining: u64,
    done: bool,
}

impl<E: Into<Box<dyn std::error::Error + Send + Sync>>> http_body::Body for Streamed<E> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        let item = match this.stream.as_mut().poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        let (result, done) = match item {
            Some(Ok(data)) if data.len() as u64 <= this.remaining => {
                this.remaining -= data.len() as u64;
                (Some(Ok(Frame::data(data))), false)
            }
            Some(Ok(data)) => {
                (Some(Err(axum::Error::new(format!("a body stream ran {} bytes long", data.len())))), true)
            }
            Some(Err(e)) => (Some(Err(axum::Error::new(e))), true),
            None if this.remaining == 0 => (None, true),
            None => (Some(Err(axum::Error::new(format!("a body stream ended {} bytes short", this.remaining)))), true),
        };
        this.done = done;
        Poll::Ready(result)
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    /// At least what is left, never exact: layers that keep whole in-memory bodies
    /// (`responses`) leave streamed ones alone. The handler sets `Content-Length`.
    fn size_hint(&self) -> SizeHint {
        let mut hint = SizeHint::new();
        hint.set_lower(if self.done { 0 } else { self.remaining });
        hint
    }
}

/// A body of pieces made on demand by `next` (`None`: the end), for text whose length is
/// only known once written (EDR answers): each piece is made when hyper has room for it,
/// so a large answer is never held whole. It ends for good, and nothing but `next` feeds
/// it, so it cannot end early the way a stream fed by another task can.
pub fn pieces(next: impl FnMut() -> Option<Bytes> + Send + 'static) -> Body {
    Body::new(Pieces { next: Box::new(next), done: false })
}

struct Pieces {
    next: Box<dyn FnMut() -> Option<Bytes> + Send>,
    done: bool,
}

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let piece = (self.next)();
        self.done = piece.is_none();
        Poll::Ready(piece.map(|p| Ok(Frame::data(p))))
    }

    fn is_end_stream(&self) -> bool {
        self.done
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
        let body = tracked(Body::from(vec![7u8; 1000]), None, tracing::Span::none(), report);
        assert_eq!(body.size_hint().exact(), Some(1000));
        assert_eq!(body.collect().await.unwrap().to_bytes().len(), 1000);
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: 1000, complete: true }]);
    }

    #[tokio::test]
    async fn large_frames_are_handed_out_in_slices() {
        let (seen, report) = recorder();
        let mut body = tracked(Body::from(vec![1u8; 3 * SLICE + 5]), None, tracing::Span::none(), report);
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
        let mut body = tracked(streamed(chunks, 5), None, tracing::Span::none(), report);
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&first[..], b"abc");
        drop(body);
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: 3, complete: false }]);
        let (seen, report) = recorder();
        drop(tracked(Body::empty(), None, tracing::Span::none(), report));
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: 0, complete: true }]);
    }

    /// Polled again after its end, a body answers `None` again (the compression layer does
    /// this; a stream that panicked then cut every compressed large body short).
    #[tokio::test]
    async fn streamed_bodies_end_for_good() {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
        tx.send(Ok(Bytes::from_static(b"abc"))).await.unwrap();
        drop(tx);
        let bands = futures::stream::unfold((), move |()| {
            let next = rx.try_recv().ok();
            async move { next.map(|b| (b, ())) }
        });
        let mut body = streamed(bands, 3);
        assert_eq!(body.size_hint().lower(), 3);
        assert_eq!(&body.frame().await.unwrap().unwrap().into_data().unwrap()[..], b"abc");
        for _ in 0..3 {
            assert!(body.frame().await.is_none());
            assert!(body.is_end_stream());
        }
    }

    #[tokio::test]
    async fn streamed_bodies_are_held_to_their_length() {
        let short = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"ab"))]);
        let err = streamed(short, 3).collect().await.unwrap_err();
        assert!(err.to_string().contains("1 bytes short"), "{err}");
        let long = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"abcd"))]);
        let err = streamed(long, 3).collect().await.unwrap_err();
        assert!(err.to_string().contains("long"), "{err}");
        let failing = futures::stream::iter([Err::<Bytes, _>(std::io::Error::other("storage went away"))]);
        assert!(streamed(failing, 3).collect().await.unwrap_err().to_string().contains("storage went away"));
    }

    /// A panic while a body is polled ends it with an error (the connection is aborted)
    /// and it is reported incomplete; it is never polled again.
    #[tokio::test]
    async fn a_panicking_body_ends_with_an_error() {
        let (seen, report) = recorder();
        let mut n = 0;
        let chunks = futures::stream::poll_fn(move |_| {
            n += 1;
            assert!(n < 2, "injected panic in a body stream");
            std::task::Poll::Ready(Some(Ok::<_, std::io::Error>(Bytes::from_static(b"ab"))))
        });
        let mut body = tracked(streamed(chunks, 4), None, tracing::Span::none(), report);
        assert_eq!(&body.frame().await.unwrap().unwrap().into_data().unwrap()[..], b"ab");
        assert!(body.frame().await.unwrap().is_err());
        assert!(body.frame().await.is_none());
        drop(body);
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: 2, complete: false }]);
        // An error frame (a stream cut short) ends the body as incomplete too, even when it
        // is polled again after it.
        let (seen, report) = recorder();
        let short = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"ab"))]);
        let mut body = tracked(streamed(short, 4), None, tracing::Span::none(), report);
        assert!(body.frame().await.unwrap().is_ok());
        assert!(body.frame().await.unwrap().is_err());
        assert!(body.frame().await.is_none());
        drop(body);
        assert_eq!(*seen.lock().unwrap(), [Sent { bytes: 2, complete: false }]);
    }
}
