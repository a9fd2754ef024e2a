//! Problem documents for the requests hyper refuses before zarrd sees them: a request line
//! longer than the 65,534 bytes a URI may have (414), a head with too many or too large
//! header fields (431) and a request that does not parse (400). hyper answers those itself
//! with an empty body and offers no hook, so the connection's writes are watched for exactly
//! that answer — a head of one of these statuses with `content-length: 0` and no
//! `content-type`, which zarrd's own responses never are — and it is replaced by the same
//! head with a problem document, as every other error is.

use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::Error;

/// A connection's stream, its writes watched for hyper's own error answers.
pub struct ProblemIo<S> {
    inner: S,
    /// A replacement being written, and how much of it is written.
    pending: Option<(Vec<u8>, usize)>,
}

impl<S> ProblemIo<S> {
    pub fn new(inner: S) -> Self {
        Self { inner, pending: None }
    }
}

/// The replacement for `head` when it is one of hyper's empty error answers.
fn replacement(head: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(head).ok()?;
    let rest = text.strip_prefix("HTTP/1.1 ")?;
    if !text.ends_with("\r\n\r\n") || !text.contains("\r\ncontent-length: 0\r\n") || text.contains("content-type:") {
        return None;
    }
    let (status, detail) = match rest.get(..3)? {
        "414" => (
            StatusCode::URI_TOO_LONG,
            "the request line is longer than the 65534 bytes this server reads: select with ranges (`0:100`) rather than long lists",
        ),
        // hyper's limits on the head: at most 100 header fields, and the whole head (request
        // line included) within its read buffer of 8 KiB + 100 × 4 KiB.
        "431" => (
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "the request head is too large: at most 100 header fields, and request line and headers together under 417792 bytes (a request line over 65534 bytes alone gets 414)",
        ),
        "400" => {
            (StatusCode::BAD_REQUEST, "the request is not valid HTTP/1.1 (its request line or a header does not parse)")
        }
        _ => return None,
    };
    let body = Error::Status(status, detail.to_owned()).problem();
    let reason = status.canonical_reason().unwrap_or("Error");
    Some(
        format!(
            "HTTP/1.1 {} {reason}\r\ncontent-type: application/problem+json\r\ncache-control: no-store\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            status.as_u16(),
            body.len()
        )
        .into_bytes(),
    )
}

impl<S: AsyncWrite + Unpin> ProblemIo<S> {
    /// Writes what is left of a replacement.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while let Some((bytes, written)) = &mut self.pending {
            if *written == bytes.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ProblemIo<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ProblemIo<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        ready!(self.drain(cx))?;
        if let Some(bytes) = replacement(buf) {
            // Taken whole: the rest is written by the next calls (and flush/shutdown).
            self.pending = Some((bytes, 0));
            let _ = self.drain(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        ready!(self.drain(cx))?;
        // hyper's error answer is a head alone, in one slice.
        if let [only] = bufs
            && let Some(bytes) = replacement(only)
        {
            self.pending = Some((bytes, 0));
            let _ = self.drain(cx)?;
            return Poll::Ready(Ok(only.len()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_empty_error_answers_are_replaced() {
        let hyper_414 = b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\ndate: Wed, 25 Nov 2026 14:50:51 GMT\r\n\r\n";
        let out = String::from_utf8(replacement(hyper_414).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let doc: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!((doc["status"].as_u64(), doc["title"].as_str()), (Some(414), Some("URI Too Long")));
        let hyper_400 = b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert!(replacement(hyper_400).is_some());
        // zarrd's own answers, other statuses and partial heads are left alone.
        for own in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/problem+json\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 304 Not Modified\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
        ] {
            assert!(replacement(own).is_none(), "{}", String::from_utf8_lossy(own));
        }
    }
}
