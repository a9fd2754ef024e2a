//! The zarrd command line: load the configuration, open the datasets, serve.

use std::future::Future;
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
use zarrd::http::server::{Cap, Settings};

/// mimalloc instead of glibc's malloc: per-request buffers (a 256 KiB tile, 2 MiB bands)
/// are reused from thread-local pages instead of being trimmed back to the kernel with
/// `madvise` and faulted in again on the next request, which was ≈ 10 % of a cold tile's
/// CPU (`docs/performance.md`, "Close to the hardware").
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
    /// Write an OME-NGFF 0.5 multiscale pyramid (sharded Zarr v3, zstd) of an array, for
    /// IIIF reduced sizes: configure it as the array's overview source with
    /// `datasets.NAME.overviews."PATH" = "URL"`.
    Overviews {
        /// The TOML configuration file whose dataset holds the array (default: the embedded
        /// config/default.toml).
        #[arg(long, env = "ZARRD_CONFIG")]
        config: Option<PathBuf>,
        /// The configured dataset holding the array.
        #[arg(long, value_name = "NAME")]
        dataset: String,
        /// The array's path in the dataset.
        #[arg(long, value_name = "PATH")]
        array: String,
        /// Where to write the pyramid: a local directory (path or file://, created if
        /// missing) or an s3://, gs:// or az:// URL (opened with the dataset's options).
        #[arg(long, value_name = "URL")]
        out: String,
        /// Inner chunk edge of the levels; levels stop at the first that fits one tile.
        #[arg(long, default_value_t = zarrd::images::iiif::TILE_SIZE, value_parser = clap::value_parser!(u64).range(1..=zarrd::images::overviews::MAX_TILE))]
        tile_size: u64,
    },
}

