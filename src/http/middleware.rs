//! Cross-cutting HTTP behaviour (`docs/api.md` "HTTP behaviour"), outermost first:
//! request ids, structured access logs and metrics; CORS; access control (`auth`: before
//! any cache and every route, inside CORS so that its refusals carry CORS headers and
//! preflights pass); validators of finished answers (`conditional::validators`: weak tags
//! for compressed bodies, `If-Match`); hot responses (`responses`); response compression;
//! and the guard (`guard`) that bounds in-flight requests (503 + Retry-After) and their duration (504).
//! Connection-level limits (timeouts, the connection cap, shutdown) are in `server`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tracing::{Instrument, Level};

use crate::config::Config;
use crate::error::Error;
pub use crate::http::compress::NoCompress;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Response headers a browser script may read.
const EXPOSED: [HeaderName; 13] = [
    HeaderName::from_static("zarr-shape"),
    HeaderName::from_static("zarr-level"),
    HeaderName::from_static("zarr-selection"),
    HeaderName::from_static("zarr-data-type"),
    HeaderName::from_static("zarr-chunk-key"),
    HeaderName::from_static("zarr-byte-range"),
    header::ETAG,
    header::CONTENT_RANGE,
    header::ACCEPT_RANGES,
    header::LAST_MODIFIED,
    header::CONTENT_LENGTH,
    header::WWW_AUTHENTICATE,
    REQUEST_ID,
];

/// Wraps the router in every layer, configured from the state's config.
///
/// The layers are one stack of concrete services given to the router once: each route
/// then holds one boxed stack. Given one at a time (`Router::layer` per layer), every
/// layer boxed the service beneath it, and as each `from_fn` layer clones what is beneath
/// it per request, a request cloned that chain of boxes over and over: ~110 of the 177
/// allocations of a `/healthz` request (docs/performance.md "Per-request cost, counted").
/// Outermost first, as in the module's summary.
pub fn apply(router: Router, state: &crate::http::state::AppState) -> Router {
    let config: &Config = &state.config;
    // Layers get the state handle (one reference count, the thread's own) rather than
    // their own `Arc`s, which every request on every core would clone.
    let stack = tower::ServiceBuilder::new()
        .layer(from_fn(observe))
        .layer(cors(&config.http.cors_origins))
        .layer(from_fn_with_state(state.clone(), crate::http::auth::layer))
        .layer(from_fn(crate::http::conditional::validators))
        .layer(from_fn_with_state(state.clone(), crate::http::responses::layer::<crate::http::state::AppState>))
        .layer(crate::http::compress::compression())
        .layer(from_fn_with_state(state.clone(), crate::http::guard::layer::<crate::http::state::AppState>))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(from_fn(problem_documents));
    router.layer(stack)
}

fn cors(origins: &[String]) -> CorsLayer {
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::GET, Method::HEAD, Method::POST])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::RANGE,
            header::IF_NONE_MATCH,
            header::IF_MATCH,
            header::IF_RANGE,
            header::IF_MODIFIED_SINCE,
            header::IF_UNMODIFIED_SINCE,
            header::ACCEPT,
            REQUEST_ID,
        ])
        .expose_headers(EXPOSED)
        .max_age(Duration::from_hours(1))
}

/// A panic in a handler is a bug; the client still gets a 500 problem document and the
/// connection survives. The panic hook (`panics`) has counted and logged it with the
/// request id; the client learns only that id, not the panic's message.
#[allow(clippy::needless_pass_by_value)] // the signature CatchPanicLayer::custom requires
fn panic_response(_panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    Error::Status(
        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
        "an internal error (a bug) stopped this request; it is logged under this response's X-Request-Id".into(),
    )
    .into_response()
}

/// Errors produced outside the handlers (axum's extractor rejections such as a path that
/// is not UTF-8, 405 Method Not Allowed) become problem documents too.
async fn problem_documents(request: Request, next: Next) -> Response {
    if let Some(problem) = request.extensions().get::<crate::http::connections::HostProblem>() {
        return Error::BadRequest(format!("{} (RFC 9112 §3.2)", problem.detail())).into_response();
    }
    let response = next.run(request).await;
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(crate::error::PROBLEM_JSON.as_bytes()));
    if !(status.is_client_error() || status.is_server_error()) || is_problem {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let detail = if text.trim().is_empty() {
        match status {
            // axum sets `Allow` after this layer on some routes (those of one method):
            // the header, not this text, is what names the methods then.
            axum::http::StatusCode::METHOD_NOT_ALLOWED => {
                match parts.headers.get(header::ALLOW).and_then(|v| v.to_str().ok()) {
                    Some(allow) => format!("this route answers only {allow}"),
                    None => "this route does not answer this method; the Allow header names those it does".to_owned(),
                }
            }
            _ => status.canonical_reason().unwrap_or("error").to_owned(),
        }
    } else {
        text
    };
    let mut problem = Error::Status(status, detail).into_response();
    if let Some(allow) = parts.headers.get(header::ALLOW) {
        problem.headers_mut().insert(header::ALLOW, allow.clone());
    }
    problem
}

