//! The zarrd command line: load the configuration, open the datasets, serve.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;
use zarrd::AppState;
use zarrd::catalog::Catalog;
use zarrd::config::{Config, Overrides};

/// mimalloc instead of glibc's malloc: per-request buffers (a 256 KiB tile, 2 MiB bands)
/// are reused from thread-local pages instead of being trimmed back to the kernel with
/// `madvise` and faulted in again on the next request, which was ≈ 10 % of a cold tile's
/// CPU (BENCHMARKS.md, "Close to the hardware").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "zarrd", version, about = "An HTTP server for Zarr v3 arrays")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the configured datasets.
    Serve {
        /// A TOML configuration file (default: the embedded config/default.toml).
        #[arg(long, env = "ZARRD_CONFIG")]
        config: Option<PathBuf>,
        /// Address to listen on, e.g. 0.0.0.0:8080.
        #[arg(long, env = "ZARRD_LISTEN")]
        listen: Option<std::net::SocketAddr>,
        /// A dataset as NAME=URL (local path, file://, s3://, gs://, az://, http(s)://); repeatable.
        #[arg(long = "dataset", value_name = "NAME=URL")]
        datasets: Vec<String>,
        /// Log format: text or json.
        #[arg(long, env = "ZARRD_LOG_FORMAT")]
        log_format: Option<String>,
    },
}

fn main() -> ExitCode {
    let Command::Serve { config, listen, datasets, log_format } = Cli::parse().command;
    let overrides = Overrides { listen, datasets, log_format };
    let config = match Config::load(config.as_deref(), std::env::vars(), &overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("zarrd: {e}");
            return ExitCode::from(2);
        }
    };
    // Logs go through a background writer so request handling never waits on stdout;
    // the guard flushes them at exit.
    let _log_guard = init_logging(&config);
    let catalog = match Catalog::from_config(&config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("zarrd: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zarrd: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(serve(AppState::new(catalog, config)));
    // A decode still running on the blocking pool must not hold the exit up: the shutdown
    // timeout has already passed.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zarrd: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(config: &Config) -> tracing_appender::non_blocking::WorkerGuard {
    let filter = EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new(&config.log.level));
    let (writer, guard) = tracing_appender::non_blocking(std::io::stdout());
    // Colour codes only for a person at a terminal: under docker, Kubernetes or systemd
    // stdout is a pipe or file and the codes would litter the collected logs. NO_COLOR
    // (no-color.org) turns them off at a terminal too.
    let ansi = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(ansi);
    if config.log.format == "json" {
        builder.json().flatten_event(true).init();
    } else {
        builder.init();
    }
    guard
}

async fn serve(state: AppState) -> std::io::Result<()> {
    let fd_limit = zarrd::server::raise_fd_limit().unwrap_or(1024);
    let settings = zarrd::server::Settings::new(&state.config.http, fd_limit);
    let listen = state.config.listen;
    let listener = tokio::net::TcpListener::bind(listen).await?;
    tracing::info!(
        %listen,
        datasets = state.config.datasets.len(),
        max_connections = settings.max_connections,
        fd_limit,
        "zarrd listening"
    );
    // Dataset health is checked in the background from the start, so /v1/datasets and
    // zarrd_dataset_up are current without any request waiting on storage.
    tokio::spawn(Arc::clone(&state.health).run(Arc::clone(&state.catalog)));
    let shutting_down = state.shutting_down.clone();
    let drain = Duration::from_secs(state.config.http.drain_secs);
    let shutdown = async move {
        shutdown_signal().await;
        // Fail readiness first so a load balancer stops routing; the listener keeps
        // accepting during the drain, then closes.
        shutting_down.store(true, Ordering::SeqCst);
        tracing::info!("shutting down: readiness failed, draining");
        tokio::time::sleep(drain).await;
    };
    zarrd::server::serve(listener, zarrd::app(state), settings, shutdown).await
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
