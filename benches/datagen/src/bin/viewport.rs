//! A browser opening a map view: N requests at once, each on its own new connection, and
//! the time until the last response is complete. std only (no HTTP library), HTTP/1.1 with
//! `Connection: close`, so the body is everything after the header.
//!
//! `viewport HOST:PORT ROUNDS PATH...` prints per round
//! `VIEWPORT round=R n=N ok=N total_ms=… p50_ms=… p99_ms=… body_bytes=…`
//! where latencies are measured from the common start to each response's last byte.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// One GET: (status, body length, seconds since `start`).
fn get(addr: &str, path: &str, start: Instant) -> Result<(u16, usize, f64), Error> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
    let mut buf = Vec::with_capacity(300_000);
    stream.read_to_end(&mut buf)?;
    let secs = start.elapsed().as_secs_f64();
    let header_end = buf.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no header end")? + 4;
    let head = std::str::from_utf8(&buf[..header_end])?;
    let status: u16 = head.split(' ').nth(1).ok_or("no status")?.parse()?;
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    if chunked {
        return Err("unexpected chunked response".into());
    }
    Ok((status, buf.len() - header_end, secs))
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: viewport HOST:PORT ROUNDS PATH...".into());
    }
    let addr = args[1].clone();
    let rounds: usize = args[2].parse()?;
    let paths: Vec<String> = args[3..].to_vec();
    for round in 0..rounds {
        let barrier = Arc::new(Barrier::new(paths.len() + 1));
        let start = Arc::new(std::sync::OnceLock::<Instant>::new());
        let handles: Vec<_> = paths
            .iter()
            .map(|p| {
                let (addr, path, barrier, start) = (addr.clone(), p.clone(), barrier.clone(), start.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let t0 = *start.get_or_init(Instant::now);
                    get(&addr, &path, t0)
                })
            })
            .collect();
        barrier.wait();
        start.get_or_init(Instant::now);
        let mut lat = Vec::new();
        let (mut ok, mut bytes) = (0, 0);
        for h in handles {
            match h.join().map_err(|_| "thread panicked")? {
                Ok((status, len, secs)) => {
                    if status == 200 {
                        ok += 1;
                    } else {
                        eprintln!("viewport: status {status}");
                    }
                    bytes += len;
                    lat.push(secs * 1000.0);
                }
                Err(e) => eprintln!("viewport: {e}"),
            }
        }
        lat.sort_by(f64::total_cmp);
        let pct = |p: f64| lat.get(((lat.len() as f64 * p).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0);
        println!(
            "VIEWPORT round={round} n={} ok={ok} total_ms={:.2} p50_ms={:.2} p99_ms={:.2} body_bytes={bytes}",
            paths.len(),
            lat.last().copied().unwrap_or(0.0),
            pct(0.5),
            pct(0.99)
        );
    }
    Ok(())
}