/// The next block of request numbers to hand to a thread.
static NEXT_BLOCK: AtomicU64 = AtomicU64::new(0);
/// Request numbers a thread takes at once: one shared counter bumped by every request on
/// every core moved its cache line between cores on each request; a block per thread
/// touches it once per [`ID_BLOCK`] requests. Numbers stay unique within the process.
const ID_BLOCK: u64 = 1024;
/// The process id, asked once: `std::process::id()` is a system call every time.
static PROCESS_ID: std::sync::LazyLock<u32> = std::sync::LazyLock::new(std::process::id);

/// A request number unique within the process (increasing per thread).
fn next_request_number() -> u64 {
    thread_local!(static NEXT: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) });
    NEXT.with(|next| {
        let (mut n, end) = next.get();
        if n == end {
            n = NEXT_BLOCK.fetch_add(1, Ordering::Relaxed) * ID_BLOCK + 1;
            next.set((n + 1, n + ID_BLOCK));
        } else {
            next.set((n + 1, end));
        }
        n
    })
}

/// A client-supplied id is kept when it is short printable ASCII; otherwise one is made.
fn request_id(request: &Request) -> String {
    request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| format!("{:x}-{:x}", *PROCESS_ID, next_request_number()), str::to_owned)
}

/// Request id on the request, the response and the log span; one access-log line and
/// the request metrics per request, once the body has been sent or abandoned, so they
/// carry the bytes actually sent (hyper adds `Content-Length` only after this layer, and
/// streamed bodies have none) and the time to the last byte.
async fn observe(mut request: Request, next: Next) -> Response {
    let id = request_id(&request);
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let route = crate::http::route::label(&request).to_owned();
    let id_header = HeaderValue::from_str(&id).ok();
    if let Some(v) = &id_header {
        request.headers_mut().insert(REQUEST_ID, v.clone());
    }
    let span = tracing::info_span!("request", request_id = %id, %method, uri = %request.uri(), %route);
    let mut response = next.run(request).instrument(span.clone()).await;
    if let Some(v) = id_header {
        response.headers_mut().insert(REQUEST_ID, v);
    }
    let status = response.status().as_u16();
    let length =
        response.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    // A HEAD response is whole once its headers are sent: hyper never polls its body.
    let head = method == Method::HEAD;
    response.map(|body| {
        crate::http::body::tracked(body, length, span.clone(), move |sent| {
            let elapsed = started.elapsed();
            let complete = sent.complete || head;
            crate::telemetry::requests::request(&route, status, elapsed.as_secs_f64(), sent.bytes);
            // Probes and scrapes arrive every few seconds from every load balancer and
            // kubelet and would drown the access log: at DEBUG unless they fail.
            let level = if crate::http::route::is_ops(&path) && status < 400 { Level::DEBUG } else { Level::INFO };
            if level > tracing::level_filters::LevelFilter::current() {
                return;
            }
            after_response(move || {
                let _entered = span.enter();
                macro_rules! access {
                    ($level:expr) => {
                        tracing::event!(
                            target: "zarrd::access",
                            $level,
                            status,
                            route = %route,
                            latency_ms = elapsed.as_secs_f64() * 1000.0,
                            bytes = sent.bytes,
                            complete,
                            "{method} {path}"
                        )
                    };
                }
                if level == Level::DEBUG {
                    access!(Level::DEBUG);
                } else {
                    access!(Level::INFO);
                }
            });
        })
    })
}

/// Runs `work` in a task of its own, once the task that calls it next yields: a finished
/// response's access-log line (a tenth of the instructions of a point's series from cached
/// chunks, most of them tracing-subscriber's formatting) then follows the response's write
/// instead of delaying it — hyper drops a body, which reports, before it writes out the
/// last bytes. The work is never lost: a task dropped unrun (the runtime shutting down)
/// runs it as it is dropped, as does a caller outside any runtime.
fn after_response(work: impl FnOnce() + Send + 'static) {
    struct Pending<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Pending<F> {
        fn drop(&mut self) {
            if let Some(work) = self.0.take() {
                work();
            }
        }
    }
    let pending = Pending(Some(work));
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move { drop(pending) });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counter() -> (Arc<AtomicUsize>, impl FnOnce() + Send + 'static) {
        let runs = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&runs);
        (runs, move || {
            seen.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn work_after_a_response_runs_once_the_task_yields_and_is_never_lost() {
        // Outside any runtime: at once.
        let (runs, work) = counter();
        super::after_response(work);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // On a runtime: not before the calling task yields, then once.
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let (runs, work) = counter();
        runtime.block_on(async {
            super::after_response(work);
            assert_eq!(runs.load(Ordering::SeqCst), 0, "it ran before the response could be written");
            tokio::task::yield_now().await;
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // A runtime shut down before the work's turn: run as its task is dropped.
        let (runs, work) = counter();
        runtime.block_on(async { super::after_response(work) });
        drop(runtime);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn request_numbers_are_unique_across_threads() {
        let threads: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(|| (0..3000).map(|_| super::next_request_number()).collect::<Vec<u64>>()))
            .collect();
        let per_thread: Vec<Vec<u64>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        for numbers in &per_thread {
            assert!(numbers.windows(2).all(|w| w[0] < w[1]), "a thread's numbers increase");
        }
        let mut all: Vec<u64> = per_thread.concat();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a request number was handed out twice");
        assert!(!all.contains(&0));
    }
}
