//! The in-process reference for zarrd's large-slice benchmark: reads a region of an array
//! with zarrs (`retrieve_array_subset`, default codec options, so decoding runs on all
//! cores through rayon), once to warm up and then N timed repetitions.
//!
//! `zarrs-read STORE_DIR ARRAY_PATH R0:R1,C0:C1 N [--out FILE]`
//! prints one line per repetition and a summary line
//! `zarrs-read: median_s=… best_s=… median_MBps=… bytes=…` (MB = 10^6 bytes).
//! `--out` writes the bytes read (for a bit-for-bit comparison with zarrd's response); with
//! N = 0 only the warm-up read is done.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn parse_region(s: &str) -> Result<Vec<Range<u64>>, Error> {
    s.split(',')
        .map(|item| {
            let (a, b) = item.split_once(':').ok_or("region items are START:STOP")?;
            Ok(a.parse()?..b.parse()?)
        })
        .collect()
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        return Err("usage: zarrs-read STORE_DIR ARRAY_PATH R0:R1,C0:C1 N [--out FILE]".into());
    }
    let store = Arc::new(FilesystemStore::new(&args[1])?);
    let path = format!("/{}", args[2].trim_start_matches('/'));
    let array = Array::open(store, &path)?;
    let subset = ArraySubset::new_with_ranges(&parse_region(&args[3])?);
    let reps: usize = args[4].parse()?;
    let out = args.iter().position(|a| a == "--out").and_then(|i| args.get(i + 1));

    // Warm-up (page cache, allocator), also the bytes for --out.
    let first: ArrayBytes<'static> = array.retrieve_array_subset(&subset)?;
    let first = first.into_fixed()?;
    let bytes = first.len();
    if let Some(out) = out {
        std::fs::write(out, &first)?;
    }
    drop(first);

    let mut times = Vec::with_capacity(reps);
    for i in 0..reps {
        let t0 = Instant::now();
        let data: ArrayBytes<'static> = array.retrieve_array_subset(&subset)?;
        let secs = t0.elapsed().as_secs_f64();
        assert_eq!(data.size(), bytes);
        std::hint::black_box(&data);
        drop(data);
        println!("rep {i}: {secs:.4} s, {:.0} MB/s", bytes as f64 / secs / 1e6);
        times.push(secs);
    }
    if times.is_empty() {
        return Ok(());
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "zarrs-read: threads={} median_s={median:.4} best_s={:.4} median_MBps={:.1} bytes={bytes}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        times[0],
        bytes as f64 / median / 1e6
    );
    Ok(())
}
