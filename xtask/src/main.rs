//! zarrd's CI recipes, named: `cargo xtask fast` (formatting, clippy, the in-process tests:
//! what a developer runs before a commit, minutes on 2 cores), `cargo xtask full` (everything
//! CI runs; `.ci/run` is this tier), or any one step by its name (`cargo xtask downloads`);
//! `cargo xtask list` names them all. Each step is one bash command line run from the
//! repository root; the scripts it calls live in `.ci/` and share `.ci/lib.sh`.

use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// One step: its name, what it checks, the command, and whether it needs the storage
/// services (Garage S3 and nginx, started once before it and stopped when the run ends).
struct Step {
    name: &'static str,
    what: &'static str,
    run: &'static str,
    services: bool,
}

const fn step(name: &'static str, what: &'static str, run: &'static str) -> Step {
    Step { name, what, run, services: false }
}

/// The steps needing the release server take it from `target/release/zarrd` (the `release`
/// step builds it).
const STEPS: &[Step] = &[
    step(
        "toolchain",
        "cargo, rustfmt and clippy",
        "cargo --version && { rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy; } \
         && { rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt; }",
    ),
    step("fmt", "formatting", "cargo fmt --all --check"),
    step("install-tools", "the test tools (Garage, nginx, …) where missing", "bash .ci/install-tools.sh"),
    step("clippy", "lints, warnings as errors", "cargo clippy --locked --workspace --all-targets -- -D warnings"),
    step("unit", "the in-process tests (those over S3 and HTTP are left out)", "cargo test --locked"),
    Step {
        name: "test",
        what: "the whole test suite: in-process, over S3 and HTTP on loopback",
        run: "source \"${SERVICES_DIR:-target/ci-services}/env\" && cargo test --locked -- --include-ignored",
        services: true,
    },
    step("release", "the release build (the Dockerfile's build command)", "cargo build --release --locked"),
    step("schemathesis", "openapi.yaml against the running server", "bash .ci/schemathesis.sh target/release/zarrd"),
    step(
        "zarr-client",
        "a real Zarr client (zarr-python) through /zarr, and reading zarrd overviews pyramids",
        "bash .ci/zarr_client.sh target/release/zarrd",
    ),
    step(
        "compat",
        "real clients (zarr-python, TensorStore, xarray, zarrita.js) through /compat",
        "bash .ci/compat_clients.sh target/release/zarrd",
    ),
    step(
        "edr-clients",
        "EDR clients (OWSLib, edr-pydantic, covjson-pydantic, covjson-reader)",
        "bash .ci/edr_clients.sh target/release/zarrd",
    ),
    step(
        "downloads",
        "region downloads: NetCDF and GeoTIFF files opened by xarray, ncdump, GDAL, rasterio, rio-cogeo, pyproj",
        "bash .ci/downloads.sh target/release/zarrd",
    ),
    step(
        "browser",
        "the viewer in a real browser (chromium + puppeteer-core)",
        "bash .ci/browser.sh target/release/zarrd",
    ),
    step(
        "browser-zarrita",
        "zarrita.js in a real browser: /compat/v3 and sharded /zarr reads, cross-origin",
        "bash .ci/browser_zarrita.sh target/release/zarrd",
    ),
    step(
        "browser-ome",
        "ome-zarr.js in a real browser: OME-Zarr 0.4 and 0.5 through /zarr, /compat/v2 and /compat/v3",
        "bash .ci/browser_ome.sh target/release/zarrd",
    ),
    step("dockerfile", "Dockerfile lint", "bash .ci/lint-dockerfile.sh"),
    step(
        "k8s",
        "Kubernetes manifests (kubernetes-validate --strict) and the HAProxy recipe",
        "bash .ci/k8s-validate.sh && haproxy -c -q -f deploy/haproxy/haproxy.cfg && echo 'deploy/haproxy/haproxy.cfg: valid'",
    ),
    step(
        "fleet",
        "3 replicas behind deploy/nginx, one SIGTERMed and one SIGKILLed under load",
        "bash .ci/fleet.sh target/release/zarrd",
    ),
    step("docker", "docker build of the Dockerfile, run and stop the image", "bash .ci/docker.sh"),
];

