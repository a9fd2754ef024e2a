//! The connection layer in front of the router: an explicit accept loop over hyper-util's
//! HTTP/1 + HTTP/2 connection builder, so that a server exposed to the internet bounds
//! what a client can hold:
//!
//! - **Header-read timeout**: hyper's HTTP/1 `header_read_timeout` closes a connection
//!   whose request headers do not arrive in time (slowloris). hyper starts that timer
//!   whenever an HTTP/1 connection waits for the next request, so it also closes HTTP/1
//!   keep-alive connections idle for longer.
//! - **Idle timeout**: hyper has no idle timeout for HTTP/2 and does not time the protocol
//!   detection that precedes either protocol (a client that connects and sends nothing
//!   waits there forever). So each connection has a watchdog that counts its requests in
//!   flight (until their response bodies are sent or dropped) and closes it gracefully
//!   when it has had none for `header_read_timeout_secs` before its first request, or for
//!   `keep_alive_secs` after a response. HTTP/2 keep-alive pings were not used: they
//!   detect dead peers, not idle ones, and a dead peer is idle too.
//! - **Connection cap**: a semaphore permit per connection, one semaphore for the process
//!   ([`Cap`], shared by every listener), so at the cap further clients wait in the
//!   kernel's backlog instead of using up file descriptors (the default cap leaves
//!   [`FD_HEADROOM`] of them for storage sockets and files; [`raise_fd_limit`] first raises
//!   the soft limit to the hard one).
//! - **Accept errors** (EMFILE, ENFILE, ENOBUFS…) pause accepting for [`ACCEPT_BACKOFF`]
//!   and are logged at most once a second, never in a hot loop.
//! - **A router per thread**: every request is served by a router of the thread it runs
//!   on (made by the `app` function on the thread's first request), so the reference
//!   counts axum and tower bump for each request (the router, its layers, the state) are
//!   the thread's own and never move between cores.
//! - **Bounded shutdown**: when `shutdown` resolves the listener closes, every connection
//!   is asked to finish (HTTP/1 after its current response, HTTP/2 with GOAWAY), and
//!   those still open after `shutdown_timeout_secs` (a stalled client, a slow reader) are
//!   closed, so the process always exits.

use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{HeaderValue, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use crate::http::parse_errors::ProblemIo;
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;
use tower::ServiceExt;

use crate::config::{FD_HEADROOM, HttpConfig, default_max_connections};
use crate::http::connections::{Activity, HostProblem, Open, PROBE_RESERVE, ProbeOnly, Slot};

/// How long accepting pauses after an accept error that is not about one connection.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How long an idle connection asked to make room may take to close before it is cut.
const MAKE_ROOM_GRACE: Duration = Duration::from_millis(100);

/// The connection limits, resolved from `http.*` and the open-file limit.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub header_read_timeout: Duration,
    pub keep_alive: Duration,
    pub max_connections: usize,
    pub shutdown_timeout: Duration,
}

impl Settings {
    /// `fd_limit` is the soft open-file limit in force (see [`raise_fd_limit`]).
    pub fn new(http: &HttpConfig, fd_limit: u64) -> Self {
        let max_connections = http.max_connections.unwrap_or_else(|| default_max_connections(fd_limit));
        if max_connections as u64 > fd_limit.saturating_sub(FD_HEADROOM.min(fd_limit / 2)) {
            tracing::warn!(
                max_connections,
                fd_limit,
                "http.max_connections leaves few file descriptors for storage; accepts may fail and back off"
            );
        }
        Self {
            header_read_timeout: Duration::from_secs(http.header_read_timeout_secs),
            keep_alive: Duration::from_secs(http.keep_alive_secs),
            max_connections,
            shutdown_timeout: Duration::from_secs(http.shutdown_timeout_secs),
        }
    }
}

/// The connection cap and what enforces it, one for the whole process: shared by every
/// listener (one per core with `http.runtime = "per_core"`), so the cap, the probes'
/// reserve and the choice of the connection idle the longest span all of them, however the
/// kernel spreads clients over the listeners. Its parts work across runtimes.
#[derive(Clone)]
pub struct Cap {
    permits: Arc<Semaphore>,
    reserve: Arc<Semaphore>,
    open: Arc<Mutex<Open>>,
}

impl Cap {
    pub fn new(settings: &Settings) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(settings.max_connections)),
            reserve: Arc::new(Semaphore::new(PROBE_RESERVE)),
            open: Arc::new(Mutex::new(Open::default())),
        }
    }
}