fn main() -> ExitCode {
    let (config, listen, datasets, log_format) = match Cli::parse().command {
        Command::Serve { config, listen, datasets, log_format } => (config, listen, datasets, log_format),
        Command::Overviews { config, dataset, array, out, tile_size } => {
            return overviews(config.as_deref(), &dataset, &array, &out, tile_size);
        }
    };
    let overrides = Overrides { listen, datasets, log_format };
    let config = match Config::load(config.as_deref(), std::env::vars(), &overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("zarrd: {e}");
            return ExitCode::from(2);
        }
    };
    // Logs are written out in batches by a background thread (`logbuf`), so request
    // handling never waits on stdout; the guard writes out the rest at exit.
    let _log_guard = match init_logging(&config) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("zarrd: cannot start the log writer: {e}");
            return ExitCode::FAILURE;
        }
    };
    let catalog = match Catalog::from_config(&config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("zarrd: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = zarrd_core::ops::cpu::start_pool() {
        eprintln!("zarrd: {e}");
        return ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zarrd: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let state = AppState::new(catalog, config);
    let served = if state.config.http.runtime == "per_core" {
        serve_per_core(&runtime, &state)
    } else {
        runtime.block_on(serve(state))
    };
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

/// `zarrd overviews`: reads the array through the read engine (under the configured memory
/// budget and chunk limit) and writes its pyramid to `out`.
fn overviews(config: Option<&std::path::Path>, dataset: &str, array: &str, out: &str, tile: u64) -> ExitCode {
    let run = || -> Result<zarrd::images::overviews::Summary, String> {
        let config = Config::load(config, std::env::vars(), &Overrides::default()).map_err(|e| e.to_string())?;
        // Progress (a line per level) on stderr; the summary goes to stdout.
        let filter = EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new(&config.log.level));
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).init();
        let catalog = Catalog::from_config(&config).map_err(|e| e.to_string())?;
        zarrd_core::ops::cpu::start_pool()?;
        let options = config.datasets.get(dataset).map(|d| d.options.clone()).unwrap_or_default();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?;
        runtime.block_on(async {
            let ds = &catalog.dataset(dataset).await.map_err(|e| e.to_string())?;
            let reader = catalog.array(ds, array).await.map_err(|e| e.to_string())?;
            let store = zarrd::images::overviews::open_output(out, (&format!("datasets.{dataset}.options"), &options))
                .map_err(|e| e.to_string())?;
            let options = zarrd::images::overviews::Options::with_tile(tile);
            zarrd::images::overviews::write(&reader, &store, array, options).await.map_err(|e| e.to_string())
        })
    };
    match run() {
        Ok(summary) => {
            for (k, shape) in summary.levels.iter().enumerate() {
                println!("level {k}: shape {shape:?}");
            }
            println!(
                "wrote {} levels ({} shards, {} bytes) to {out}; serve them with datasets.{dataset}.overviews.\"{array}\" = \"{out}\"",
                summary.levels.len(),
                summary.shards,
                summary.bytes
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zarrd overviews: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(config: &Config) -> std::io::Result<zarrd::telemetry::logbuf::Guard> {
    let filter = EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new(&config.log.level));
    let (writer, guard) = zarrd::telemetry::logbuf::spawn(std::io::stdout(), zarrd::telemetry::logbuf::MAX_BUFFERED)?;
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
    Ok(guard)
}

/// What serving starts with, in either runtime: the connection settings, the background
/// work (dataset health, the identity provider's keys) and the shutdown sequence to await.
fn prepare(state: &AppState) -> (Settings, impl Future<Output = ()> + use<>) {
    let fd_limit = zarrd::http::server::raise_fd_limit().unwrap_or(1024);
    let settings = Settings::new(&state.config.http, fd_limit);
    tracing::info!(fd_limit, max_connections = settings.max_connections, runtime = %state.config.http.runtime, "connection limits");
    // Dataset health is checked in the background from the start, so /v1/datasets and
    // zarrd_dataset_up are current without any request waiting on storage. The metrics
    // recorder is installed first: a check that ends before it (an unopened dataset fails
    // at once) would publish its gauges to no recorder.
    zarrd_core::ops::metrics::handle();
    tokio::spawn(Arc::clone(&state.health).run(Arc::clone(&state.catalog)));
    // The identity provider's keys are fetched now, so the first JWT does not wait for them
    // and a wrong JWKS URL shows in the log at once; a provider not up yet is retried with
    // a backoff of at most a few seconds until it answers.
    let auth = Arc::clone(&state.auth);
    tokio::spawn(async move { auth.warm_up().await });
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
    (settings, shutdown)
}

/// `http.runtime = "shared"`: one listener on the work-stealing runtime.
async fn serve(state: AppState) -> std::io::Result<()> {
    let (settings, shutdown) = prepare(&state);
    let listen = state.config.listen;
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let datasets = state.config.datasets.len();
    tracing::info!(%listen, datasets, max_connections = settings.max_connections, "zarrd listening");
    let cap = Cap::new(&settings);
    zarrd::http::server::serve(listener, move || zarrd::app(state.for_thread()), settings, cap, shutdown).await
}

/// `http.runtime = "per_core"`: one thread per core, each with a single-threaded runtime
/// serving its own `SO_REUSEPORT` listener; the shared runtime keeps the background work
/// and the shutdown sequence, then tells every thread to close.
fn serve_per_core(runtime: &tokio::runtime::Runtime, state: &AppState) -> std::io::Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let listen = state.config.listen;
    let listeners = zarrd::http::server::reuse_port_listeners(listen, cores)?;
    let (settings, shutdown) = runtime.block_on(async { prepare(state) });
    // One cap for all the listeners, whichever of them the kernel gives each client.
    let cap = Cap::new(&settings);
    let datasets = state.config.datasets.len();
    tracing::info!(%listen, datasets, cores, max_connections = settings.max_connections, "zarrd listening, a runtime per core");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut threads = Vec::with_capacity(cores);
    for (i, listener) in listeners.into_iter().enumerate() {
        let (state, mut stopped, cap) = (state.clone(), stopped.clone(), cap.clone());
        let serve_one = move || -> std::io::Result<()> {
            let core = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            core.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                let closed = async move {
                    let _ = stopped.wait_for(|s| *s).await;
                };
                zarrd::http::server::serve(listener, move || zarrd::app(state.for_thread()), settings, cap, closed)
                    .await
            })
        };
        threads.push(std::thread::Builder::new().name(format!("zarrd-core-{i}")).spawn(serve_one)?);
    }
    runtime.block_on(shutdown);
    stop.send_replace(true);
    for thread in threads {
        thread.join().map_err(|_| std::io::Error::other("a serving thread panicked"))??;
    }
    Ok(())
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