/// The tiers: a name, what it is for, its steps in order.
const TIERS: &[(&str, &str, &[&str])] = &[
    ("fast", "before a commit: formatting, clippy, the in-process tests", &["toolchain", "fmt", "clippy", "unit"]),
    (
        "full",
        "everything CI runs (`bash .ci/run`)",
        &[
            "toolchain",
            "fmt",
            "install-tools",
            "clippy",
            "test",
            "release",
            "schemathesis",
            "zarr-client",
            "compat",
            "edr-clients",
            "downloads",
            "browser",
            "browser-zarrita",
            "browser-ome",
            "dockerfile",
            "k8s",
            "fleet",
            "docker",
        ],
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() || args.iter().any(|a| a == "list" || a == "-h" || a == "--help") {
        list();
        return if args.is_empty() { ExitCode::FAILURE } else { ExitCode::SUCCESS };
    }
    let mut steps = Vec::new();
    for arg in &args {
        match (TIERS.iter().find(|t| t.0 == arg), STEPS.iter().find(|s| s.name == arg)) {
            (Some((_, _, names)), _) => steps.extend(names.iter().map(|n| find(n))),
            (None, Some(step)) => steps.push(step),
            (None, None) => {
                eprintln!("xtask: no recipe `{arg}`\n");
                list();
                return ExitCode::FAILURE;
            }
        }
    }
    run(&steps)
}

fn find(name: &str) -> &'static Step {
    STEPS.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("a tier names `{name}`, which is no step"))
}

fn list() {
    println!("cargo xtask <recipe>…   (from the repository root)\n\ntiers:");
    for (name, what, steps) in TIERS {
        println!("  {name:<16} {what}\n  {:<16} = {}", "", steps.join(" "));
    }
    println!("\nsteps:");
    for s in STEPS {
        println!("  {:<16} {}", s.name, s.what);
    }
}

/// Runs `steps` in order, stopping at the first that fails; the services, started for the
/// first step that needs them, are stopped at the end whatever happened; a table of the
/// time each step took closes the run.
fn run(steps: &[&Step]) -> ExitCode {
    let start = Instant::now();
    let mut took: Vec<(&str, Duration, bool)> = Vec::new();
    let mut services = false;
    let mut ok = true;
    for step in steps {
        if step.services && !services {
            services = true;
            ok = shell(
                "services",
                "storage services (Garage S3, nginx)",
                "bash .ci/services.sh start",
                start,
                &mut took,
            );
            if !ok {
                break;
            }
        }
        ok = shell(step.name, step.what, step.run, start, &mut took);
        if !ok {
            break;
        }
    }
    if services {
        let _ = Command::new("bash").args(["-c", "bash .ci/services.sh stop >/dev/null 2>&1"]).status();
    }
    println!("\n=== {} ({}s)", if ok { "done" } else { "FAILED" }, start.elapsed().as_secs());
    for (name, time, passed) in &took {
        println!("  {name:<16} {:>6.0}s {}", time.as_secs_f64(), if *passed { "" } else { "FAILED" });
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// One command line through `bash -euo pipefail`, its header printed as `.ci/run` always
/// printed it.
fn shell(
    name: &'static str,
    what: &str,
    run: &str,
    start: Instant,
    took: &mut Vec<(&'static str, Duration, bool)>,
) -> bool {
    println!("\n=== {name}: {what} ({}s)", start.elapsed().as_secs());
    let began = Instant::now();
    let passed = Command::new("bash").args(["-euo", "pipefail", "-c", run]).status().is_ok_and(|s| s.success());
    took.push((name, began.elapsed(), passed));
    if !passed {
        eprintln!("xtask: step `{name}` failed: {run}");
    }
    passed
}