/// `n` listeners on `addr`, each its own socket with `SO_REUSEPORT`, so the kernel spreads
/// new connections over them (one per core-thread, `http.runtime = "per_core"`). A port 0
/// is chosen once, by the first.
pub fn reuse_port_listeners(addr: std::net::SocketAddr, n: usize) -> io::Result<Vec<std::net::TcpListener>> {
    let mut out: Vec<std::net::TcpListener> = Vec::with_capacity(n);
    for _ in 0..n.max(1) {
        let at = out.first().map_or(Ok(addr), std::net::TcpListener::local_addr)?;
        let socket = socket2::Socket::new(socket2::Domain::for_address(at), socket2::Type::STREAM, None)?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        socket.set_nonblocking(true)?;
        socket.bind(&at.into())?;
        socket.listen(1024)?;
        out.push(socket.into());
    }
    Ok(out)
}

/// Raises the soft open-file limit to the hard limit (containers often start with a soft
/// 1024) and returns the soft limit now in force; `None` when it cannot be read.
pub fn raise_fd_limit() -> Option<u64> {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => Some(limit),
        Err(e) => {
            tracing::warn!(error = %e, "cannot raise the open-file limit");
            rlimit::getrlimit(rlimit::Resource::NOFILE).ok().map(|(soft, _)| soft)
        }
    }
}

/// The routers that serve requests: one per thread, made by `make` when the thread serves
/// its first request.
struct Routers {
    make: Box<dyn Fn() -> Router + Send + Sync>,
    routers: thread_local::ThreadLocal<Router>,
}

impl Routers {
    /// The calling thread's router (a clone: the count of a router only this thread uses).
    fn here(&self) -> Router {
        self.routers.get_or(|| (self.make)()).clone()
    }
}

/// Serves the routers `app` makes (one per thread: a router made from
/// [`AppState::for_thread`](crate::http::AppState::for_thread)) on `listener`, its
/// connections counted against `cap` (shared with the process's other listeners), until
/// `shutdown` resolves, then closes the listener and gives open connections up to
/// `settings.shutdown_timeout` before closing them.
pub async fn serve(
    listener: TcpListener,
    app: impl Fn() -> Router + Send + Sync + 'static,
    settings: Settings,
    cap: Cap,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let routers = Arc::new(Routers { make: Box::new(app), routers: thread_local::ThreadLocal::new() });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(settings.header_read_timeout);
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
    let Cap { permits, reserve, open } = cap;
    let (close, closing) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut errors = AcceptErrors::default();
    tokio::pin!(shutdown);
    loop {
        // Finished connections are reaped here so the set holds only open ones.
        while connections.try_join_next().is_some() {}
        // A slot is taken once a client is accepted: at the cap that client (one descriptor
        // beyond the cap per listener) waits for room below, and the rest wait in the
        // kernel's backlog. Taken before accepting, a slot would sit idle in each listener
        // waiting for a client while the others are at the cap.
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    errors.failed(&e).await;
                    continue;
                }
            },
        };
        let slot = if let Ok(permit) = Arc::clone(&permits).try_acquire_owned() {
            Slot::Full(permit)
        } else {
            // At the cap with a client waiting: make room by closing the connection idle the
            // longest; when every connection is busy, probes still get in over the reserve.
            let made_room = Open::close_oldest_idle(&open);
            if made_room {
                crate::telemetry::connection_closed_for_room();
            }
            let probe = if made_room { None } else { Arc::clone(&reserve).try_acquire_owned().ok() };
            if let Some(permit) = probe {
                Slot::Probe(permit)
            } else {
                tokio::select! {
                    () = &mut shutdown => break,
                    Ok(permit) = Arc::clone(&permits).acquire_owned() => Slot::Full(permit),
                    Ok(permit) = Arc::clone(&reserve).acquire_owned(), if !made_room => Slot::Probe(permit),
                }
            }
        };
        let open = Arc::clone(&open);
        connections.spawn(connection(
            stream,
            Arc::clone(&routers),
            Arc::clone(&builder),
            settings,
            closing.clone(),
            slot,
            open,
        ));
    }
    drop(listener);
    close.send_replace(true);
    tracing::info!(
        connections = connections.len(),
        timeout_secs = settings.shutdown_timeout.as_secs(),
        "listener closed; waiting for open connections"
    );
    let all_closed = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(settings.shutdown_timeout, all_closed).await.is_err() {
        tracing::warn!(connections = connections.len(), "shutdown timeout reached; closing the remaining connections");
        connections.shutdown().await;
    }
    Ok(())
}

/// Accept errors that concern the whole process (out of file descriptors or memory)
/// pause accepting; one client's aborted handshake does not.
#[derive(Default)]
struct AcceptErrors {
    last_logged: Option<Instant>,
    suppressed: u64,
}

impl AcceptErrors {
    async fn failed(&mut self, e: &io::Error) {
        if matches!(
            e.kind(),
            io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted
        ) {
            tracing::debug!(error = %e, "accept failed for one connection");
            return;
        }
        crate::telemetry::accept_error();
        let now = Instant::now();
        if self.last_logged.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1)) {
            tracing::warn!(
                error = %e,
                suppressed = self.suppressed,
                backoff_ms = ACCEPT_BACKOFF.as_millis() as u64,
                "accept failed; pausing accepts (raise the open-file limit or lower http.max_connections)"
            );
            self.last_logged = Some(now);
            self.suppressed = 0;
        } else {
            self.suppressed += 1;
        }
        tokio::time::sleep(ACCEPT_BACKOFF).await;
    }
}

/// Serves one connection until it ends, is idle too long, is asked to make room for a new
/// client (at the cap, when it is the one idle the longest), or shutdown closes it. A
/// connection over the probes' reserve answers only `/healthz` and `/readyz`, once.
#[allow(clippy::too_many_arguments)] // the connection's parts, each used once
async fn connection(
    stream: TcpStream,
    routers: Arc<Routers>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    settings: Settings,
    mut closing: watch::Receiver<bool>,
    slot: Slot,
    open: Arc<Mutex<Open>>,
) {
    let _open = crate::telemetry::connection_opened();
    // Small responses (probes, metadata) should not wait for Nagle's algorithm.
    let _ = stream.set_nodelay(true);
    let probe_only = matches!(slot, Slot::Probe(_));
    let activity = Arc::new(Activity::new());
    let make_room = Arc::new(Notify::new());
    let _member = (!probe_only).then(|| Open::join(&open, Arc::clone(&activity), Arc::clone(&make_room)));
    let service = {
        let activity = Arc::clone(&activity);
        hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            let busy = activity.begin();
            let app = routers.here();
            if probe_only {
                request.extensions_mut().insert(ProbeOnly);
            }
            if let Some(problem) = HostProblem::of(&request) {
                request.extensions_mut().insert(problem);
            }
            async move {
                let mut response = app.oneshot(request).await?;
                if probe_only {
                    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                // The request stays in flight until its body is sent or abandoned.
                Ok::<_, std::convert::Infallible>(
                    response
                        .map(|body| crate::http::body::tracked(body, None, tracing::Span::none(), move |_| drop(busy))),
                )
            }
        })
    };
    let conn = builder.serve_connection(TokioIo::new(ProblemIo::new(stream)), service);
    tokio::pin!(conn);
    let mut shutting_down = false;
    let mut idle_close: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            ended = conn.as_mut() => {
                if let Err(e) = ended {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = activity.idle_expired(settings.header_read_timeout, settings.keep_alive), if idle_close.is_none() && !shutting_down => {
                tracing::debug!("closing an idle connection");
                conn.as_mut().graceful_shutdown();
                // A graceful close waits for the client; an idle one gets no longer than
                // it had to send its headers.
                idle_close = Some(tokio::time::Instant::now() + settings.header_read_timeout);
            }
            () = make_room.notified(), if idle_close.is_none() && !shutting_down => {
                tracing::debug!("closing the connection idle the longest to make room for a new one");
                conn.as_mut().graceful_shutdown();
                // Idle: nothing to finish. A request that arrived just now is answered first.
                let grace = if activity.idle_since().is_some() { MAKE_ROOM_GRACE } else { settings.header_read_timeout };
                idle_close = Some(tokio::time::Instant::now() + grace);
            }
            () = sleep_until_some(idle_close) => return,
            _ = closing.wait_for(|c| *c), if !shutting_down => {
                // serve() closes what is still open after the shutdown timeout.
                conn.as_mut().graceful_shutdown();
                shutting_down = true;
            }
        }
    }
}

async fn sleep_until_some(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
